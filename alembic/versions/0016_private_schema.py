"""The private helpers move to schema kgrag_private: the kgrag schema lists the public API only.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01

Applies sql/incremental/0016_private_schema.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
