"""kgrag.fold(): plain ASCII text is only lower-cased (same results, no Unicode normalization).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

Applies sql/incremental/0007_ascii_fold.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
