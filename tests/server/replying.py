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
from tests.server.helpers import Mail
from tests.smtpsink import SmtpSink

QUOTE_HEADERS = {
    "en": "On Fri, 27 Nov 2026 at 10:15, pbem <games@pbem.test> wrote:",
    "de": "Am Fr., 27. Nov. 2026 um 10:15 Uhr schrieb pbem <games@pbem.test>:",
}


class TimedSmtp(SmtpSink):
    """An SMTP server that keeps every message as its recipient reads it, with the
    moment it arrived (``time.monotonic``)."""

    def __init__(self) -> None:
        super().__init__()
        self.mails: list[Mail] = []
        self.times: list[float] = []

    def received(self, envelope) -> None:
        import time

        self.times.append(time.monotonic())
        self.mails.append(Mail.parse(envelope.original_content or envelope.content))


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


# --------------------------------------------------------------------------- reading emails

LISTS = ("Or answer this email with a command", "Oder antworte auf diese E-Mail mit einem Befehl",
         "Answer this email with one of these commands", "Antworte auf diese E-Mail mit einem")


def listed_in(mail) -> list[str]:
    """The command lines an email lists, as its reader sees them in the text part: the
    indented lines after the sentence that introduces them (not the note on lines with
    numbers, not the count of moves left for the game page)."""
    lines, out = mail.text.splitlines(), []
    start = next(i for i, line in enumerate(lines) if line.startswith(LISTS))
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        if not line.strip().startswith(("(", "…")):
            out.append(line.strip())
    return out


def offered_in_refusal(answer) -> list[str]:
    """The commands an answer to a refused reply offers under its reason."""
    lines = answer.text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("Not played:",
                                                                      "Nicht gespielt:")))
    return [line.strip() for line in lines[start + 2:] if line.startswith("    ")][:10]


# --------------------------------------------------------------------------- whole games

STYLES = ("plain", "html", "german", "signature")


def typed(action, card, rng) -> str:
    """``action`` as a person might type it from the email's list: lower case, a printed
    name in full, by its last word or by the first letters of its words, the kind
    sometimes shortened, a number sometimes first (``place 3 forest``)."""
    from pbem.commands import _CODE_RE

    kind = action.kind
    if len(kind) > 5 and rng.random() < 0.3:
        kind = kind[:4]
    parts: list[str] = []
    numbers: list[str] = []
    for _, value in action.args:
        for word in value if isinstance(value, tuple) else (value,):
            if isinstance(word, int) or (isinstance(word, str) and word.isdigit()):
                numbers.append(str(word))
            elif isinstance(word, str) and _CODE_RE.search(word):
                name = str(card(word).get("name", word)).lower().split()
                pick = rng.randrange(3)
                parts.append(" ".join(name) if pick == 0 or len(name) == 1 and pick == 1
                             else name[-1] if pick == 1
                             else " ".join(w[:4] for w in name))
            else:
                parts.append(str(word))
    if numbers and parts and rng.random() < 0.5:
        return " ".join([kind, *numbers, *parts])
    return " ".join([kind, *parts, *numbers])


