"""An email's bytes are written directly (``pbem.mail.compose.wire_message``), not by the
``email`` package's generator: they must be exactly what ``MIMEMultipart`` with two
quoted-printable UTF-8 parts writes with the ``WIRE`` policy, headers and all."""

from __future__ import annotations

import binascii
import email
import email.policy
import random
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart

import pytest

from pbem.mail import compose
from pbem.mail import headers as headers_module
from pbem.mail.headers import WIRE, mailbox, unstructured

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


def whole_body_qp(body: str) -> bytes:
    """A body quoted-printable in one piece, as ``compose._qp`` did before it kept lines."""
    return binascii.b2a_qp(body.encode("utf-8"), istext=True).replace(b"\n", b"\r\n")


# Lines where b2a_qp's choices depend on what follows a character: a space or tab at the
# end of a line (before its line end, or at the very end), a lone dot, "=" and 8-bit
# characters near the 76th column (a soft line break before an escape), empty lines.
TRICKY = ["", ".", ". ", "a.", "x" * 72 + " ", "x" * 73 + "\t", "x" * 74 + " ", "x" * 75,
          "x" * 76, "x" * 77 + " ", "x" * 73 + "=", "x" * 74 + "ü", "x" * 75 + "==",
          "=" * 30, "ü" * 40, "tab\tinside", "  ", "\t", "end ", "<p style=\"a:b\">"]


def test_kept_lines_encode_as_the_whole_body_byte_for_byte(monkeypatch):
    monkeypatch.setattr(compose, "_QP_LINES", {})
    rng = random.Random(35)
    bodies = ["\n".join(TRICKY), "\n".join(TRICKY) + "\n", "\n\n", "only one line "]
    for _ in range(300):
        bodies.append("\n".join(rng.choice(TRICKY) + rng.choice(TRICKY)
                                for _ in range(rng.randrange(1, 12)))
                      + rng.choice(["", "\n", " ", "\n\n"]))
    for body in bodies * 2:  # the second time from the kept lines
        assert compose._qp(body) == whole_body_qp(body), body
    assert compose._QP_LINES  # lines were kept


def test_kept_lines_are_bounded(monkeypatch):
    monkeypatch.setattr(compose, "_QP_LINES", {})
    monkeypatch.setattr(compose, "_QP_LINES_KEPT", 10)
    body = "\n".join(f"line {i} =" for i in range(25))
    assert compose._qp(body) == whole_body_qp(body)
    assert 0 < len(compose._QP_LINES) <= 10


def test_kept_header_folds_are_the_policys_own(monkeypatch):
    """``WIRE`` keeps how a header folds (a str, or ``unstructured``'s Header: the same
    text folds the same); a clone of the policy folds each anew: both the same bytes."""
    monkeypatch.setattr(headers_module, "_FOLDED", {})
    fresh = WIRE.clone()
    long_names = ", ".join(f"Spielerin Nummer {i} Ä" for i in range(6))
    values = [("Subject", unstructured("Höhlenmenschen: Ännchen, Jürgen und Groß " + "x" * 40)),
              ("Subject", unstructured("Steinzeit: " + long_names)),
              ("Subject", unstructured("short")),
              ("List-Id", f'"Stone Age: {", ".join(f"Player {i}" for i in range(9))}" '
                          "<abcdef.games.x.invalid>"),
              ("References", " ".join(f"<pbem.decision.{i}.abcdef01@x.invalid>"
                                      for i in range(3))),
              ("To", mailbox("Ännchen Groß-Jürgensen von und zu Hohenheim", "a@x.invalid")),
              ("X-Blanks", "two  blanks and a trailing one ")]
    for _ in range(2):  # the second time from the kept folds
        for name, value in values:
            assert WIRE.fold_binary(name, value) == fresh.fold_binary(name, value)
    assert len(headers_module._FOLDED) == len(values) - 1  # "short" is written as it is
