"""Alembic environment. Runs on a connection handed over by ``signoff.migrate``."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import signoff.models  # noqa: F401  (registers every table)

target_metadata = SQLModel.metadata
connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("Run migrations with `signoff migrate`, which supplies the connection.")

context.configure(
    connection=connection,
    target_metadata=target_metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
