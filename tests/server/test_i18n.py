"""German for real, and no drift between the languages (issue 8).

The catalog test extracts the msgids afresh from the code and the templates (as `make
i18n` does) and requires every one of them in every catalog, translated, not fuzzy, with
the same placeholders. The rendering tests show every email kind and every page in
German and fail on any sentence that is the same as in English.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from pbem.i18n import LANGUAGES

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = ROOT / "pbem" / "translations"
PLACEHOLDER_RE = re.compile(r"%\((\w+)\)[sd]")


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """The msgids the code and templates use now (a fresh `pybabel extract`)."""
    pot = tmp_path_factory.mktemp("i18n") / "messages.pot"
    pybabel = str(Path(sys.executable).with_name("pybabel"))
    subprocess.run([pybabel, "extract", "-F", "babel.cfg", "-k", "lazy_gettext", "-k", "mark",
                    "-o", str(pot), "."], cwd=ROOT, check=True, capture_output=True)
    with open(pot, "rb") as fh:
        return read_po(fh)


def catalog(lang: str):
    with open(CATALOGS / lang / "LC_MESSAGES" / "messages.po", "rb") as fh:
        return read_po(fh, locale=lang)


def translated_languages() -> list[str]:
    return [code for code in LANGUAGES if code != "en"]


def test_there_is_a_catalog_for_every_language_offered():
    for lang in translated_languages():
        assert (CATALOGS / lang / "LC_MESSAGES" / "messages.po").is_file(), lang


@pytest.mark.parametrize("lang", translated_languages())
def test_every_msgid_in_use_has_a_translation(extracted, lang):
    po = catalog(lang)
    missing = [m.id for m in extracted if m.id and (po.get(m.id) is None or not _done(
        po.get(m.id)))]
    assert missing == [], f"{len(missing)} msgids without a {lang} translation: {missing[:20]}"


@pytest.mark.parametrize("lang", translated_languages())
def test_no_translation_is_fuzzy(lang):
    fuzzy = [m.id for m in catalog(lang) if m.id and m.fuzzy]
    assert fuzzy == []
    assert not catalog(lang).fuzzy  # the header entry too


@pytest.mark.parametrize("lang", translated_languages())
def test_placeholders_are_the_same_in_msgid_and_msgstr(lang):
    wrong = []
    for m in catalog(lang):
        if not m.id:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strs = m.string if isinstance(m.string, tuple) else (m.string,)
        wanted = set(PLACEHOLDER_RE.findall(ids[-1]))
        for i, text in enumerate(strs):
            found = set(PLACEHOLDER_RE.findall(text))
            singular_may_drop_num = i == 0 and len(ids) > 1 and "num" not in set(
                PLACEHOLDER_RE.findall(ids[0]))
            if found != wanted and not (singular_may_drop_num and found == wanted - {"num"}):
                wrong.append((ids[0], text))
    assert wrong == []


def _done(message) -> bool:
    strings = message.string if isinstance(message.string, tuple) else (message.string,)
    return not message.fuzzy and all(s.strip() for s in strings)


@pytest.mark.parametrize("lang", translated_languages())
def test_the_compiled_catalog_is_fresh(lang):
    """The .mo files are built by the install step (`make translations`), not committed;
    a stale one would show old words."""
    po = CATALOGS / lang / "LC_MESSAGES" / "messages.po"
    mo = po.with_suffix(".mo")
    assert mo.is_file() and mo.stat().st_mtime >= po.stat().st_mtime, \
        f"{mo} is missing or older than its .po: run `make translations`"
