"""Search: the query log, router marker rules (English and Portuguese) and search defaults.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

Applies sql/incremental/0004_search.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
