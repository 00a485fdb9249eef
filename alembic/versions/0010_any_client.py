"""Search from any client: zero vectors refused everywhere, the tenants listed past the tenant policy.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

Applies sql/incremental/0010_any_client.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
