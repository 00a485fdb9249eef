"""Lexical search scores a bounded set of candidates (setting lexical_candidates).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01

Applies sql/incremental/0018_search_at_scale.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
