"""Gunicorn's settings for a server started in this folder: gunicorn reads
``./gunicorn.conf.py`` by itself, so ``gunicorn 'pbem:create_app()'`` run here writes an
access log with every link token as ``<token>``. Started anywhere else, pass
``--config python:pbem.gunicorn_conf`` (these same settings)."""

from pbem.gunicorn_conf import accesslog, logger_class  # noqa: F401
