"""The example client of the JSON API (docs/api_client.py) plays whole games against a
real server (``pbem serve``: gunicorn, the clock, the receiver, as processes, mailing a
real SMTP server on loopback): one client process per seat, both seats of a 2-player
game through the API, each seat's token taken from the emails the server sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.server.helpers import poll_until
from tests.server.test_serve import ROOT, SECRET, Served, free_ports

CLIENT = ROOT / "docs" / "api_client.py"
PLAYERS = ("Ann <ann@example.com>", "Bob <bob@example.com>")


def page_token(smtp, address: str) -> str:
    """The token of the game page link in the first email to ``address`` that has one."""
    for mail in smtp.to(address):
        for url in mail.text_links():
            path = urlsplit(url).path
            if path.startswith("/g/") and path.count("/") == 2:
                return path.rsplit("/", 1)[1]
    raise AssertionError(f"no game page link mailed to {address}")


def host_view(base: str, admin: str) -> dict:
    request = urllib.request.Request(f"{base}/api/v1/host",
                                     headers={"Authorization": f"Bearer {admin}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_the_example_client_plays_a_whole_game_for_each_seat(tmp_path: Path, sqlite_template,
                                                              smtp, game):
    smtp.start()
    port = free_ports()
    base = f"http://127.0.0.1:{port}"
    settings = {"PBEM_MAIL_BACKEND": "smtp", "PBEM_SMTP_HOST": "127.0.0.1",
                "PBEM_SMTP_PORT": str(smtp.port), "PBEM_BASE_URL": base,
                "PBEM_MAIL_FROM": "Games <games@example.com>", "PBEM_WEB_WORKERS": "3",
                "PBEM_API_WAIT_SECONDS": "10",
                "PBEM_API_WAIT_SLOTS": "2", "PBEM_API_WAIT_DIR": str(tmp_path / "waits")}
    server = Served(tmp_path / "server", sqlite_template, port, **settings)
    try:
        server.wait_ready()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
        env |= {"PBEM_DATABASE_URL": f"sqlite:///{server.folder / 'pbem.sqlite3'}",
                "PBEM_SECRET_KEY": SECRET, **settings}
        made = subprocess.run(
            [sys.executable, "-m", "flask", "--app", "pbem", "pbem", "new-game", "--game",
             game, "--start", "--seed", "5", *[f"--player={p}" for p in PLAYERS]],
            env=env, cwd=server.folder, capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr
        admin = made.stdout.split("/admin/", 1)[1].split()[0]
        poll_until(lambda: all(smtp.to(a) for a in ("ann@example.com", "bob@example.com")),
                   60, "the first emails of both seats")
        tokens = [page_token(smtp, a) for a in ("ann@example.com", "bob@example.com")]
        started = time.monotonic()
        clients = [subprocess.Popen([sys.executable, str(CLIENT), base, token, "5"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for token in tokens]
        outputs = [c.communicate(timeout=600) for c in clients]
        took = time.monotonic() - started
        for proc, (out, err) in zip(clients, outputs, strict=True):
            assert proc.returncode == 0, (out, err, server.output()[-3000:])
            assert "game finished" in out, out
        host = host_view(base, admin)
        assert host["game"]["status"] == "finished"
        played = [int(out.rsplit("moves played ", 1)[1].split()[0]) for out, _ in outputs]
        assert all(n > 0 for n in played)
        print(f"{game}: {sum(played)} moves by the two clients in {took:.1f} s, "
              f"version {host['game']['version']}")
    finally:
        server.stop()
