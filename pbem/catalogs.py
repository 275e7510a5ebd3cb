"""The compiled translation catalogs: each ``<lang>/LC_MESSAGES/messages.po`` becomes
the ``messages.mo`` that Flask-Babel reads. Without it a language silently falls back to
English, so the wheel's build compiles them (setup.py), and a checkout compiles any that
is missing or older than its ``.po`` when the app starts, as ``make translations`` does.

Only the standard library and Babel: setup.py runs this file before pbem's requirements
are installed.
"""

from __future__ import annotations

import os
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

CATALOG = Path("LC_MESSAGES") / "messages"


def compile_catalog(po: Path, mo: Path, lang: str) -> None:
    """Write ``mo`` from ``po`` (fuzzy entries left out, as ``pybabel compile`` does),
    atomically: web workers starting together may compile the same catalog."""
    with po.open("rb") as fh:
        catalog = read_po(fh, locale=lang)
    mo.parent.mkdir(parents=True, exist_ok=True)
    partial = mo.with_name(f".{mo.name}.{os.getpid()}")
    with partial.open("wb") as fh:
        write_mo(fh, catalog)
    os.replace(partial, mo)


def compile_stale(folder: Path, into: Path | None = None) -> list[str]:
    """Compile every catalog under ``folder`` whose ``.mo`` (under ``into``, by default
    beside the ``.po``) is missing or older than its ``.po``; returns their languages."""
    done = []
    for po in sorted(folder.glob(f"*/{CATALOG}.po")):
        lang = po.relative_to(folder).parts[0]
        mo = (into or folder) / lang / CATALOG.with_suffix(".mo")
        if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
            compile_catalog(po, mo, lang)
            done.append(lang)
    return done


def missing(folder: Path, languages: list[str]) -> list[str]:
    """The languages among ``languages`` without a compiled catalog under ``folder``."""
    return [lang for lang in languages
            if not (folder / lang / CATALOG.with_suffix(".mo")).is_file()]
