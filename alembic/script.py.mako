"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}

Applies sql/incremental/${up_revision}_*.sql (and the .down.sql on downgrade). Write the DDL there,
not here: revisions load the files.
"""

from alembic import op

from pgkgrag.migrations import apply_revision

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}


def upgrade() -> None:
    apply_revision(op.get_bind(), revision)


def downgrade() -> None:
    apply_revision(op.get_bind(), revision, down=True)
