"""A tenant's calls delegated to the worker holding its shards on Citus: the logs join the graph's co-location group.

Revision ID: 0040
Revises: 0039
Create Date: 2026-12-05

Applies sql/incremental/0040_delegated_calls.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
