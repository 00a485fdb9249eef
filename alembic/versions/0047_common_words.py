"""Common words: a one-word name the collection also writes as a plain lowercase word is marked.

Revision ID: 0047
Revises: 0046
Create Date: 2026-12-06

Applies sql/incremental/0047_common_words.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0047"
down_revision = "0046"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
