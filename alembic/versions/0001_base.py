"""Base schema: tables, keys, indexes, row-level security and defaults.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

Applies sql/incremental/0001_base.sql (and 0001_base.down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0001"
down_revision = None
branch_labels = ("kgrag",)
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
