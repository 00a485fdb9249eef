"""People check and correct the graph: the role kgrag_curator, the table of decisions, the review settings.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-04

Applies sql/incremental/0033_curation.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
