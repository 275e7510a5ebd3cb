"""Alembic environment: the URL comes from the caller (pbem.migrate) or PBEM_DATABASE_URL."""

from __future__ import annotations

import os
from typing import Any, Literal

from alembic import context
from sqlalchemy import engine_from_config, pool

from pbem import models
from pbem.kinds import EnumText

config = context.config
target_metadata = models.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    env = os.environ.get("PBEM_DATABASE_URL")
    if env:
        return env
    from pbem import create_app

    return create_app().config["DATABASE_URL"]


def include_name(name, type_, parent_names) -> bool:
    return not (type_ == "table" and name == "apscheduler_jobs")


def render_item(type_: str, obj: Any, autogen_context: Any) -> str | Literal[False]:
    """A column of a ``StrEnum`` is written as the plain text column it is in the
    database (a revision must not import the enums it would outlive)."""
    if type_ == "type" and isinstance(obj, EnumText):
        return f"sqlmodel.sql.sqltypes.AutoString(length={obj.impl_instance.length})"
    return False


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True,
                      render_as_batch=True, include_name=include_name, render_item=render_item)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = config.attributes.get("connection")
    if connectable is None:
        connectable = engine_from_config({"sqlalchemy.url": _url()}, prefix="sqlalchemy.",
                                         poolclass=pool.NullPool)
        with connectable.connect() as connection:
            _run(connection)
    else:
        _run(connectable)


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=True, include_name=include_name,
                      render_item=render_item, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
