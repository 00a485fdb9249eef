"""Walks hold relations at a time and above a confidence: the index of dated relations, the setting walk_min_confidence.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-04

Applies sql/incremental/0032_current_relations.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
