"""Mail servers for the tests and the benches, on loopback ports chosen up front: a real
SMTP server (aiosmtpd; ``port=0`` does not work with its Controller), which can be started
late or stopped to play a mail server that is down, and a tarpit that accepts connections
and never answers, to play one that is hung."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from tests.pgcluster import free_port


class SmtpSink:
    """Accepts every message and hands it to ``received(envelope)``."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self._controller = None
        self.arrived = threading.Condition()  # notified after each message is received

    def received(self, envelope) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd's hook
        self.received(envelope)
        with self.arrived:
            self.arrived.notify_all()
        return "250 Message accepted for delivery"

    def start(self) -> None:
        from aiosmtpd.controller import Controller

        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


class Tarpit:
    """A TCP server that accepts and then holds every connection without a word: a mail
    server that is hung (no 220 greeting ever comes)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.held: list[socket.socket] = []
        self.accepted = 0
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self, retry_for: float = 10.0) -> None:
        """Listen (retrying a little: the port may just have been freed by a stopped
        SMTP sink) and hold whatever connects."""
        end = time.monotonic() + retry_for
        while True:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", self.port))
                break
            except OSError:
                sock.close()
                if time.monotonic() > end:
                    raise
                time.sleep(0.2)
        sock.listen(64)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept, daemon=True, name="tarpit")
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            self.accepted += 1
            self.held.append(conn)

    def stop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()
            self._sock = None
        for conn in self.held:
            with contextlib.suppress(OSError):
                conn.close()
        self.held.clear()
