"""The suite's scheduling lists (tests/conftest.py) name real files, and a file handed out
test by test shares no fixture across its tests."""

from pathlib import Path

from tests.conftest import LONG, SPLIT

ROOT = Path(__file__).resolve().parent.parent


def test_the_long_and_split_files_exist() -> None:
    missing = [p for p in (*LONG, *SPLIT) if not (ROOT / p).is_file()]
    assert missing == [], f"renamed or removed; update tests/conftest.py: {missing}"


def test_a_split_file_has_no_module_or_class_scoped_fixture() -> None:
    for path in SPLIT:
        text = (ROOT / path).read_text()
        for scope in ("module", "class", "package"):
            assert f'scope="{scope}"' not in text and f"scope='{scope}'" not in text, path
