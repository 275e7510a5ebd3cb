"""bench/inbox.py run once with its smallest run (``--quick``: one game of Stone Age 2
players and of Cavemen 4 players, each played in the four modes), as a
subprocess: it must finish every game, with nobody timing out, and print its summary
table with plausible figures (the figures themselves are for bench/, never asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# a summary line: configuration, mode, games, decisions, turns, emails per player per
# game "mean (min-max)", per decision, per turn, decision emails per turn, per round
LINE = re.compile(r"^(Stone Age 2p|Cavemen 4p) +(emails|page|live|plan) +(\d+) +([\d.]+) +"
                  r"([\d.]+) +([\d.]+) \((\d+)-(\d+)\) +([\d.]+) +([\d.]+) +([\d.]+) "
                  r"+([\d.]+)$", re.M)


def test_the_inbox_bench_plays_whole_games_from_the_emails() -> None:
    done = subprocess.run([sys.executable, "bench/inbox.py", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, (out + done.stderr)[-3000:]
    # every configuration and mode: its game finished
    finished = re.findall(r"mode (emails|page|live|plan): 1 games \(seeds 1\), (\d+) finished",
                          out)
    assert sorted(finished) == ([("emails", "1")] * 2 + [("live", "1")] * 2
                                + [("page", "1")] * 2 + [("plan", "1")] * 2), out[-3000:]
    assert "timed out" not in out and "not made by the players" not in out
    rows = LINE.findall(out)
    assert {(r[0], r[1]) for r in rows} == {(c, m) for c in ("Stone Age 2p", "Cavemen 4p")
                                            for m in ("emails", "page", "live", "plan")}, \
        out[-3000:]
    for (_config, mode, games, decisions, turns, mean, low, high, per_decision, per_turn,
         decision_per_turn, per_round) in rows:
        assert games == "1"
        # (with standing plans one player may make nearly every decision: a plan of
        # hunters only plays a whole game without asking its player anything)
        assert float(decisions) >= float(turns) > (1 if mode == "plan" else 10)
        assert 0 < int(low) <= float(mean) <= int(high)
        # (with plans a turn may be a long run of one player's decisions: per decision)
        assert 0 < float(per_decision) < 3 and 0 < float(per_turn) < (
            100 if mode == "plan" else 5)
        assert float(per_round) > 0
        # a player goes on with the follow-up decisions on the page: at most one
        # decision email per turn there; from the emails alone, one a decision
        # players at their live pages: (almost) no decision email at all
        limit = {"page": 1.0, "live": 0.1, "plan": 100}.get(mode, 3)
        assert 0 <= float(decision_per_turn) <= limit and (mode == "live" or float(
            decision_per_turn) > 0)
    # with standing plans, Stone Age's placements are played by them, without decisions
    assert re.search(r"placements played by a plan +[1-9][\d.]* +per game", out), out[-3000:]
    # the decision kinds are listed, Stone Age's order of the use phase among them
    assert re.search(r"decision kinds +place [\d.]+%.*\border [\d.]+%", out), out[-3000:]
