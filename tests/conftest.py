"""Settings for the whole suite."""

import freezegun

# pytest times each test with _pytest.timing; under a frozen clock it would read frozen
# time, so --durations and the junit report would show nonsense for frozen tests.
freezegun.configure(extend_ignore_list=["_pytest.timing"])
