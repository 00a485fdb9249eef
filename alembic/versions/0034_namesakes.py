"""Namesakes kept apart: the name key of a source, the merge and split decisions, the namesake settings.

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-04

Applies sql/incremental/0034_namesakes.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
