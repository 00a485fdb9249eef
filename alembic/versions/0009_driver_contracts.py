"""Driver contracts in SQL: the default embedder and language codes as settings, embedded_hash dropped.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

Applies sql/incremental/0009_driver_contracts.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
