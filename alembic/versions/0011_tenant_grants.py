"""Tenants bound to roles and sealed to their transaction; the defaults are the owner's; a definer writes the log.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

Applies sql/incremental/0011_tenant_grants.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
