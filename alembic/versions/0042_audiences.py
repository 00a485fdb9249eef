"""Audiences inside a tenant: documents for groups, seen only by the sessions that hold one of them.

Revision ID: 0042
Revises: 0041
Create Date: 2026-12-06

Applies sql/incremental/0042_audiences.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
