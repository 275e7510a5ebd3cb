"""Replying to the server's emails as mail programs do, over SMTP into the real inbound
receiver (``pbem.mail.receive``) on a loopback port.

``reply_to(mail, text)`` writes the reply a mail program would send: the player's words,
then the email answered, quoted under an "On ... wrote:" line (or a German mail
program's "Am ... schrieb ...:"), with In-Reply-To and References; ``html=True`` sends
only an HTML part (the quoted email in a ``blockquote``); ``signature`` adds one.
"""

from __future__ import annotations

import smtplib
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr

from pbem import services
from pbem.mail import receive
from tests.pgcluster import free_port

QUOTE_HEADERS = {
    "en": "On Fri, 27 Nov 2026 at 10:15, pbem <games@pbem.test> wrote:",
    "de": "Am Fr., 27. Nov. 2026 um 10:15 Uhr schrieb pbem <games@pbem.test>:",
}


class Inbound:
    """The inbound SMTP receiver of ``app`` on a free loopback port."""

    def __init__(self, app, port: int | None = None) -> None:
        self.app = app
        self.port = port or free_port()
        self.controller = receive.smtp_receiver(app, services.receive_reply,
                                                host="127.0.0.1", port=self.port)

    def send(self, raw: bytes, sender: str, rcpts: list[str]) -> None:
        """Hand ``raw`` to the receiver as a mail server would (the receiver answers
        only once the message was acted on)."""
        with smtplib.SMTP("127.0.0.1", self.port, timeout=60) as smtp:
            smtp.sendmail(sender, rcpts, raw)

    def reply(self, mail, text: str, **kwargs) -> EmailMessage:
        """Reply to ``mail`` (a tests.server.helpers.Mail) with ``text``; the reply."""
        msg = reply_to(mail, text, **kwargs)
        self.send(wire(msg), kwargs.get("sender") or mail.to_addr,
                  [parseaddr(str(msg["To"]))[1]])
        return msg

    def stop(self) -> None:
        self.controller.stop()


def wire(msg: EmailMessage) -> bytes:
    """The message's bytes as they go on the wire (CRLF line ends: smtplib sends bytes
    as they are)."""
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


def reply_address(mail) -> str:
    return parseaddr(str(mail.msg["Reply-To"]))[1]


def reply_to(mail, text: str, sender: str | None = None, lang: str = "en",
             html: bool = False, signature: str | None = None,
             message_id: str | None = None, headers: dict[str, str] | None = None,
             to: str | None = None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender or mail.to_addr
    msg["To"] = to or str(mail.msg["Reply-To"])
    msg["Subject"] = "Re: " + mail.subject
    msg["Date"] = formatdate()
    msg["Message-ID"] = message_id or make_msgid(domain="example.com")
    msg["In-Reply-To"] = mail.message_id
    msg["References"] = mail.message_id
    for name, value in (headers or {}).items():
        msg[name] = value
    quoted = "\n".join("> " + line for line in mail.text.splitlines())
    sig = f"\n\n-- \n{signature}" if signature else ""
    if html:
        body = "".join(f"<div>{line}</div>" for line in text.splitlines())
        msg.set_content(f"<html><body>{body}<br><div class=\"gmail_quote\">"
                        f"{QUOTE_HEADERS[lang]}<blockquote>{mail.html}</blockquote>"
                        "</div></body></html>", subtype="html")
    else:
        msg.set_content(f"{text}{sig}\n\n{QUOTE_HEADERS[lang]}\n\n{quoted}\n")
    return msg
