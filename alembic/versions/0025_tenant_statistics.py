"""The planner estimates every tenant as a share of the rows: tenant_id keeps a statistics target of 1.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-02

Applies sql/incremental/0025_tenant_statistics.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
