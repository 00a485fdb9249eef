"""An index behind every foreign key (deletes no longer scan the referencing tables).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30

Applies sql/incremental/0008_foreign_key_indexes.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
