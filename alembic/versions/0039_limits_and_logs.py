"""Limits a tenant cannot lift, and a query log a tenant cannot erase or flood.

Revision ID: 0039
Revises: 0038
Create Date: 2026-12-05

Applies sql/incremental/0039_limits_and_logs.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
