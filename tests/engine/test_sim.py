"""The simulator: ``python -m engine simulate ...`` and the functions behind it."""

from __future__ import annotations

import contextlib
import io
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine import cavemen
from engine.__main__ import main
from engine.sim import GameRecord, percentile, play_game, report, simulate

ROOT = Path(__file__).resolve().parents[2]
DECK_IDS = cavemen.setup(["a", "b"], 0).deck.deck_ids


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["simulate", "cavemen", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def line(lines: list[str], pattern: str) -> re.Match[str]:
    found = [m for m in (re.fullmatch(pattern, x) for x in lines) if m]
    assert len(found) == 1, f"{pattern!r} not found once in:\n" + "\n".join(lines)
    return found[0]


def section(lines: list[str], title: str) -> list[str]:
    """The indented lines under a heading."""
    start = next(i for i, x in enumerate(lines) if x.startswith(title)) + 1
    out = []
    for x in lines[start:]:
        if not x.startswith("  "):
            break
        out.append(x)
    return out


@pytest.fixture(scope="module")
def heuristic_run() -> tuple[int, list[str], list[GameRecord]]:
    """One CLI run (3 players, 8 games) and the records the same simulation gives."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["simulate", "cavemen", "--players", "3", "--games", "8", "--bot",
                     "heuristic", "--seed", "4"])
    records, _ = simulate("cavemen", 3, 8, "heuristic", 4)
    return code, buffer.getvalue().splitlines(), records


def test_the_simulator_exits_0(heuristic_run) -> None:
    assert heuristic_run[0] == 0


def test_the_simulator_names_what_it_ran(heuristic_run) -> None:
    _, lines, _ = heuristic_run
    assert lines[0] == "cavemen: 8 games, 3 players, bot heuristic"


def test_the_simulator_prints_speed(heuristic_run) -> None:
    _, lines, _ = heuristic_run
    m = line(lines, r"speed: ([\d,.]+) games/s, ([\d,]+) decisions/s \(([\d.]+) s\)")
    assert float(m[1].replace(",", "")) > 0
    assert int(m[2].replace(",", "")) > 0


def test_the_simulator_prints_rounds_median_p95_and_max(heuristic_run) -> None:
    _, lines, records = heuristic_run
    m = line(lines, r"rounds per game: median ([\d.]+), p95 (\d+), max (\d+)")
    rounds = sorted(r.rounds for r in records)
    assert float(m[1]) == statistics.median(rounds)
    assert int(m[2]) == percentile(rounds, 95)
    assert int(m[3]) == rounds[-1]
    assert float(m[1]) <= int(m[2]) <= int(m[3])


def test_the_simulator_prints_finished_and_unfinished_counts(heuristic_run) -> None:
    _, lines, records = heuristic_run
    m = line(lines, r"finished: (\d+), unfinished \(round cap\): (\d+)")
    assert int(m[1]) == sum(r.finished for r in records) == 8
    assert int(m[2]) == 0


def test_the_simulator_prints_win_shares_by_seat(heuristic_run) -> None:
    _, lines, records = heuristic_run
    assert "win share by seat (fair share 33.3%):" in lines
    seats = section(lines, "win share by seat")
    assert len(seats) == 3
    wins = Counter(r.winner for r in records)
    total = 0
    for seat, text in enumerate(seats):
        m = re.fullmatch(r"  seat (\d): +(\d+)\.0 +([\d.]+)%  \(([\d.]+)x fair\)", text)
        assert m, text
        assert int(m[1]) == seat + 1 and int(m[2]) == wins[seat]
        assert float(m[3]) == pytest.approx(100 * wins[seat] / 8, abs=0.05)
        assert float(m[4]) == pytest.approx(3 * wins[seat] / 8, abs=0.005)
        total += int(m[2])
    assert total == 8


def test_the_simulator_prints_how_games_were_won(heuristic_run) -> None:
    _, lines, records = heuristic_run
    rows = section(lines, "how games were won:")
    counts = {}
    for text in rows:
        m = re.fullmatch(r" +(\d+)  (.+)", text)
        assert m, text
        counts[m[2]] = int(m[1])
    assert counts == Counter(r.how for r in records)
    assert sum(counts.values()) == 8
    assert all(re.fullmatch(r"Fire, conch (kept|bought|kept \(paid\)), "
                            r"(from the deck|after the deck ran out)", how) for how in counts)


def test_the_simulator_prints_cards_taken_per_game(heuristic_run) -> None:
    _, lines, records = heuristic_run
    assert "cards taken per game (recruited/explored/invented/hunted):" in lines
    rows = section(lines, "cards taken per game")
    assert [r.split()[0] for r in rows] == list(DECK_IDS)
    taken: Counter = Counter()
    for r in records:
        taken.update(r.taken)
    for text in rows:
        cid, rate = text.split()[0], float(text.split()[-1])
        assert rate == pytest.approx(taken[cid] / 8, abs=0.0051), text
    assert taken["FIRE"] == 8  # every finished game ends with Fire taken


def test_the_simulator_reports_games_stopped_by_the_round_cap(capsys) -> None:
    code, lines, _ = run(capsys, "--players", "2", "--games", "3", "--round-cap", "2")
    assert code == 0
    line(lines, r"finished: 0, unfinished \(round cap\): 3")
    assert section(lines, "how games were won:") == ["      3  unfinished"]
    assert all(" 0.0% " in x for x in section(lines, "win share by seat"))


def test_games_stopped_by_the_round_cap_report_at_most_the_cap_in_rounds(capsys) -> None:
    code, lines, _ = run(capsys, "--players", "2", "--games", "3", "--round-cap", "2")
    m = line(lines, r"rounds per game: median ([\d.]+), p95 (\d+), max (\d+)")
    assert int(m[3]) <= 2, "a game stopped after 2 rounds is reported with more rounds"


def test_the_simulator_runs_the_random_bot_with_defaults(capsys) -> None:
    code, lines, _ = run(capsys, "--games", "2", "--bot", "random")
    assert code == 0
    assert lines[0] == "cavemen: 2 games, 4 players, bot random"
    assert len(section(lines, "win share by seat")) == 4


def test_the_simulator_is_deterministic_apart_from_speed(capsys) -> None:
    runs = []
    for _ in range(2):
        _, lines, _ = run(capsys, "--players", "5", "--games", "3", "--seed", "9")
        runs.append([x for x in lines if not x.startswith("speed:")])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("args", [
    ["--games", "0"], ["--games", "-3"], ["--players", "many"], ["--bot", "genius"],
    ["--games", "2.5"], ["--seed", "x"], ["--unknown"],
])
def test_bad_arguments_exit_with_a_usage_error(capsys, args: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "cavemen", *args])
    assert info.value.code == 2
    _, err = capsys.readouterr()
    assert "error:" in err


@pytest.mark.parametrize("argv", [[], ["simulate"], ["simulate", "chess"], ["play"]])
def test_a_missing_or_unknown_command_or_game_exits_with_a_usage_error(
        capsys, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize("players", ["1", "6", "0"])
def test_an_impossible_player_count_exits_2_naming_the_problem(capsys,
                                                               players: str) -> None:
    code, lines, err = run(capsys, "--players", players, "--games", "1")
    assert code == 2
    assert lines == []
    assert err.startswith("error: ") and "2 to 5 players" in err


@pytest.mark.parametrize("cap", ["0", "-1"])
def test_a_round_cap_below_1_exits_with_a_usage_error(capsys, cap: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "cavemen", "--games", "1", "--round-cap", cap])
    assert info.value.code == 2
    assert "--round-cap" in capsys.readouterr().err


def test_python_dash_m_engine_runs_the_simulator() -> None:
    done = subprocess.run([sys.executable, "-m", "engine", "simulate", "cavemen", "--games",
                           "2", "--players", "2"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cavemen: 2 games, 2 players, bot heuristic")


# --------------------------------------------------------------------------- functions


def test_play_game_is_deterministic_for_a_seed() -> None:
    a = play_game(cavemen, 4, 21, "heuristic")
    b = play_game(cavemen, 4, 21, "heuristic")
    assert a == b
    assert a.finished and 0 <= a.winner < 4 and a.decisions > 0 and a.rounds >= 1


def test_play_game_stops_at_the_round_cap() -> None:
    record = play_game(cavemen, 2, 3, "random", round_cap=1)
    assert not record.finished and record.winner is None and record.how == "unfinished"


@pytest.mark.parametrize(("values", "pct", "expected"), [
    ([5], 95, 5), (list(range(1, 101)), 95, 95), (list(range(1, 101)), 100, 100),
    (list(range(1, 101)), 0, 1), ([3, 1, 2], 50, 2), ([10, 20], 95, 20),
])
def test_percentile(values: list[int], pct: float, expected: int) -> None:
    assert percentile(values, pct) == expected


def test_report_counts_every_game_once() -> None:
    records, elapsed = simulate("cavemen", 2, 4, "random", 1)
    text = report("cavemen", 2, "random", records, elapsed)
    assert "cavemen: 4 games, 2 players, bot random" in text
    rows = section(text.splitlines(), "how games were won:")
    assert sum(int(r.split()[0]) for r in rows) == 4


def test_the_simulator_runs_stone_age_with_scores_by_seat(capsys) -> None:
    code = main(["simulate", "stoneage", "--players", "2", "--games", "6", "--seed", "3"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0] == "stoneage: 6 games, 2 players, bot heuristic"
    records, _ = simulate("stoneage", 2, 6, "heuristic", 3)
    everyone = [p for r in records for p in r.points]
    m = line(lines, r"final score: mean ([\d.]+), sd ([\d.]+), min (-?\d+), max (-?\d+)")
    assert float(m[1]) == pytest.approx(statistics.fmean(everyone), abs=0.05)
    assert float(m[2]) == pytest.approx(statistics.pstdev(everyone), abs=0.05)
    assert (int(m[3]), int(m[4])) == (min(everyone), max(everyone))
    seats = section(lines, "final score by seat")
    for seat, text in enumerate(seats):
        mine = [r.points[seat] for r in records]
        m = re.fullmatch(r"  seat (\d): +([\d.]+) +([\d.]+)", text)
        assert m and int(m[1]) == seat + 1, text
        assert float(m[2]) == pytest.approx(statistics.fmean(mine), abs=0.05)
    assert len(seats) == 2
    m = line(lines, r"decisions per player per round: ([\d.]+)")
    per_round = sum(r.decisions for r in records) / sum(2 * r.rounds for r in records)
    assert float(m[1]) == pytest.approx(per_round, abs=0.005)
    kinds = dict(x.split() for x in section(lines, "decisions per player per round"))
    assert {"place", "order"} <= set(kinds)
    assert sum(float(v) for v in kinds.values()) == pytest.approx(per_round, abs=0.05)
    rows = section(lines, "how games were won:")
    assert sum(int(x.split()[0]) for x in rows) == 6
    built = section(lines, "buildings built per game:")
    assert len(built) == 28
    built_total = sum(v for r in records for k, v in r.taken.items() if k.startswith("B"))
    assert built_total >= 6 * 7  # a stack of 7 ran empty in every game
    assert sum(float(x.split()[1]) for x in built) * 6 == pytest.approx(built_total, abs=0.2)
