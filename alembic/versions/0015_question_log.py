"""The query log keeps the characters packed and, when a tenant allows it, the question text.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01

Applies sql/incremental/0015_question_log.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
