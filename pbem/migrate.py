"""Alembic, driven from code: ``upgrade`` to head and ``check`` for drift."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from pbem import MIGRATIONS


def alembic_config(url: str) -> Config:
    """Alembic's settings, from code (alembic.ini at the top of a checkout is for the
    ``alembic`` command alone; an installed pbem has none)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    from pbem.db import make_engine

    engine = make_engine(url)  # creates the SQLite folder and sets WAL
    with engine.connect():
        pass
    engine.dispose()
    command.upgrade(alembic_config(url), revision)


def check(url: str) -> None:
    """Raise ``alembic.util.CommandError`` if the models differ from the migrations."""
    command.check(alembic_config(url))
