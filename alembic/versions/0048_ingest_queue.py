"""The ingestion queue: documents submitted with one SQL call, ingested by pgkgrag worker.

Revision ID: 0048
Revises: 0047
Create Date: 2026-12-06

Applies sql/incremental/0048_ingest_queue.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0048"
down_revision = "0047"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
