"""An email's bytes are written directly (``pbem.mail.compose.wire_message``), not by the
``email`` package's generator: they must be exactly what ``MIMEMultipart`` with two
quoted-printable UTF-8 parts writes with the ``WIRE`` policy, headers and all."""

from __future__ import annotations

import binascii
import email
import email.policy
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart

import pytest

from pbem.mail import compose
from pbem.mail.headers import WIRE, unstructured

TOKEN = 1234567890123  # the boundary's random number, fixed for the comparison
BODIES = [
    ("Your turn: bid\nDecide by Friday.\n\n  * Pass\n    http://x.invalid/a/abc\n-- \nbye",
     "<!doctype html>\n<p style=\"color:#595959\">Grüße &amp; ‘quotes’</p>\n"),
    ("trailing newline\n", "<p>x</p>"),
    ("a carriage\r\nreturn and a lone\rone", "tabs\tand trailing spaces   \nend"),
    ("--===============0000001234567890123==\nlooks like a boundary", "=3D==" * 40),
    ("x" * 300 + "\n" + "ü" * 100, "<p>" + "long line " * 50 + "</p>"),
    ("", ""),
]


def headers(msg):
    msg["Subject"] = unstructured("Höhlenmenschen: Ännchen, Jürgen und Groß " + "x" * 40)
    msg["From"] = "pbem <games@x.invalid>"
    msg["To"] = "=?utf-8?b?w4RubmNoZW4=?= <a@x.invalid>"
    msg["Message-ID"] = "<pbem.decision.1.abcdef01@x.invalid>"
    msg["List-Unsubscribe"] = "<http://x.invalid/u/" + "T" * 43 + ">"
    msg["Content-Language"] = "de"


def generated(text: str, html: str) -> bytes:
    """What the code before ``wire_message`` wrote (the email package's generator)."""
    msg = MIMEMultipart("alternative", boundary="=" * 15 + f"{TOKEN:019d}" + "==")
    headers(msg)
    for body, subtype in ((text, "plain"), (html, "html")):
        part = MIMENonMultipart("text", subtype, charset="utf-8")
        part["Content-Transfer-Encoding"] = "quoted-printable"
        part.set_payload(binascii.b2a_qp(body.encode("utf-8"), istext=True).decode("ascii"))
        msg.attach(part)
    return msg.as_bytes(policy=WIRE)


@pytest.mark.parametrize(("text", "html"), BODIES)
def test_the_wire_bytes_are_what_the_email_package_writes(monkeypatch, text, html):
    monkeypatch.setattr(compose.random, "randrange", lambda _: TOKEN)
    data, names = compose.wire_message(headers, text, html)
    assert data == generated(text, html)
    assert names == {"content-type", "mime-version", "subject", "from", "to", "message-id",
                     "list-unsubscribe", "content-language"}
    parsed = email.message_from_bytes(data, policy=email.policy.default)
    plain, rich = (p.get_content() for p in parsed.iter_parts())
    assert lines(plain) == lines(text)
    assert lines(rich) == lines(html)


def lines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def test_each_message_gets_a_boundary_of_its_own():
    one, _ = compose.wire_message(headers, "a", "b")
    two, _ = compose.wire_message(headers, "a", "b")
    assert one != two
    assert one.count(b"--===============") == 3
