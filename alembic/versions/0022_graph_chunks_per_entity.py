"""The local route's graph list ranks a bounded number of chunks per reached entity.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02

Applies sql/incremental/0022_graph_chunks_per_entity.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
