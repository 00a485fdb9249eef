"""Answers: their log (calls, tokens, context, citations per route) and their defaults.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01

Applies sql/incremental/0014_answers.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
