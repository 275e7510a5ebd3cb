"""Typed commands (pbem/commands.py): every command an email lists, in English and in
German, is legal now and reads back as exactly the move it was listed for; a line that
groups moves groups exactly legal ones; the reader's words, English words, printed names
and prefixes work; nothing a player left out is ever filled in; a refused command gets
the nearest legal ones."""

from __future__ import annotations

import random

import pytest

from engine.core import (
    Action,
    AmbiguousAction,
    EngineError,
    IllegalAction,
    IncompleteAction,
    format_action,
    listed,
)
from engine.registry import get_game
from pbem.commands import (
    MAX_LISTED,
    Speech,
    command_list,
    expand_line,
    listed_commands,
    looks_like_a_command,
    nearest_commands,
    ranked_actions,
    read_command,
    refusal_candidates,
)

KINDS = {"stoneage": {"place", "order", "tools", "card", "build", "pick", "feed"},
         "cavemen": {"bid", "act", "starve", "casualty", "discard"}}


def positions(game: str, seed: int, limit: int = 150, players: int = 3, bot: str = "heuristic"):
    """Every open decision of a seeded playout: (module, state, seat, kind)."""
    mod = get_game(game)
    state = mod.setup(["A", "B", "C", "D"][:players], seed)
    rng = random.Random(seed)
    for _ in range(limit):
        pending = mod.pending(state)
        if not pending:
            return
        for d in pending:
            yield mod, state, d.seat, d.kind
        seat = pending[0].seat
        state, _ = mod.apply(state, seat, mod.BOTS[bot](state, seat, rng))


def playouts(game: str):
    """Whole games, by a random and a heuristic bot, with 3 and 4 players."""
    yield from positions(game, 0, 2000, 3, "heuristic")
    yield from positions(game, 1, 2000, 4, "random")


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_listed_command_reads_back_as_exactly_its_move(game, lang):
    kinds = set()
    for mod, state, seat, kind in playouts(game):
        kinds.add(kind)
        legal = mod.legal_actions(state, seat)
        listing = listed_commands(mod, state, seat, lang)
        assert 0 < len(listing.lines) <= MAX_LISTED
        shown = [a for moves in listing.moves for a in moves]
        assert len(set(shown)) == len(shown) == len(legal) - listing.more
        for line, moves in zip(listing.lines, listing.moves, strict=True):
            said = expand_line(line)
            assert len(said) == len(moves), line  # a line offers nothing more than its moves
            for text, action in zip(said, moves, strict=True):
                assert listed(action, legal)
                assert read_command(mod, state, seat, text, lang) == action, (kind, text)
                assert (text.split()[0] == action.kind) is (lang == "en")  # the verb
    assert kinds == KINDS[game]  # every kind of decision was listed and read


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_legal_move_in_the_readers_words_reads_back_as_itself(game, lang):
    for mod, state, seat, _ in positions(game, 3, 120):
        speech = Speech(mod, state, lang)
        for action in mod.legal_actions(state, seat):
            assert read_command(mod, state, seat, speech.say_action(action), lang) == action


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_the_notation_reads_for_a_german_reader_too(game):
    for mod, state, seat, _ in positions(game, 5, 80):
        for action in mod.legal_actions(state, seat)[:12]:
            assert read_command(mod, state, seat, format_action(action), "de") == action


def find(game: str, test, seed: int = 7, players: int = 3):
    for mod, state, seat, kind in positions(game, seed, 600, players):
        found = test(mod, state, seat, kind)
        if found:
            return mod, state, seat, found
    raise AssertionError("no such position")


def test_a_german_email_lists_german_verbs_and_words():
    mod, state, seat, _ = find("stoneage", lambda m, s, seat, k: k == "place")
    english, german = command_list(mod, state, seat, "en"), command_list(mod, state, seat, "de")
    assert english[0] == "place hunt 1 | 2 | 3 | 4 | 5"
    assert german[0] == "setze jagd 1 | 2 | 3 | 4 | 5"
    assert "setze wald 1 | 2 | 3 | 4 | 5" in german and "setze hütte 2" in german
    assert all(line.split()[0] == "setze" for line in german)


