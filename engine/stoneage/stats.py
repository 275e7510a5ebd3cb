"""What the simulator reports about Stone Age games beyond the generic figures: how
each game ended, the final scores by seat, and how often each card and tile was taken."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.core import Event, Record, Summary

if TYPE_CHECKING:
    from engine.stoneage.rules import State

ENDS = {"buildings": "a building stack ran empty", "cards": "the cards ran out"}


def summary(state: State, events: Sequence[Event]) -> Summary:
    from engine.stoneage.rules import final_scores

    taken: Counter[str] = Counter()
    for ev in events:
        if ev.kind == "card_kept":
            taken[ev.data["card"]] += 1
        elif ev.kind == "building_built":
            taken[ev.data["tile"]] += 1
    over = state.phase == "over"
    how = ENDS.get(state.end or "", "unfinished") if over else "unfinished"
    points = [final_scores(state, s)["total"] for s in range(state.n)] if over else None
    return {"how": how, "taken": taken, "points": points}


def report(records: Sequence[Record]) -> list[str]:
    from engine.stoneage.rules import data

    scored = [r.points for r in records if r.points is not None]
    lines = []
    if scored:
        everyone = [p for points in scored for p in points]
        lines.append(f"final score: mean {statistics.fmean(everyone):.1f}, "
                     f"sd {statistics.pstdev(everyone):.1f}, "
                     f"min {min(everyone)}, max {max(everyone)}")
        lines.append("final score by seat (mean, sd):")
        for seat in range(len(scored[0])):
            mine = [points[seat] for points in scored]
            lines.append(f"  seat {seat + 1}: {statistics.fmean(mine):6.1f}  "
                         f"{statistics.pstdev(mine):5.1f}")
    n = len(records)
    taken: Counter[str] = Counter()
    for r in records:
        taken.update(r.taken)
    d = data()
    lines.append("civilization cards taken per game:")
    for cid in d.card_ids:
        lines.append(f"  {cid:4s} {d.card_name(cid):16s} {taken[cid] / n:5.2f}")
    lines.append("buildings built per game:")
    for tid in d.building_ids:
        lines.append(f"  {tid:4s} {taken[tid] / n:5.2f}")
    return lines
