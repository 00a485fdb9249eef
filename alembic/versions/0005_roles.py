"""Roles: kgrag_reader (search) and kgrag_writer (ingestion), without ownership or BYPASSRLS.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

Applies sql/incremental/0005_roles.sql (and its .down.sql on downgrade).
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
