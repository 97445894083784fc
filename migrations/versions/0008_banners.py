"""Dump banners interned: `snapshots.header` (the banner text, repeated by every compilation of the
same pipeline) becomes `snapshots.banner_pk` into `banners`, one row per distinct text.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "banners",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("pk"),
    )
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("banner_pk", sa.Integer(), nullable=True))
    op.execute(sa.text("INSERT INTO banners (text) SELECT DISTINCT header FROM snapshots"))
    op.execute(sa.text("UPDATE snapshots SET banner_pk = (SELECT pk FROM banners WHERE banners.text = snapshots.header)"))
    with op.batch_alter_table("snapshots") as batch:
        batch.alter_column("banner_pk", existing_type=sa.Integer(), nullable=False)
        batch.create_foreign_key("snapshots_banner_pk_fkey", "banners", ["banner_pk"], ["pk"])
        batch.drop_column("header")


def downgrade() -> None:
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("header", sa.Text(), nullable=True))
    op.execute(sa.text("UPDATE snapshots SET header = (SELECT text FROM banners WHERE banners.pk = snapshots.banner_pk)"))
    with op.batch_alter_table("snapshots") as batch:
        batch.alter_column("header", existing_type=sa.Text(), nullable=False)
        if op.get_bind().dialect.name != "sqlite":  # SQLite's copy of the table drops it with its column
            batch.drop_constraint("snapshots_banner_pk_fkey", type_="foreignkey")
        batch.drop_column("banner_pk")
    op.drop_table("banners")
