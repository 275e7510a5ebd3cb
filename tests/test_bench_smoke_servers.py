"""The benches that start servers of their own (gunicorn, a clock, SMTP), run once with
tiny sizes."""

import pytest

from tests.bench_smoke import run_bench


@pytest.mark.parametrize("script", ["mail_latency.py", "confirm_throughput.py",
                                    "confirm_throughput.py --db postgresql",
                                    "confirm_statements.py",
                                    "confirm_statements.py --db postgresql",
                                    "deadline_run.py", "clock_stall.py", "reply_latency.py",
                                    "bot_pool.py"])
def test_the_bench_runs(script: str) -> None:
    run_bench(script)
