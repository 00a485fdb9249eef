"""kgrag.version() defined at head by sql/idempotent/006_version.sql, no longer by the installer.

Revision ID: 0049
Revises: 0048
Create Date: 2026-12-06

Applies sql/incremental/0049_version_at_head.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0049"
down_revision = "0048"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
