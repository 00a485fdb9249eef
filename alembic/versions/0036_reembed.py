"""A tenant moves to another embedder; tenants of several models share a database.

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-05

Applies sql/incremental/0036_reembed.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
