"""Walkable co-occurrence: indexes of the denied and the dated relations (a walk asks for them).

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
