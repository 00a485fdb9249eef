"""The vector index chosen per dimension: halfvec HNSW up to 4,000 dimensions, binary-quantized above.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02

Applies sql/incremental/0024_vector_index.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
