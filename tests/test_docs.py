"""The README and docs/ name real files: every path they quote in backticks exists, so
the map of the code cannot drift from the code unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP = ("engine/", "pbem/", "templates/", "tests/", "migrations/", "bench/", "docs/", ".ci/",
       "deploy/")
QUOTED = re.compile(r"`([A-Za-z0-9_./-]+)`")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def named_paths(text: str) -> list[str]:
    """Quoted paths under the top folders (placeholders like ``<game>`` are not paths)."""
    return [m for m in QUOTED.findall(text) if m.startswith(TOP)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_document_names_exists(doc: Path) -> None:
    missing = [p for p in named_paths(doc.read_text(encoding="utf-8"))
               if not (ROOT / p.rstrip("/")).exists()]
    assert missing == [], f"{doc.name} names paths that do not exist"


def test_the_check_finds_paths() -> None:
    assert named_paths("see `pbem/policy.py` and `engine/`, not `make test`") == [
        "pbem/policy.py", "engine/"]
