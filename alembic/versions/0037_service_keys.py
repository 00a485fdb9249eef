"""API keys checked by the database, and a query log that explains a past answer.

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-05

Applies sql/incremental/0037_service_keys.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
