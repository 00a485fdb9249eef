"""Answers a person reviews when they change, and the evidence decision of a relation.

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-05

Applies sql/incremental/0035_answer_review.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
