"""An edge's stored rank without an index of its own: rank shifts become heap-only updates.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02

Applies sql/incremental/0021_edge_rank_index.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
