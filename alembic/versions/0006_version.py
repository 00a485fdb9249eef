"""kgrag.version(): the schema revision, readable from SQL.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

Applies sql/incremental/0006_version.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
