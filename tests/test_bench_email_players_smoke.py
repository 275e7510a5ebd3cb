"""bench/email_players.py, its functions run in-process on one short game of each
configuration (``QUICK_ROUNDS`` rounds, then left): what it counts must add up with what
the server recorded (the figures themselves are for bench/, never asserted)."""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from collections.abc import Iterator

import pytest

from bench import email_players as bench
from bench.email_players import Played
from bench.inbox import Received
from pbem.db import get_engine
from pbem.kinds import ClosedBy, MoveSource
from pbem.models import Decision
from tests.browser.conftest import CHROMIUM, _unavailable

CONFIGS = bench.CONFIGS


@pytest.fixture(scope="module")
def played() -> dict[tuple[str, int], list[Played]]:
    return bench.play_all(CONFIGS, [1], max_rounds=bench.QUICK_ROUNDS, keep_html=True)


def test_a_listed_pattern_is_filled_in_one_word_a_group() -> None:
    rng = random.Random(3)
    for _ in range(50):
        line = bench.expand("place (hunt | forest | card1) (1 | 2 | 3)", rng)
        assert re.fullmatch(r"place (hunt|forest|card1) [123]", line), line
        order = bench.expand("order 3 × (hunt | forest | card1)", rng).split()[1:]
        assert sorted(order) == ["card1", "forest", "hunt"]  # each place once
        take = bench.expand("take 2 × (wood | brick)", rng).split()[1:]
        assert len(take) == 2 and set(take) <= {"wood", "brick"}
    pays = {bench.expand("take 2 × (wood | brick)", rng) for _ in range(60)}
    assert "take wood wood" in pays and "take wood brick" in pays  # goods may repeat
    assert bench.expand("decline", rng) == "decline"
    counts = {bench.expand("place forest 1 | 2 | 3", rng) for _ in range(60)}
    assert counts == {"place forest 1", "place forest 2", "place forest 3"}
    assert bench.is_pattern("place forest 1 | 2 | 3") and not bench.is_pattern("use hunt")


def test_with_standing_choices_the_tools_and_feeding_are_never_asked() -> None:
    """``--standing``: each player sets them on their game page first (checked there by
    the bench), and then no decision of those kinds opens."""
    (game,) = bench.play_all([("stoneage", 2)], [2], max_rounds=3, standing=True)[
        ("stoneage", 2)]
    assert game.decisions > 4
    assert not game.opened["tools"] and not game.opened["feed"]


def test_the_commands_are_read_from_the_english_and_the_german_list() -> None:
    heads = bench.command_heads()
    text = ("Your turn\n\n{head} (one a line):\n  pick 1\n  pick 2\n\n-- \nfooter\n"
            "  not a command\n")
    for head in heads:
        assert bench.listed_commands(text.format(head=head), heads) == ["pick 1", "pick 2"]
    assert heads[1].startswith("Oder antworte")
    assert bench.listed_commands("no list here\n  pick 1\n", heads) == []


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c[0]}{c[1]}")
def test_every_decision_is_made_from_its_email_and_counted_once(
        played: dict[tuple[str, int], list[Played]], config: tuple[str, int]) -> None:
    (game,) = played[config]
    engine_name, n = config
    assert game.rounds == bench.QUICK_ROUNDS + 1 and not game.finished  # left at the cap
    assert game.decisions > 2 * n and game.stale == game.no_offer == game.no_commands == 0
    # only the players moved, and every move is one try that played (or the game page)
    assert set(game.moves) == {MoveSource.PLAYER}
    tries_played = sum(a.played for a in game.attempts)
    assert game.moves[MoveSource.PLAYER] == tries_played + game.on_page
    assert game.closed_by[ClosedBy.PLAYER] == game.moves[MoveSource.PLAYER]
    assert game.decisions == sum(game.closed_by.values()) + game.still_open
    # one first try a decision made, one email a decision opened, one answer a reply
    firsts = [a for a in game.attempts if a.first]
    assert len(firsts) == game.closed_by[ClosedBy.PLAYER]
    assert game.all_emails(bench.DECISION_EMAILS) == game.decisions
    commands = [a for a in game.attempts if a.channel == "command"]
    assert game.all_emails(("reply",)) == len(commands) > 0
    assert {a.channel for a in firsts} == {"command", "link"}
    assert all(a.reason == "" for a in game.attempts if a.played)
    assert all(a.reason for a in game.attempts if not a.played)
    # every player was asked, and half of them read German
    assert len(game.emails) == n and all(c["decision"] for c in game.emails.values())
    assert Counter(a.lang for a in game.attempts).keys() == {"en", "de"}
    assert (len(game.samples) == game.decisions) == (engine_name == "stoneage")


