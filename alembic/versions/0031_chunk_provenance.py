"""Where a chunk stands in its source (page, headings) and the limits of the readers of files.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-04

Applies sql/incremental/0031_chunk_provenance.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
