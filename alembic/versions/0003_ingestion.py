"""Ingestion: failed documents, the LLM extraction cache, chunking and community defaults.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

Applies sql/incremental/0003_ingestion.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
