"""Walkable co-occurrence: an index of the denied relations, so a walk knows in one probe whether any may hold a co-occurrence back.

Revision ID: 0046
Revises: 0045
Create Date: 2026-12-06

Applies sql/incremental/0046_walkable_cooccurrence.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0046"
down_revision = "0045"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