class ReplyGame:
    """Plays a started game only by replying to its emails over SMTP into the inbound
    receiver, as the game's heuristic bot would choose, typed as a person types
    (``typed``); when the same seat decides again next, both moves go in one reply, one
    a line. A refused reply is tried again with the command exactly as the answer lists
    it. Counts what the note quotes: replies, replies played at the first try, and the
    time from each reply handed to the receiver to the next decision email it caused
    arriving at the SMTP server."""

    def __init__(self, app, smtp, inbound: Inbound, game_id: str, seed: int) -> None:
        import random

        self.app, self.smtp, self.inbound, self.game_id = app, smtp, inbound, game_id
        self.rng = random.Random(seed)
        self.read = 0
        self.replies = self.first_try = 0
        self.latencies: list[float] = []
        self.results: list = []
        self.styles: dict[str, int] = {}
        self.refused: list[tuple[str, str]] = []  # (typed line, why) refused at first
        self.answers_refused: set[str] = set()
        self.answers: list = []

    def new_mail(self, timeout: float = 30):
        with self.smtp.arrived:
            assert self.smtp.arrived.wait_for(lambda: self.read < len(self.smtp.mails),
                                              timeout=timeout), "no further email arrived"
        mail = self.smtp.mails[self.read]
        at = self.smtp.times[self.read]
        self.read += 1
        return mail, at

    def play(self, players: int, max_replies: int = 3000) -> None:
        import json
        import time

        from engine.registry import get_game
        from pbem import localize
        from pbem.db import session_scope
        from pbem.models import Decision, Game

        sent_at: float | None = None
        while len(self.results) < players:
            assert self.replies < max_replies, "the game does not end"
            mail, at = self.new_mail()
            if mail.template == "result":
                self.results.append(mail)
                continue
            if mail.template == "reply":  # what it says is checked by _settled
                self.answers.append(mail)
                continue
            if mail.template != "decision":
                continue
            with self.app.app_context(), session_scope() as s:
                decision = s.get(Decision, mail.decision_id)
                game = s.get(Game, self.game_id)
                if decision.closed_at is not None:
                    continue  # played by the line after the one that opened it
                mod = get_game(game.engine)
                state = mod.from_json(json.loads(game.state))
                lang = mail.msg["Content-Language"] or "en"
            if sent_at is not None:
                self.latencies.append(at - sent_at)
                sent_at = None
            card = localize.lookup(mod, state, localize.translation_for(mod, state, lang))
            lines, position = [], decision.position
            bot = mod.BOTS["heuristic"]
            while True:
                choice = bot(state, position, self.rng)
                lines.append((typed(choice, card, self.rng), choice))
                state, _ = mod.apply(state, position, choice)
                pending = mod.pending(state)
                if not pending or pending[0].seat != position or len(lines) == 3:
                    break
            style = STYLES[self.replies % len(STYLES)]
            self.styles[style] = self.styles.get(style, 0) + 1
            kwargs = {"plain": {}, "html": {"html": True}, "german": {"lang": "de"},
                      "signature": {"signature": "Cheers\nSent from my phone"}}[style]
            sent_at = time.monotonic()
            self.inbound.reply(mail, "\n".join(t for t, _ in lines), **kwargs)
            self.replies += 1
            if self._settled(lines, card):
                self.first_try += 1

    def _last_answer(self):
        from sqlmodel import col, select

        from pbem.db import session_scope
        from pbem.models import Outbox

        with self.app.app_context(), session_scope() as s:
            return s.exec(select(Outbox).where(Outbox.game_id == self.game_id,
                                               Outbox.template == "reply")
                          .order_by(col(Outbox.id).desc())).first()

    def _settled(self, lines: list, card) -> bool:
        """Whether the reply just sent was played whole; if not, reply to its answer
        with the rest of the commands exactly as the answer lists them (it must play)."""
        from pbem.commands import spoken_action

        row = self._last_answer()
        results = row.context["results"]
        played = sum(1 for r in results if r["status"] == "recorded")
        if played == len(lines):
            return True
        refused = [r for r in results if r["status"] != "recorded"]
        assert refused, row.context
        assert refused[0]["status"] in ("illegal", "ambiguous", "incomplete"), results
        self.refused.append((refused[0]["line"], refused[0]["status"]))
        self.answers_refused.add(row.message_id)
        answer = self._wait_for(row.message_id)
        self.inbound.reply(answer, "\n".join(spoken_action(a, card) for _, a in lines[played:]))
        again = self._last_answer().context["results"]
        assert [r["status"] for r in again] == ["recorded"] * (len(lines) - played), again
        return False

    def _wait_for(self, message_id: str):
        with self.smtp.arrived:
            assert self.smtp.arrived.wait_for(
                lambda: any(m.message_id == message_id for m in self.smtp.mails), timeout=30)
        return next(m for m in self.smtp.mails if m.message_id == message_id)
