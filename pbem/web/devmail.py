"""The dev mailbox: the emails the dev backend wrote, in the browser of this machine only
(404 for any other address, and with any other mail backend)."""

from __future__ import annotations

import email
import email.policy
import email.utils
import ipaddress
import secrets
import smtplib
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from flask import (
    Blueprint,
    abort,
    current_app,
    render_template,
    request,
    session,
)
from flask.typing import ResponseReturnValue

from pbem import mail
from pbem.mail.inbound import reply_message
from pbem.web.common import (
    CSP_MAILBOX,
    SCRIPTS,
    check_csrf,
    message_page,
    see_other,
)

bp = Blueprint("devmail", __name__)


def _mailbox() -> mail.DevMailbox:
    """The dev mailbox, only with the dev backend and only for this machine's browser."""
    box = mail.backend()
    if not isinstance(box, mail.DevMailbox) or not _from_loopback():
        abort(404)
    return box


def _from_loopback() -> bool:
    try:
        return ipaddress.ip_address(request.remote_addr or "").is_loopback
    except ValueError:
        return False


@bp.get("/dev/mail")
def dev_mailbox() -> ResponseReturnValue:
    box = _mailbox()
    items = []
    for path in box.messages()[:500]:
        try:
            stat = path.stat()
        except FileNotFoundError:  # removed since the listing
            continue
        items.append(_summary(str(path), stat.st_mtime_ns, stat.st_size))
    return render_template("pages/mailbox.html", items=items,
                           replied=request.args.get("done") == "replied")


@lru_cache(maxsize=2048)
def _summary(path: str, mtime_ns: int, size: int) -> dict[str, object]:
    """One row of the list. The files are written whole and never changed, so a row is
    parsed once (keyed by the file's time and size in case one is replaced): parsing every
    email on each view took a tenth of a second for two hundred emails."""
    msg = email.message_from_bytes(Path(path).read_bytes(), policy=email.policy.default)
    return {"name": Path(path).name, "to": msg["To"], "subject": msg["Subject"],
            "date": _sent_at(msg), "preview": _preview(msg)}


def _sent_at(msg: email.message.EmailMessage) -> datetime | None:
    """When the email was sent (its Date header), in UTC; None if unreadable."""
    try:
        return email.utils.parsedate_to_datetime(str(msg["Date"])).astimezone(UTC)
    except (TypeError, ValueError, IndexError):
        return None


def _preview(msg: email.message.EmailMessage) -> str:
    text = msg.get_body(("plain",))
    return text.get_content().strip().split("\n", 1)[0] if text else ""


def _message(name: str) -> email.message.EmailMessage:
    box = _mailbox()
    path = box.dir / Path(name).name
    if not name.endswith(".eml") or not path.is_file():
        abort(404)
    return email.message_from_bytes(path.read_bytes(), policy=email.policy.default)


@bp.get("/dev/mail/<name>")
def dev_message(name: str) -> ResponseReturnValue:
    msg = _message(name)
    html = msg.get_body(("html",))
    text = msg.get_body(("plain",))
    resp = current_app.make_response(render_template(
        "pages/mail_message.html", msg=msg, html=html.get_content() if html else None,
        text=text.get_content() if text else "", date=_sent_at(msg),
        csrf=session.setdefault("csrf", secrets.token_urlsafe(16))))
    resp.headers["Content-Security-Policy"] = CSP_MAILBOX + SCRIPTS
    return resp



@bp.post("/dev/mail/<name>/reply")
def dev_reply(name: str) -> ResponseReturnValue:
    """The reply box: send ``text`` as the email's addressee would answer it, by SMTP to
    the inbound receiver (``make run`` starts it on loopback), as a mail server would."""
    msg = _message(name)
    check_csrf()
    if not msg["Reply-To"]:
        abort(404)
    config = current_app.config
    reply = reply_message(msg, request.form.get("text", "")[:5000])
    try:
        with smtplib.SMTP(config["INBOUND_HOST"], int(config["INBOUND_PORT"]),
                          timeout=30) as smtp:
            smtp.send_message(reply)
    except (OSError, smtplib.SMTPException) as exc:
        return message_page("Reply not sent", f"The inbound receiver at "
                            f"{config['INBOUND_HOST']}:{config['INBOUND_PORT']} did not take "
                            f"it ({exc}); start it with: flask --app pbem pbem inbound", 502)
    return see_other("/dev/mail", done="replied")
