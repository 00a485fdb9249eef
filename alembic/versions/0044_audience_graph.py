"""The graph of an audience: what a document for groups says, as entities and relations for their holders alone.

Revision ID: 0044
Revises: 0043
Create Date: 2026-12-06

Applies sql/incremental/0044_audience_graph.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0044"
down_revision = "0043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
