"""A game is a package on both sides: everything particular to one game lives in
``engine/<game>/`` and ``templates/games/<game>/``; the shared templates, the service
layer and the mail code name no game and none of a game's terms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.core import SetupError
from engine.registry import Listing, games, listing, listings, register
from pbem.i18n import LANGUAGES

ROOT = Path(__file__).resolve().parents[2]
# Terms of the games (English and German): none may appear outside a game's own folder.
GAME_TERMS = re.compile(
    r"food|teeth|tooth|conch|\bwood|brick|\bgold\b|\btools?\b|\bfire\b|cavem|tribe|hunt"
    r"|civiliz|agricult|\bpool\b|stone|nahrung|zähne|muschel|holz|werkzeug|feuer|stamm"
    r"|höhle|jagd|zivilisation|ackerbau", re.IGNORECASE)
PARTS = ("narration.jinja", "board.txt", "board.html", "page_board.html", "form.html")


def shared_templates() -> list[Path]:
    return [p for p in (ROOT / "templates").rglob("*")
            if p.is_file() and "games" not in p.relative_to(ROOT / "templates").parts]


def test_no_shared_template_names_a_game_or_its_terms() -> None:
    found = []
    for path in shared_templates():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if GAME_TERMS.search(line) or any(name in line for name in listings()):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}")
    assert not found, "\n".join(found)


def test_the_checker_sees_a_game_term() -> None:
    assert GAME_TERMS.search('{{ _("Food") }}') and GAME_TERMS.search("Holz")
    assert not GAME_TERMS.search('{{ _("It is your turn to %(what)s.") }}')


def test_the_server_code_names_no_game_module() -> None:
    """Games are found through the registry, never imported by the server."""
    for path in (ROOT / "pbem").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"engine\.(cavemen|stoneage)|from engine import", text), path


@pytest.mark.parametrize("name", sorted(listings()))
def test_every_game_has_its_template_package(name: str) -> None:
    folder = ROOT / "templates" / "games" / name
    for part in PARTS:
        assert (folder / part).is_file(), f"{name} lacks templates/games/{name}/{part}"
    narration = (folder / "narration.jinja").read_text(encoding="utf-8")
    for macro in ("short", "about", "result", "event", "action", "choice", "prompt",
                  "refusal"):
        assert re.search(rf"{{% macro {macro}\(", narration), f"{name}: no macro {macro}"
    assert name == games()[name].NAME
    assert all(listings()[name].titles.get(lang) for lang in LANGUAGES), "a title per language"


def test_every_part_but_the_narration_has_a_default() -> None:
    """A game may leave out any part but its narration: templates/games/default/ has it
    (one rules page for every language)."""
    folder = ROOT / "templates" / "games" / "default"
    for part in (*PARTS[1:], "standings.txt", "standings.html", "rules.html",
                 "rules_cards.html"):
        assert (folder / part).is_file(), part
    assert not (folder / "narration.jinja").exists()


def test_a_listing_is_checked_when_registered() -> None:
    """A name that cannot be a template folder or a listing without an English title is
    refused; registering again replaces a listing in its place; unknown names are a
    SetupError, not a KeyError."""
    with pytest.raises(SetupError):
        register(Listing("../x", "engine.cavemen", {"en": "X"}))
    with pytest.raises(SetupError):
        register(Listing("nogame", "engine.cavemen", {"de": "X"}))
    with pytest.raises(SetupError):
        listing("nogame")
    order = list(listings())
    first = listings()[order[0]]
    register(first)
    assert list(listings()) == order
