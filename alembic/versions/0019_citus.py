"""Tenant checks, policies and foreign keys in forms a Citus cluster runs (kgrag.distribute).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01

Applies sql/incremental/0019_citus.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
