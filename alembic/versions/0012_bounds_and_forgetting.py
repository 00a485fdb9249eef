"""Every caller bounded (limits as settings) and a deleted document forgotten (entity sources, the cache).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

Applies sql/incremental/0012_bounds_and_forgetting.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
