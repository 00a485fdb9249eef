"""Per tenant, the commonest trigrams of its names, which entity linking probes around.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-02

Applies sql/incremental/0027_alias_trigram_stats.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
