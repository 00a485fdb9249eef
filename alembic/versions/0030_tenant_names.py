"""What a tenant's name may be, said once: kgrag_private.is_tenant_name, which use_tenant and grant_tenant call.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-04

Applies sql/incremental/0030_tenant_names.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
