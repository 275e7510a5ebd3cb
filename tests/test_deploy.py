"""deploy/: the systemd units pass ``systemd-analyze verify`` (as a host installs them,
with this virtualenv in place of /opt/pbem/venv), are hardened, run commands pbem has,
keep SQLite in their state directory, and the TLS proxies (Caddy, nginx) point at the
port the web unit binds."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEMD = ROOT / "deploy" / "systemd"
SERVICES = ["pbem-web.service", "pbem-clock.service", "pbem-inbound.service",
            "pbem-bots.service"]
UNITS = [*SERVICES, "pbem.target"]
VENV = "/opt/pbem/venv"
SETTINGS = "/etc/pbem/pbem.env"
HARDENING = {"ProtectSystem": "strict", "NoNewPrivileges": "yes", "PrivateTmp": "yes",
             "DynamicUser": "yes", "StateDirectory": "pbem", "ProtectHome": "yes"}


def systemd_analyze() -> str:
    """The binary; under CI its absence fails (``.ci/system-deps`` installs it)."""
    found = shutil.which("systemd-analyze")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("systemd-analyze is missing; .ci/system-deps installs it "
                    "(apt-get install systemd)")
    pytest.skip("systemd-analyze is not installed (apt-get install systemd), so the unit "
                "files are not verified here")


def installed(tmp_path: Path, edit: dict[str, str] | None = None) -> list[Path]:
    """The units as a host installs them: this virtualenv for /opt/pbem/venv and the
    example settings for /etc/pbem/pbem.env; ``edit`` replaces text in each."""
    shutil.copyfile(SYSTEMD / "pbem.env.example", tmp_path / "pbem.env")
    venv = str(Path(sys.executable).parent.parent)
    copies = []
    for name in UNITS:
        text = (SYSTEMD / name).read_text().replace(VENV, venv)
        text = text.replace(SETTINGS, str(tmp_path / "pbem.env"))
        for old, new in (edit or {}).items():
            text = text.replace(old, new)
        (tmp_path / name).write_text(text)
        copies.append(tmp_path / name)
    return copies


def verify(tmp_path: Path, units: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([systemd_analyze(), "verify", *map(str, units)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def settings(name: str) -> dict[str, list[str]]:
    """Every ``Key=value`` of a unit file (continued lines joined), by key."""
    text = (SYSTEMD / name).read_text().replace("\\\n", " ")
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z]+)=(.*)$", line.strip())
        if match:
            found.setdefault(match[1], []).append(match[2].strip())
    return found


def test_the_units_pass_systemd_analyze_verify_without_a_word(tmp_path):
    done = verify(tmp_path, installed(tmp_path))
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_the_verification_catches_a_misspelt_setting_and_a_missing_program(tmp_path):
    done = verify(tmp_path, installed(tmp_path, {"ProtectSystem=strict": "ProtectSistem=strict",
                                                 "bin/gunicorn": "bin/no-such-gunicorn"}))
    assert done.returncode != 0
    assert "ProtectSistem" in done.stderr and "no-such-gunicorn" in done.stderr


@pytest.mark.parametrize("name", SERVICES)
def test_every_service_is_hardened_and_writes_only_its_state_directory(name):
    unit = settings(name)
    assert {key: unit.get(key, [None])[-1] for key in HARDENING} == HARDENING
    assert unit["User"] == ["pbem"] and unit["WorkingDirectory"] == ["/var/lib/pbem"]
    assert unit["EnvironmentFile"] == [SETTINGS]
    assert unit["WantedBy"] == ["pbem.target"] and unit["PartOf"] == ["pbem.target"]


def test_the_example_settings_keep_sqlite_in_the_state_directory():
    env = dict(line.split("=", 1) for line in
               (SYSTEMD / "pbem.env.example").read_text().splitlines()
               if line and not line.startswith("#"))
    assert env["PBEM_DATABASE_URL"] == "sqlite:////var/lib/pbem/pbem.sqlite3"
    assert env["PBEM_PROXY_HOPS"] == "1" and env["PBEM_BASE_URL"].startswith("https://")


@pytest.mark.parametrize("name", SERVICES)
def test_the_services_run_commands_that_pbem_has(name):
    from pbem.cli import pbem_cli

    for line in settings(name)["ExecStart"] + settings(name).get("ExecStartPre", []):
        argv = shlex.split(line)
        assert argv[0].startswith(f"{VENV}/bin/")
        if argv[0].endswith("/flask"):
            assert argv[1:4] == ["--app", "pbem", "pbem"]
            command = pbem_cli.commands[argv[4]]
            options = {opt for param in command.params for opt in param.opts}
            assert set(argv[5:]) <= options, f"{name}: {argv[5:]} not options of {argv[4]}"
        else:
            assert argv[0].endswith("/gunicorn") and argv[-1] == "pbem:create_app()"
            assert "python:pbem.gunicorn_conf" in argv and "--no-control-socket" in argv


def test_the_web_unit_serves_on_loopback_where_caddy_and_nginx_send_requests():
    argv = shlex.split(settings("pbem-web.service")["ExecStart"][0])
    bind = argv[argv.index("--bind") + 1]
    assert bind == "127.0.0.1:8000"
    caddy = (ROOT / "deploy" / "caddy" / "Caddyfile").read_text()
    nginx = (ROOT / "deploy" / "nginx" / "pbem.conf").read_text()
    assert re.search(rf"^\s*reverse_proxy {re.escape(bind)}$", caddy, re.M)
    assert re.search(rf"^\s*proxy_pass http://{re.escape(bind)};$", nginx, re.M)
    assert "X-Forwarded-Proto $scheme" in nginx and "X-Forwarded-For" in nginx
