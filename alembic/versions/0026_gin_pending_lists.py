"""The GIN indexes take new entries at once: no pending list for every search to read.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-02

Applies sql/incremental/0026_gin_pending_lists.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