def test_a_line_groups_only_the_counts_a_place_takes():
    def crowded(mod, state, seat, kind):  # some place takes fewer people than are at home
        if kind != "place":
            return None
        counts = {}
        for a in mod.legal_actions(state, seat):
            counts.setdefault(a.get("at"), []).append(a.get("count"))
        return counts if len({len(c) for c in counts.values()}) > 2 else None

    mod, state, seat, counts = find("stoneage", crowded, players=4)
    lines = command_list(mod, state, seat, "en")
    for at, numbers in counts.items():
        line = next(x for x in lines if x.split()[1] == at)
        assert line == f"place {at} " + " | ".join(str(n) for n in numbers)
    assert "place building1 1" in lines


def test_english_words_german_words_names_and_prefixes_all_read():
    def place(mod, state, seat, kind):
        legal = mod.legal_actions(state, seat)
        return (Action.of("place", at="forest", count=2) in legal
                and Action.of("place", at="hut", count=2) in legal)

    mod, state, seat, _ = find("stoneage", place)
    forest2 = Action.of("place", at="forest", count=2)
    for text in ["place 2 forest", "Place 2 Wald", "setze wald 2", "SETZE 2 WALD",
                 "setz wald 2", "place wald 2", "setze forest 2"]:
        assert read_command(mod, state, seat, text, "de") == forest2, text
    hut = Action.of("place", at="hut", count=2)
    for text in ["setze hütte 2", "setze huette 2", "setze hutte 2", "setze hu\u0308tte 2"]:
        assert read_command(mod, state, seat, text, "de") == hut, text


def test_an_english_reader_is_not_read_in_german():
    mod, state, seat, _ = find("stoneage", lambda m, s, seat, k: k == "place")
    with pytest.raises(EngineError):
        read_command(mod, state, seat, "setze wald 2", "en")


@pytest.mark.parametrize(("text", "command"), [
    ("bid 2", True), ("biete 2", True), ("biet 2", True), ("Biete", True), ("passe", True),
    ("Bitte warten", False), ("Wir sollten reden", False), ("Er hat recht", False),
    ("Passt schon", False), ("bi", False), ("biet", True), ("Ja klar", False)])
def test_a_german_sentence_is_not_taken_for_a_command(text, command):
    mod, state, seat, _ = find("cavemen", lambda m, s, seat, k: k == "bid")
    assert looks_like_a_command(mod, state, text, "de") is command


def test_a_card_by_the_last_word_of_its_name_and_a_prefix():
    def hunt(mod, state, seat, kind):
        hunts = [a for a in mod.legal_actions(state, seat) if a.kind == "hunt"]
        last = [mod.card_info(state, a.get("card"))["name"].lower().split()[-1]
                for a in hunts]
        return [(a, w) for a, w in zip(hunts, last, strict=True) if last.count(w) == 1
                and len(w) >= 4 and len(mod.card_info(state, a.get("card"))["name"].split()) > 1]

    mod, state, seat, found = find("cavemen", hunt)
    action, last = found[0]
    assert read_command(mod, state, seat, f"HUN {last[:4]}", "en") == action
    assert read_command(mod, state, seat, f"jage {last[:4]}", "de") == action


def test_a_payment_left_out_is_never_filled_in():
    def recruit(mod, state, seat, kind):
        return [a for a in mod.legal_actions(state, seat) if a.kind == "recruit"]

    mod, state, seat, recruits = find("cavemen", recruit)
    name = mod.card_info(state, recruits[0].get("card"))["name"]
    for text, lang in ((f"recruit {name}", "en"), (f"wirb {name}", "de")):
        with pytest.raises(IncompleteAction) as caught:
            read_command(mod, state, seat, text, lang)
        assert caught.value.data["candidates"]


@pytest.mark.parametrize("text", ["", "x" * 300, "place", "nonsense words", "place | 2"])
def test_what_is_no_command_is_refused(text):
    mod, state, seat, _ = next(positions("stoneage", 7))
    with pytest.raises(EngineError):
        read_command(mod, state, seat, text)


def test_a_word_that_names_several_things_is_ambiguous():
    mod, state, seat, _ = next(positions("stoneage", 7))
    with pytest.raises(AmbiguousAction):
        read_command(mod, state, seat, "place 1 buil")


