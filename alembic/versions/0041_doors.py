"""Every door a tenant's role holds, bounded by the database: decisions through the curation functions
only, settings typed and bounded when written, no question hash in the logs.

Revision ID: 0041
Revises: 0040
Create Date: 2026-12-06

Applies sql/incremental/0041_doors.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
