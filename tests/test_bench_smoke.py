"""The benches that need no server of their own, run once with tiny sizes."""

import pytest

from tests.bench_smoke import run_bench, test_every_bench_script_has_a_smoke_run  # noqa: F401


@pytest.mark.parametrize("script", ["engine_speed.py", "render_mail.py", "seat_view.py",
                                    "push_cost.py", "gc_pause.py",
                                    "page_time.py", "my_timing.py", "sweep_time.py",
                                    "confirm_latency.py",
                                    "stoneage_decisions.py", "digest_week.py", "arena.py",
                                    "arena.py --game cavemen", "health_bench.py"])
def test_the_bench_runs(script: str) -> None:
    run_bench(script)
