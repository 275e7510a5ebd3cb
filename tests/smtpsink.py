"""A real SMTP server (aiosmtpd) on a loopback port chosen up front, for the tests and the
benches. ``port=0`` does not work with aiosmtpd's Controller, so a free port is picked
first; the server can be started late or stopped, to play a mail server that is down."""

from __future__ import annotations

from tests.pgcluster import free_port


class SmtpSink:
    """Accepts every message and hands it to ``received(envelope)``."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self._controller = None

    def received(self, envelope) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd's hook
        self.received(envelope)
        return "250 Message accepted for delivery"

    def start(self) -> None:
        from aiosmtpd.controller import Controller

        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None
