"""Degrade, don't fail: the query log marks fallbacks; settings for neighbouring chunks and the reranker.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01

Applies sql/incremental/0013_degrade.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
