"""Numeric settings are checked as the app is made (``pbem.settings``): text that reads
as a number becomes one, and a setting that is not a usable number (text, infinite, a
fraction where a count is meant, a negative wait, a lease of 0) stops the server with a
message naming the variable, what it is and why, and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pbem import DefaultConfig, create_app, settings


def checked(**values: object) -> dict[str, object]:
    config: dict[str, object] = dict(values)
    settings.check_numbers(config, DefaultConfig)
    return config


def test_text_that_reads_as_a_number_becomes_one_of_the_defaults_kind():
    config = checked(BOT_LEASE_SECONDS="45", WEB_WORKERS="3", BOT_CPU_GAME_SECONDS=" 7.5 ",
                     TAKEBACK_GRACE_SECONDS=0, SMTP_TIMEOUT="0.5")
    assert config["BOT_LEASE_SECONDS"] == 45.0
    assert config["WEB_WORKERS"] == 3 and isinstance(config["WEB_WORKERS"], int)
    assert config["BOT_CPU_GAME_SECONDS"] == 7.5
    assert config["TAKEBACK_GRACE_SECONDS"] == 0  # 0 is a fine grace: none
    assert config["SMTP_TIMEOUT"] == 0.5  # a time may be a fraction where its default is not
    assert config["CLOCK_INTERVAL"] == DefaultConfig.CLOCK_INTERVAL  # unset: the default


@pytest.mark.parametrize(("name", "value", "why"), [
    ("BOT_LEASE_SECONDS", "30s", "not a number"),
    ("BOT_LEASE_SECONDS", 0, "must be more than 0"),
    ("BOT_POLL_SECONDS", -1, "must be more than 0"),
    ("BOT_CPU_HOST_SECONDS", "-5", "must not be negative"),
    ("BOT_CPU_GAME_SECONDS", float("inf"), "not a finite number"),
    ("BOT_CPU_GAME_SECONDS", "nan", "not a finite number"),
    ("WEB_WORKERS", 2.5, "not a whole number"),
    ("BOT_WORKERS", True, "not a number"),
    ("BOT_NICE", 40, "must be from -20 to 19"),
    ("SMTP_PORT", 70000, "must be from 1 to 65535"),
    ("MAIL_POLL_INTERVAL", None, "not a number"),
])
def test_a_setting_that_is_no_usable_number_is_named_with_its_value_and_why(name, value,
                                                                            why):
    with pytest.raises(settings.SettingsError) as refused:
        checked(**{name: value})
    assert f"PBEM_{name} is {value!r}: {why}" in str(refused.value)


def test_every_bad_setting_is_named_at_once():
    with pytest.raises(settings.SettingsError) as refused:
        checked(BOT_LEASE_SECONDS="x", CLOCK_INTERVAL=0)
    assert "PBEM_BOT_LEASE_SECONDS" in str(refused.value)
    assert "PBEM_CLOCK_INTERVAL" in str(refused.value)


def test_the_app_is_not_made_with_a_bad_setting():
    with pytest.raises(settings.SettingsError, match="PBEM_BOT_LEASE_SECONDS"):
        create_app({"BOT_LEASE_SECONDS": 0, "MAIL_BACKEND": "memory"})


@pytest.mark.parametrize("command", [["pbem", "bots", "--workers", "1"], ["pbem", "serve"],
                                     ["--help"]])
def test_a_command_with_a_bad_setting_says_which_and_fails_without_a_traceback(
        tmp_path: Path, command: list[str]):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env |= {"PBEM_DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}",
            "PBEM_MAIL_BACKEND": "dev", "PBEM_SECRET_KEY": "k" * 40,
            "PBEM_BOT_LEASE_SECONDS": "30s"}
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "pbem", *command],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "PBEM_BOT_LEASE_SECONDS is '30s': not a number" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    if command != ["--help"]:  # the help is shown all the same (without pbem's commands)
        assert done.returncode != 0
        assert "started" not in done.stdout


@pytest.mark.parametrize(("command", "option"), [
    (["bots", "--workers"], "--workers"), (["serve", "--workers"], "--workers"),
    (["serve", "--bot-workers"], "--bot-workers")])
@pytest.mark.parametrize("value", ["-1", "100000"])
def test_a_number_of_worker_processes_out_of_range_is_refused_before_anything_starts(
        command: list[str], option: str, value: str):
    app = create_app({"MAIL_BACKEND": "memory", "DATABASE_URL": "sqlite://"})
    result = app.test_cli_runner().invoke(args=["pbem", *command, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert "started" not in result.output
