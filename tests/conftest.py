"""Settings for the whole suite."""

import freezegun

# pytest times each test with _pytest.timing; under a frozen clock it would read frozen
# time, so --durations and the junit report would show nonsense for frozen tests.
freezegun.configure(extend_ignore_list=["_pytest.timing"])


# --------------------------------------------------------------------------- scheduling
# `make test` runs the suite on several workers, one test file at a time per worker (a file's
# fixtures stay together). The files below take a minute or more between them; started
# last, one of them keeps a worker busy for minutes while the others sit idle. So they run
# first, longest first, and the files in SPLIT (no fixtures shared across their tests)
# hand out their tests one by one to whichever worker is free.
LONG = {  # test file: seconds it took under `make test` on the two-core machine
    "tests/engine/test_conformance.py": 164,  # all its tests, handed out one by one
    "tests/browser/test_stoneage_in_browser.py": 168,
    "tests/browser/test_play_in_browser.py": 137,
    "tests/server/test_e2e_stoneage.py": 135,
    "tests/browser/test_screens.py": 87,
    "tests/browser/test_languages_in_browser.py": 71,
    "tests/test_bench_smoke_servers.py": 60,
    "tests/server/test_exact_moves.py": 44,
    "tests/test_bench_smoke.py": 33,
    "tests/server/test_fail_closed.py": 32,
    "tests/server/test_package.py": 26,
    "tests/engine/test_balance.py": 24,
    "tests/server/test_e2e.py": 17,
    "tests/server/test_replies.py": 60,  # measured on the two-core machine, -n 2
    "tests/server/test_e2e_replies.py": 45,
    "tests/server/test_bounces.py": 40,
    "tests/server/test_backup.py": 23,
    "tests/server/test_doctor.py": 25,
    "tests/server/test_serve.py": 65,  # real servers started and stopped, -n 1
}
SPLIT = {"tests/engine/test_conformance.py", "tests/server/test_e2e_stoneage.py",
         "tests/test_bench_smoke_servers.py", "tests/test_bench_smoke.py"}


def pytest_collection_modifyitems(config, items) -> None:
    """On an xdist worker: the long files first, longest first (every worker collects
    the same order, and the scheduler below hands out work in that order)."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: -LONG.get(item.nodeid.split("::", 1)[0], 0))


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, in collection order, with the SPLIT files test by test."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LongFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPLIT else path

    config.option.loadscopereorder = False
    return LongFirst(config, log)
