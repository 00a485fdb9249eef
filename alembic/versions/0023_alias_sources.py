"""An entity's names once each, the documents that gave them in kgrag.alias_source.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02

Applies sql/incremental/0023_alias_sources.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