def test_a_listed_line_typed_whole_is_ambiguous_and_offers_its_commands():
    mod, state, seat, _ = next(positions("stoneage", 7))
    line = command_list(mod, state, seat, "de")[1]
    assert line == "setze wald 1 | 2 | 3 | 4 | 5"
    with pytest.raises(AmbiguousAction) as caught:
        read_command(mod, state, seat, line, "de")
    assert refusal_candidates(mod, state, seat, line, caught.value, "de") == tuple(
        f"setze wald {n}" for n in range(1, 6))


def test_a_long_list_shows_the_most_useful_and_says_how_many_more():
    def many(mod, state, seat, kind):
        return kind == "build" and len(mod.legal_actions(state, seat)) > 2 * MAX_LISTED

    mod, state, seat, _ = find("stoneage", many, seed=1, players=4)
    legal = mod.legal_actions(state, seat)
    listing = listed_commands(mod, state, seat, "de")
    assert len(listing.lines) == MAX_LISTED and listing.more == len(legal) - MAX_LISTED
    assert listing.moves[0][0] == mod.default_action(state, seat)  # what a timeout plays
    assert "verzichte" in listing.lines
    points = [sum(mod.data().values[r] for r in a.get("pay"))
              for (a,) in listing.moves if a.kind == "build"]
    assert points == sorted(points, reverse=True)  # the most points first
    assert points[0] == max(sum(mod.data().values[r] for r in a.get("pay", ()))
                            for a in legal)


def test_payments_are_listed_cheapest_first_and_leaving_the_card_is_listed():
    def card(mod, state, seat, kind):
        return kind == "card" and len(mod.legal_actions(state, seat)) > 6

    mod, state, seat, _ = find("stoneage", card, seed=1, players=4)
    listing = listed_commands(mod, state, seat, "en")
    paid = [sum(mod.data().values[r] for r in a.get("pay")) for (a,) in listing.moves
            if a.kind == "take"]
    assert paid == sorted(paid) and "decline" in listing.lines


# --------------------------------------------------------------------------- refusals


def stone_age_place(mod, state, seat, kind):
    legal = mod.legal_actions(state, seat)
    return kind == "place" and Action.of("place", at="building1", count=1) in legal and (
        Action.of("place", at="forest", count=3) in legal)


def test_a_count_a_place_does_not_take_gets_the_counts_it_does():
    mod, state, seat, _ = find("stoneage", stone_age_place)
    with pytest.raises(IllegalAction):
        read_command(mod, state, seat, "place building1 5")
    assert nearest_commands(mod, state, seat, "place building1 5") == ["place building1 1"]
    assert nearest_commands(mod, state, seat, "setze gebäude1 5", "de") == ["setze gebäude1 1"]
    assert nearest_commands(mod, state, seat, "place hut 1") == ["place hut 2"]
    highest = max(a.get("count") for a in mod.legal_actions(state, seat) if a.get("at") == "forest")
    assert nearest_commands(mod, state, seat, "place forest 9")[0] == f"place forest {highest}"


def test_a_misspelt_place_gets_the_place_it_looks_like():
    mod, state, seat, _ = find("stoneage", stone_age_place)
    assert nearest_commands(mod, state, seat, "setze wlad 3", "de") == ["setze wald 3"]
    assert nearest_commands(mod, state, seat, "place forrest 3") == ["place forest 3"]


def test_too_few_resources_for_a_card_get_the_payments_nearest_it():
    def card(mod, state, seat, kind):
        legal = mod.legal_actions(state, seat)
        three = [a for a in legal if a.kind == "take" and len(a.get("pay")) == 3]
        return three if any(a.get("pay")[:2] == ("wood", "wood") for a in three) else None

    mod, state, seat, payments = find("stoneage", card, seed=0, players=2)
    near = nearest_commands(mod, state, seat, "take wood wood")
    assert near and all(c.startswith("take wood wood ") for c in near)
    cheapest = min((a for a in payments if a.get("pay")[:2] == ("wood", "wood")),
                   key=lambda a: sum(mod.data().values[r] for r in a.get("pay")))
    assert near[0] == f"take {' '.join(cheapest.get('pay'))}"
    assert nearest_commands(mod, state, seat, "nimm holz holz", "de")[0].startswith(
        "nimm holz holz ")


