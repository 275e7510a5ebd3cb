"""A real HTTPS receiver of chat webhooks for the tests: ``http.server`` in a thread of
its own behind ``ssl``, on 127.0.0.1, with a certificate for ``localhost`` made by the
``openssl`` command (a self-signed one, trusted by the app through ``WEBHOOK_CA_FILE``).
It keeps every request it gets and answers as told: a status (a 3xx with a Location),
after a delay (a slow receiver).

The certificate comes from the ``openssl`` command rather than the ``trustme`` package:
it is on every machine that has Python's ``ssl`` (Debian's ``openssl``, macOS), and so
the tests need no new entry in the lock file."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for ``localhost`` and 127.0.0.1."""
    cert, key = folder / "receiver.pem", folder / "receiver.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-addext", "basicConstraints=critical,CA:TRUE"],
        check=True, capture_output=True, timeout=30)
    return cert, key


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """The receiver; ``status``, ``delay`` and ``location`` say how it answers next."""

    cert: Path
    key: Path
    got: list[Received] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    location: str = ""

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.got.append(Received(self.path, dict(self.headers), body))
                if receiver.delay:
                    time.sleep(receiver.delay)
                try:
                    self.send_response(receiver.status)
                    if receiver.location:
                        self.send_header("Location", receiver.location)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:  # the client gave up (a slow receiver's test)
                    self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.05})
        self.thread.start()
        return self

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "/hook") -> str:
        return f"https://localhost:{self.port}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