def test_the_report_prints_the_figures_it_counted(
        played: dict[tuple[str, int], list[Played]], capsys: pytest.CaptureFixture[str]
        ) -> None:
    lines = [bench.report(e, n, games, 1.0) for (e, n), games in played.items()]
    bench.summary(lines)
    out = capsys.readouterr().out
    for line, ((_, n), (game,)) in zip(lines, played.items(), strict=True):
        assert line.decisions == pytest.approx(game.decisions / n / game.rounds)
        assert line.commands[1] + line.links[1] == game.closed_by[ClosedBy.PLAYER]
        row = re.search(rf"^{line.config} +1 +0 +{game.rounds:.1f} +{line.decisions:.2f} +"
                        rf"{line.emails:.2f} +[\d.]+% +{line.commands[1]} +[\d.]+% +"
                        rf"{line.links[1]}$", out, re.M)
        assert row, out
    assert out.count("left unfinished after the round cap") == len(CONFIGS)


def test_the_height_of_stone_age_emails_is_measured_at_390_px(
        played: dict[tuple[str, int], list[Played]]) -> None:
    if not os.path.exists(CHROMIUM):
        _unavailable(f"{CHROMIUM} does not exist (apt-get install -y chromium)")
    samples = bench.pick_samples(played["stoneage", 2][0].samples, 1)
    assert {s.kind for s in samples} >= {"place"} and {s.lang for s in samples} == {"en", "de"}
    heights = bench.measure_heights(samples[:2])
    for h in heights:
        assert h.choices_end is not None and 200 < h.choices_end < h.full


@pytest.fixture
def players(tmp_path) -> Iterator[bench.EmailPlayers]:
    """The bench's players on a new Stone Age game for 2 (seed 1), in its app."""
    app = bench.make_app(str(tmp_path))
    with app.app_context():
        players = bench.EmailPlayers(app)
        players.start("stoneage", 2, 1)
        yield players
        get_engine(app).dispose()


def asked(players: bench.EmailPlayers) -> tuple[Received, Decision]:
    """The next email that asks for a decision, and the decision."""
    found = players.next_decision()
    assert found is not None
    return found


def test_a_refused_reply_is_counted_with_the_reason_its_answer_gives(
        players: bench.EmailPlayers) -> None:
    got, decision = asked(players)
    assert decision.kind == "place"
    refused = players.try_command(got, decision, "place hut 5", bench.language_of(got))
    assert (refused.played, refused.reason) == (False, "illegal")
    assert players.open_decision(decision.id) is not None
    played = players.try_command(got, decision, "place hunt 2", bench.language_of(got))
    assert (played.played, played.reason, played.sent) == (True, "", "place hunt 2")
    assert players.open_decision(decision.id) is None
    assert players.game.emails[got.to]["reply"] == 2  # each reply answered
    # the next player's email: a one-click link with variants, one of them chosen
    got, decision = asked(players)
    link = next(p for p in got.links if p.startswith("/a/"))
    clicked = players.try_link(decision, link)
    assert clicked.played and re.fullmatch(r"place hunt [1-5]", clicked.sent)


class Last(random.Random):
    """A player who always picks the last thing offered (a listed command, after the
    links; in a pattern, the last word of each group)."""

    def choice(self, seq):  # type: ignore[no-untyped-def, override]
        return seq[-1]


def test_after_refused_tries_the_player_decides_on_the_game_page(
        players: bench.EmailPlayers, monkeypatch: pytest.MonkeyPatch) -> None:
    """An email whose list ends with a line of which no reading is legal (emails list
    none such since issue 31: one is added here, as older emails had them)."""
    got, decision = asked(players)
    real = bench.listed_commands
    monkeypatch.setattr(bench, "listed_commands",
                        lambda text, heads: [*real(text, heads), "place (building1) (1 | 9)"])
    players.rng = Last()
    players.decide(got, decision)
    tries = players.game.attempts
    assert [(a.first, a.played, a.reason) for a in tries] == \
        [(True, False, "illegal")] + [(False, False, "illegal")] * (bench.MAX_TRIES - 1)
    assert players.game.on_page == 1 and players.open_decision(decision.id) is None
    assert players.game.emails[got.to]["reply"] == bench.MAX_TRIES