def test_a_bid_above_your_teeth_gets_your_highest_bids():
    mod, state, seat, _ = find("cavemen", lambda m, s, seat, k: k == "bid" and len(
        m.legal_actions(s, seat)) > 3)
    bids = [a.get("amount") for a in mod.legal_actions(state, seat) if a.kind == "bid"]
    near = nearest_commands(mod, state, seat, "bid 99", "de")
    assert near[0] == f"biete {max(bids)}" and near[1] == f"biete {max(bids) - 1}"


def test_a_move_of_a_kind_not_open_now_gets_the_most_useful_commands():
    mod, state, seat, _ = find("cavemen", lambda m, s, seat, k: k == "bid")
    speech = Speech(mod, state, "de")
    assert nearest_commands(mod, state, seat, "jage mammut", "de") == [
        speech.say_action(a) for a in ranked_actions(mod, state, seat)[:5]]


def test_a_payment_left_out_of_many_gets_the_cheapest_ways_to_pay():
    def card(mod, state, seat, kind):
        return kind == "card" and len(mod.legal_actions(state, seat)) > 12

    mod, state, seat, _ = find("stoneage", card, seed=0, players=2)
    with pytest.raises(IncompleteAction) as caught:
        read_command(mod, state, seat, "nimm", "de")
    offered = refusal_candidates(mod, state, seat, "nimm", caught.value, "de")
    values = {"holz": 3, "lehm": 4, "stein": 5, "gold": 6}
    paid = [sum(values[w] for w in c.split()[1:]) for c in offered]
    cheapest = min(sum(mod.data().values[r] for r in a.get("pay"))
                   for a in mod.legal_actions(state, seat) if a.kind == "take")
    assert len(offered) == 5 and paid == sorted(paid) and paid[0] == cheapest


def test_two_things_of_one_name_are_listed_by_their_ids():
    class Twins:  # a game whose two cards share a printed name
        def __getattr__(self, name):
            return getattr(get_game("cavemen"), name)

        def card_info(self, state, card_id):
            info = get_game("cavemen").card_info(state, card_id)
            return dict(info, name="Twin") if card_id in twins else info

    mod, state, seat, _ = find("cavemen", lambda m, s, seat, k: k == "casualty" and len(
        m.legal_actions(s, seat)) > 2)
    first, second = mod.legal_actions(state, seat)[:2]
    twins = {first.get("card"), second.get("card")}
    lines = command_list(Twins(), state, seat)
    assert len(set(lines)) == len(lines) and "lose Twin" not in lines
    assert format_action(first) in lines and format_action(second) in lines
    for line in lines:
        read_command(Twins(), state, seat, line)  # each names one move


# --------------------------------------------------------------------------- command or talk


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_the_kinds_a_game_names_are_the_kinds_its_playouts_offer(game):
    """``ACTION_KINDS`` (engine.core.NamesMoves) is every kind of move and no other."""
    mod = get_game(game)
    offered = {a.kind for m, state, seat, _ in playouts(game)
               for a in m.legal_actions(state, seat)}
    assert offered == set(mod.ACTION_KINDS) and len(mod.ACTION_KINDS) == len(offered)


TALK = {"en": ["Good luck, everyone", "I think I will pass", "to be fair, nice move",
               "In my view the conch is overrated", "For real?", "no way", "Thanks!",
               "Plan ahead", "Pa, look at this"],
        "de": ["Gut gespielt!", "Wir sehen uns", "Passt schon", "Bitte warten",
               "Er hat recht", "Ja klar", "Nutzt nichts", "Baum"]}


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_a_move_of_any_kind_is_a_command_at_every_decision_and_talk_is_talk(game, lang):
    """Whatever is open now, a line that begins with a kind of move of the game (in the
    notation, in the reader's words, by four letters of one) is a command; sentences
    that do not are talk, even where a move that their first word begins is open ("to"
    and ``tools``, "in" and ``invent``)."""
    mod = get_game(game)
    sentences = TALK[lang]
    seen = 0
    for m, state, _seat, _ in positions(game, 3, 400):
        speech = Speech(m, state, lang)
        for kind in mod.ACTION_KINDS:
            for word in {kind, kind[:4], *speech.verbs(kind)}:
                assert looks_like_a_command(m, state, f"{word} 2 nonsense", lang), (kind, word)
        for text in sentences:
            assert not looks_like_a_command(m, state, text, lang), text
        seen += 1
    assert seen > 100
