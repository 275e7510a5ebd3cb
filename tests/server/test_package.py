"""pbem as a real package (issue 17): the wheel is built from the files a fresh clone has
(no compiled catalog, no .venv), installed with the locked requirements into a fresh
virtualenv, migrated with its own ``flask`` command and served by its own gunicorn from a
folder outside the checkout. One turn of each game is played from the emails an SMTP
server received, over HTTP, and each game has a German seat whose emails and pages must
be German.

The wheel, the virtualenv and the running server are built once for the module; pip
installs from its cache when it has the files.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from babel.messages.pofile import read_po
from babel.support import Translations

from pbem import catalogs
from tests.pgcluster import free_port
from tests.server.conftest import SmtpServer
from tests.server.helpers import MAIL_FROM, SECRET, Mail, only_form, wait_for

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"

pytestmark = pytest.mark.slow


def german(msgid: str) -> str:
    """The German of ``msgid`` in the repository's catalog (checked to be translated)."""
    with open(ROOT / "pbem/translations/de/LC_MESSAGES/messages.po", "rb") as fh:
        text = read_po(fh, locale="de")[msgid].string
    assert text and text != msgid, msgid
    return text


def run(*command: str | Path, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=600, **kwargs)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


def clone_files() -> list[str]:
    """The files a fresh clone of this working tree has: tracked and new ones, without
    what git ignores (.venv, compiled catalogs, build output)."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                 cwd=ROOT).stdout
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the clone's files (with the locked setuptools)."""
    source = tmp_path_factory.mktemp("clone")
    for name in clone_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    assert not list(source.rglob("*.mo"))
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", dist, source)
    (found,) = dist.glob("pbem-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel and the locked versions of what it requires
    (every file's hash checked, the wheel's own included)."""
    home = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", "--without-pip", home)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wanted = home / "requirements.txt"
    wanted.write_text(f"pbem @ {wheel.as_uri()} --hash=sha256:{digest}\n")
    run(sys.executable, "-m", "pip", "--python", home / "bin" / "python", "install", "--quiet",
        "--constraint", LOCK, "--requirement", wanted)
    return home


@dataclass
class Site:
    """The installed pbem, served by gunicorn from ``folder`` and mailing ``smtp``."""

    venv: Path
    folder: Path
    env: dict[str, str]
    base: str
    smtp: SmtpServer
    access_log: Path
    http: requests.Session

    def command(self, name: str, *args: str) -> subprocess.CompletedProcess:
        """One of the virtualenv's own commands, run from the site's folder."""
        return run(self.venv / "bin" / name, *args, env=self.env, cwd=self.folder)

    def flask(self, *args: str) -> str:
        return self.command("flask", "--app", "pbem", "pbem", *args).stdout

    def mails(self, to: str, template: str) -> list[Mail]:
        return self.smtp.to(to, template)


@pytest.fixture(scope="module")
def site(venv, tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")  # anywhere but the checkout
    smtp = SmtpServer()
    smtp.start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PBEM_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PBEM_DATABASE_URL=f"sqlite:///{folder / 'pbem.sqlite3'}", PBEM_SECRET_KEY=SECRET,
               PBEM_BASE_URL=base, PBEM_SMTP_HOST="127.0.0.1", PBEM_SMTP_PORT=str(smtp.port),
               PBEM_MAIL_FROM=MAIL_FROM,
               # the next player's email goes at once, not after a take-back's grace
               # (a setting from the environment, as a host would give it)
               PBEM_TAKEBACK_GRACE_SECONDS="0")
    log, errors = folder / "access.log", folder / "errors.log"
    with requests.Session() as http:
        site = Site(venv, folder, env, base, smtp, log, http)
        assert site.flask("migrate") == "database at head\n"
        with open(errors, "wb") as err:
            server = subprocess.Popen(
                [str(venv / "bin" / "gunicorn"), "--workers", "1", "--bind", f"127.0.0.1:{port}",
                 "--config", "python:pbem.gunicorn_conf", "--access-logfile", str(log),
                 "pbem:create_app()"], env=env, cwd=folder, stdout=subprocess.DEVNULL,
                stderr=err)
        try:
            wait_for(base, server, errors)
            yield site
        finally:
            server.terminate()
            server.wait(timeout=30)
            smtp.stop()


# --------------------------------------------------------------------------- the wheel


def test_the_wheel_holds_everything_the_server_reads_and_no_tests(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shared = [f"pbem/{p.relative_to(ROOT)}" for top in ("templates", "migrations")
              for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    static = [f"pbem/static/{p.name}" for p in (ROOT / "pbem/static").iterdir()]
    data = [f"{p.relative_to(ROOT)}" for p in (ROOT / "engine").rglob("*.toml")]
    expected = {*shared, *static, *data, "pbem/translations/de/LC_MESSAGES/messages.mo"}
    assert expected - names == set()
    assert len(shared) > 50 and "engine/stoneage/standard.toml" in data
    assert not [n for n in names if n.startswith(("tests/", "bench/")) or n.endswith(".po")]


def test_the_wheels_german_catalog_is_compiled_from_the_repositorys(wheel):
    with zipfile.ZipFile(wheel) as whl:
        mo = whl.read("pbem/translations/de/LC_MESSAGES/messages.mo")
    translations = Translations(BytesIO(mo))
    for msgid in ("Confirm your move", "The game has started: nothing to do until your turn",
                  "Take vacation"):
        assert translations.gettext(msgid) == german(msgid)


def test_the_installed_server_runs_from_its_own_files_not_the_checkout(site):
    script = ("import engine, pbem, pbem.i18n as i\n"
              "print(engine.__file__, pbem.__file__, pbem.TEMPLATES, pbem.MIGRATIONS,"
              " i.TRANSLATIONS, sep='\\n')")
    paths = site.command("python", "-c", script).stdout.split()
    site_packages = site.venv / "lib"
    assert len(paths) == 5
    for path in paths:
        assert Path(path).is_relative_to(site_packages), path
        assert not Path(path).is_relative_to(ROOT), path


# --------------------------------------------------------------------------- playing

# Each game: its seed, its two players (one German) and who has the first turn.
GAMES = {
    "cavemen": (1, ["Ann <ann.cavemen@example.com> de Europe/Berlin",
                    "Bob <bob.cavemen@example.com> en America/New_York"], "ann", "de"),
    "stoneage": (1, ["Ann <ann.stoneage@example.com> de Europe/Berlin",
                     "Bob <bob.stoneage@example.com> en America/New_York"], "bob", "en"),
}


# A line that each email of the test has, to check its language.
A_LINE_OF = {"decision": "Choose with one click (you confirm on the page that opens):",
             "game_started": "The game has started: nothing to do until your turn"}


def address(game: str, who: str) -> str:
    return f"{who}.{game}@example.com"


@pytest.mark.parametrize("game", sorted(GAMES))
def test_one_turn_of_each_game_played_from_the_emails_of_the_installed_server(site, game):
    seed, players, mover, language = GAMES[game]
    out = site.flask("new-game", "--game", game, "--seed", str(seed), "--start",
                     *[arg for p in players for arg in ("--player", p)])
    assert re.fullmatch(r"game \w+\nadmin \S+\nmail sent 2, failed 0\n", out), out

    (turn,) = site.mails(address(game, mover), "decision")
    page = confirm_first_choice(site, turn, language)
    expect_language(page, language, ("Recorded", "Now waiting for:"))

    assert site.flask("deliver").startswith("sent 1,")  # the move made the next turn
    turns = [m for who in ("ann", "bob") for m in site.mails(address(game, who), "decision")]
    assert len(turns) == 2 and len({m.decision_id for m in turns}) == 2

    template = "decision" if mover == "ann" else "game_started"  # Ann's first email
    (german_mail,) = site.mails(address(game, "ann"), template)[:1]
    expect_language(german_mail.text, "de", (A_LINE_OF[template],))
    game_page = site.http.get(link(german_mail, "/g/"), timeout=30)
    assert game_page.status_code == 200
    expect_language(game_page.text, "de", ("Take vacation", "Leave the game"))
    expect_no_token_logged(site, turn, german_mail)


def confirm_first_choice(site: Site, turn: Mail, language: str) -> str:
    """Open the turn email's first one-click link, check the confirmation page, press
    its button (with the first number of people, where it asks); returns the page that
    says what was recorded."""
    url = [u for u in turn.text_links() if urlsplit(u).path.startswith("/a/")][0]
    expect_language(turn.text, language, (A_LINE_OF["decision"],))
    confirm = site.http.get(url, timeout=30)
    assert confirm.status_code == 200, confirm.text
    expect_language(confirm.text, language, ("Confirm your move", "Confirm"))
    form = only_form(confirm.text)
    # A placement's page asks how many people: a person picks the first number offered.
    chosen = {"choice": form.radios["choice"][0]} if form.radios.get("choice") else {}
    done = site.http.post(url, data=form.data(**chosen), timeout=30)
    assert done.status_code == 200, done.text
    return done.text


def expect_language(text: str, language: str, msgids: tuple[str, ...]) -> None:
    for msgid in msgids:
        wanted = german(msgid) if language == "de" else msgid
        assert wanted in text, f"{wanted!r} missing from the {language} text:\n{text[:3000]}"
        if language == "de":
            assert msgid not in text or msgid in wanted, f"English {msgid!r} left"


def link(mail: Mail, prefix: str) -> str:
    (url,) = mail.under(prefix)
    return url


def expect_no_token_logged(site: Site, *mails: Mail) -> None:
    log = site.access_log.read_text()
    assert '"POST /a/<token> ' in log and '"GET /g/<token> ' in log, log
    for mail in mails:
        for url in mail.token_links():
            assert urlsplit(url).path.rsplit("/", 1)[1] not in log


def test_the_rules_and_home_pages_of_the_installed_server_in_both_languages(site):
    for game in GAMES:
        for lang in ("en", "de"):
            page = site.http.get(f"{site.base}/rules/{game}?lang={lang}", timeout=30)
            assert page.status_code == 200
            expect_language(page.text, lang, ("Glossary", "Your decisions"))
    home = site.http.get(site.base + "/", headers={"Accept-Language": "de"}, timeout=30)
    expect_language(home.text, "de", ("play-by-email board games",))
    style = site.http.get(site.base + "/static/pbem.css", timeout=30)
    assert style.status_code == 200 and "font-family" in style.text


# --------------------------------------------------------------------------- catalogs


def po_copy(folder: Path) -> Path:
    """The repository's German catalog, copied under ``folder`` as a checkout has it."""
    po = folder / "de" / catalogs.CATALOG.with_suffix(".po")
    po.parent.mkdir(parents=True)
    shutil.copy(ROOT / "pbem/translations/de/LC_MESSAGES/messages.po", po)
    return po


def test_a_missing_or_stale_catalog_is_compiled_and_a_fresh_one_is_left(tmp_path):
    po = po_copy(tmp_path)
    mo = po.with_suffix(".mo")
    assert catalogs.missing(tmp_path, ["de"]) == ["de"]
    assert catalogs.compile_stale(tmp_path) == ["de"]
    with mo.open("rb") as fh:
        assert Translations(fh).gettext("Confirm your move") == german("Confirm your move")
    assert catalogs.compile_stale(tmp_path) == [] and catalogs.missing(tmp_path, ["de"]) == []
    os.utime(po, (mo.stat().st_mtime + 10,) * 2)  # the .po edited after the compile
    assert catalogs.compile_stale(tmp_path) == ["de"]


def test_the_server_refuses_to_start_without_a_german_catalog(tmp_path, monkeypatch):
    from pbem import i18n

    monkeypatch.setattr(i18n, "TRANSLATIONS", tmp_path)  # no .po to compile, no .mo
    with pytest.raises(RuntimeError, match="no compiled catalog for de"):
        i18n.load_catalogs()
