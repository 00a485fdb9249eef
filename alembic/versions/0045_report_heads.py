"""Report heads: the report vectors made of the old, longer head are made again at the next build.

Revision ID: 0045
Revises: 0044
Create Date: 2026-12-06

Applies sql/incremental/0045_report_heads.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0045"
down_revision = "0044"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
