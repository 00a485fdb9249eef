"""No stored edge ranks: a batch writes the edges it changes, not the ranks below them.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-02

Applies sql/incremental/0028_no_edge_ranks.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
