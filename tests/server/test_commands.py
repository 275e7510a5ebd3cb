"""Typed commands (pbem/commands.py): every legal action, written as the commands list of
an email writes it, in English and German, reads back as exactly that action; names and
prefixes work; nothing a player left out is ever filled in."""

from __future__ import annotations

import random

import pytest

from engine.core import Action, AmbiguousAction, EngineError, IncompleteAction
from engine.registry import get_game
from pbem import localize
from pbem.commands import command_list, read_command, spoken_action


def positions(game: str, seed: int, limit: int = 150):
    mod = get_game(game)
    state = mod.setup(["A", "B", "C"], seed)
    rng = random.Random(seed)
    for _ in range(limit):
        pending = mod.pending(state)
        if not pending:
            return
        yield mod, state, pending[0].seat
        state, _ = mod.apply(state, pending[0].seat,
                             mod.BOTS["heuristic"](state, pending[0].seat, rng))


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_listed_command_reads_back_as_its_action(game, lang):
    for mod, state, seat in positions(game, 3):
        card = localize.lookup(mod, state, localize.translation_for(mod, state, lang))
        for action in mod.legal_actions(state, seat):
            assert read_command(mod, state, seat, spoken_action(action, card), lang) == action


def find(game: str, test):
    for mod, state, seat in positions(game, 7, 400):
        found = test(mod, state, seat)
        if found:
            return mod, state, seat, found
    raise AssertionError("no such position")


def test_a_card_by_the_last_word_of_its_name_and_a_prefix():
    def hunt(mod, state, seat):
        hunts = [a for a in mod.legal_actions(state, seat) if a.kind == "hunt"]
        last = [mod.card_info(state, a.get("card"))["name"].lower().split()[-1]
                for a in hunts]
        return [(a, w) for a, w in zip(hunts, last, strict=True) if last.count(w) == 1
                and len(w) >= 4 and len(mod.card_info(state, a.get("card"))["name"].split()) > 1]

    mod, state, seat, found = find("cavemen", hunt)
    action, last = found[0]
    assert read_command(mod, state, seat, f"HUN {last[:4]}", "en") == action


def test_a_payment_left_out_is_never_filled_in():
    def recruit(mod, state, seat):
        return [a for a in mod.legal_actions(state, seat) if a.kind == "recruit"]

    mod, state, seat, recruits = find("cavemen", recruit)
    name = mod.card_info(state, recruits[0].get("card"))["name"]
    with pytest.raises(IncompleteAction) as caught:
        read_command(mod, state, seat, f"recruit {name}", "en")
    assert caught.value.data["candidates"]


def test_words_in_another_order_and_german_names():
    def place(mod, state, seat):
        return Action.of("place", at="forest", count=2) in mod.legal_actions(state, seat)

    mod, state, seat, _ = find("stoneage", place)
    assert read_command(mod, state, seat, "place 2 forest") == Action.of("place", at="forest",
                                                                         count=2)
    assert read_command(mod, state, seat, "Place 2 Wald", "de") == Action.of(
        "place", at="forest", count=2)


@pytest.mark.parametrize("text", ["", "x" * 300, "place", "nonsense words"])
def test_what_is_no_command_is_refused(text):
    mod, state, seat = next(positions("stoneage", 7))
    with pytest.raises(EngineError):
        read_command(mod, state, seat, text)


def test_a_word_that_names_several_things_is_ambiguous():
    mod, state, seat = next(positions("stoneage", 7))
    with pytest.raises(AmbiguousAction):
        read_command(mod, state, seat, "place 1 buil")


def test_a_long_list_is_said_in_short():
    mod, state, seat = next(positions("stoneage", 7))
    (line,) = command_list(mod, state, seat)
    assert line.startswith("place (hunt | forest") and line.endswith("(1 | 2 | 3 | 4 | 5)")
