"""The dev mailbox as a person uses it in the browser: the list, one email, its links."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from flask import Flask
from playwright.sync_api import BrowserContext, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from sqlalchemy import func, or_
from sqlmodel import select

from pbem.db import read_scope
from pbem.models import Outbox


@dataclass
class Mail:
    name: str
    to: str
    subject: str
    preview: str  # the first line, which mail programs show under the subject


class Mailbox:
    """The /dev/mail pages, as a person uses them: open the list, click a subject."""

    def __init__(self, page: Page, base: str, app: Flask | None = None) -> None:
        self.page, self.base, self.app = page, base, app

    def list(self) -> list[Mail]:
        """Every email so far, newest first."""
        resp = self.page.goto(self.base + "/dev/mail", wait_until="domcontentloaded")
        assert resp is not None and resp.status == 200, resp
        rows = self.page.eval_on_selector_all(
            "#mails a", "els => els.map(a => [a.getAttribute('href'), "
                        "a.closest('tr').cells[1].innerText, a.innerText, "
                        "a.closest('td').querySelector('.preview').innerText])")
        return [Mail(href.rsplit("/", 1)[-1], to, subject, preview)
                for href, to, subject, preview in rows]

    def wait(self, done, what: str, seconds: float = 10) -> list[Mail]:
        """The whole list, reloaded until ``done(list)`` holds (the clock's mail loop
        delivers a moment after the click that queued the emails). With the app at hand,
        the list is loaded once the outbox says everything due has been sent: mostly once."""
        deadline = time.monotonic() + seconds
        while True:
            if self.app is not None:
                delivered(self.app, seconds)
            mails = self.list()
            if done(mails):
                return mails
            assert time.monotonic() < deadline, f"no email {what} within {seconds} s"
            time.sleep(0.05)

    def open(self, mail: Mail) -> str:
        """Click the email in the list on screen; returns its plain-text part."""
        with self.page.expect_navigation(url=f"**/dev/mail/{mail.name}",
                                         wait_until="domcontentloaded"):
            self.page.locator(f'#mails a[href="/dev/mail/{mail.name}"]').click()
        return self.page.locator("pre").inner_text()

    def find(self, pred) -> list[Mail]:
        return [m for m in self.list() if pred(m)]


def is_result(mail: Mail) -> bool:
    return mail.preview.startswith("Game over: ")


def delivered(app: Flask, seconds: float = 10) -> None:
    """Wait until the clock's mail loop has sent every email that is due: none left
    pending or being sent (a follow-up held back for later does not count)."""
    deadline = time.monotonic() + seconds
    while True:
        with app.app_context(), read_scope() as s:  # no write lock: the server writes
            busy = s.exec(select(func.count()).select_from(Outbox).where(or_(
                Outbox.status == "sending",  # leased until next_attempt_at
                (Outbox.status == "pending") & (Outbox.next_attempt_at <= datetime.now(UTC))
            ))).one()
        if not busy:
            return
        assert time.monotonic() < deadline, f"{busy} emails still unsent after {seconds} s"
        time.sleep(0.02)


def mail_count(context: BrowserContext, base: str, app: Flask) -> int:
    """How many emails the dev mailbox lists, looked up in a second tab once the clock's
    mail loop has delivered everything queued so far."""
    delivered(app)
    other = context.new_page()
    try:
        return len(Mailbox(other, base).list())
    finally:
        other.close()


def text_link(page: Page, path_part: str):
    """The one link in the plain-text part whose address contains ``path_part``."""
    link = page.locator("pre a", has_text=path_part)
    expect(link).to_have_count(1)
    return link


def html_link(page: Page, name: str):
    """A link in the HTML part, shown in the sandboxed frame, by its words."""
    return page.frame_locator("iframe").get_by_role("link", name=name, exact=True).first


def follow(page: Page, link, url: str) -> int:
    """Click ``link`` and wait until the page it opens (matching ``url``) has loaded;
    returns how many clicks were lost on the way.

    Links in the email frame are in a sandboxed, out-of-process frame, and Chromium sends a
    click there by the hit-test data it last painted: a click right after Playwright
    scrolled the link into view (or while the frame is still painting) can land on the
    old picture and nothing happens. A person clicks again; so does this. A lost click
    starts no navigation, so clicking again never acts twice (and the links only open
    confirmation pages)."""
    for lost in range(3):
        link.scroll_into_view_if_needed()
        page.evaluate("() => new Promise(r => requestAnimationFrame("
                      "() => requestAnimationFrame(r)))")
        try:
            with page.expect_navigation(url=url, wait_until="domcontentloaded",
                                        timeout=3_000):
                link.click()
            return lost
        except PlaywrightTimeoutError:
            continue
    raise AssertionError(f"three clicks on {link} did not open {url}")
