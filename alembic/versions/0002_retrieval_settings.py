"""Retrieval settings: defaults for vector search, traversal and entity linking.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

Applies sql/incremental/0002_retrieval_settings.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
