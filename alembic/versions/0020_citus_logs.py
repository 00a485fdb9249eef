"""On a Citus cluster, the logs (written as kgrag_logger) apart from the graph's co-location group.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02

Applies sql/incremental/0020_citus_logs.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
