"""A tiny authoritative DNS server for the tests: UDP on a loopback port, answering real
DNS packets (dnspython's message API) from a table of records set by the test, so code
under test resolves through an ordinary resolver pointed at it. A name with no records
of any type is NXDOMAIN; a name with records of other types answers NOERROR and empty."""

from __future__ import annotations

import contextlib
import socket
import threading

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class DnsStub:
    """``records[(name, type)] = [rdata text, ...]``, e.g.
    ``records[("example.org", "TXT")] = ['"v=spf1 -all"']``; change it at any time."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], list[str]] = {}
        self.queries: list[tuple[str, str]] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True, name="dns-stub")

    @property
    def server(self) -> str:
        """The ``ip:port`` to hand to PBEM_DNS_SERVER."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> DnsStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        self._thread.join(5)

    def _serve(self) -> None:
        while True:
            try:
                wire, peer = self._sock.recvfrom(65535)
            except OSError:
                return  # closed
            try:
                answer = self.answer(dns.message.from_wire(wire))
            except Exception:  # noqa: BLE001 - a packet we cannot read: no answer
                continue
            with contextlib.suppress(OSError):
                self._sock.sendto(answer.to_wire(max_size=65535), peer)

    def answer(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        kind = dns.rdatatype.to_text(question.rdtype)
        self.queries.append((name, kind))
        found = self.records.get((name, kind))
        if found:
            response.answer.append(dns.rrset.from_text_list(
                question.name, 300, dns.rdataclass.IN, question.rdtype, found))
        elif not any(n == name for n, _ in self.records):
            response.set_rcode(dns.rcode.NXDOMAIN)
        return response


def txt(*texts: str) -> list[str]:
    """TXT rdata in zone-file form, each text quoted (split in 255-byte strings)."""
    out = []
    for text in texts:
        parts = [text[i:i + 255] for i in range(0, len(text), 255)] or [""]
        out.append(" ".join('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"'
                            for p in parts))
    return out
