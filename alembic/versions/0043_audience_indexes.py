"""Audience indexes: a session that sees a few of the chunks finds them without walking the rest.

Revision ID: 0043
Revises: 0042
Create Date: 2026-12-06

Applies sql/incremental/0043_audience_indexes.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0043"
down_revision = "0042"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
