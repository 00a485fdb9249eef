"""The languages of a tenant's documents read from an index: lexical search no longer scans every document.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-02

Applies sql/incremental/0029_document_lang_index.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
