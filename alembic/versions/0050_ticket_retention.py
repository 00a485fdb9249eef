"""kgrag.purge() deletes the settled tickets of the ingestion queue past ingest_ticket_days.

Revision ID: 0050
Revises: 0049
Create Date: 2026-12-06

Applies sql/incremental/0050_ticket_retention.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0050"
down_revision = "0049"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
