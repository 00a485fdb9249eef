"""Settings of Personalized PageRank and of the local route's graph ranking; edge ranks bounded to the strongest edges.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01

Applies sql/incremental/0017_pagerank.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
