"""The binary-quantized index codes each vector less its embedder's centre.

Revision ID: 0038
Revises: 0037
Create Date: 2026-12-05

Applies sql/incremental/0038_centred_quantization.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
