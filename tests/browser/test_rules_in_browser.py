"""The rules pages in Chromium (issue 11): readable on a 390 px phone and at 1280 px, in
both languages: no sideways scrolling, every text at a contrast of 4.5:1 or better, and
a glossary link from an email lands on its entry."""

from __future__ import annotations

import pytest

from engine.registry import listings

# Every element with text of its own: its colour against the first opaque background
# behind it (WCAG relative luminance). Returns the worst offenders.
CONTRAST_JS = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bg = el => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const bad = [];
  for (const el of document.querySelectorAll('main *')) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || el.closest('.sr-only')) continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) bad.push(el.tagName + '.' + el.className + ' ' + ratio.toFixed(2));
  }
  return bad.slice(0, 10);
}"""


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("game", sorted(listings()))
def test_a_rules_page_fits_the_screen_and_reads_well(live_server, browser, game, lang,
                                                     width) -> None:
    page = browser.new_page(viewport={"width": width, "height": 844})
    try:
        page.goto(f"{live_server.url}/rules/{game}?lang={lang}")
        assert page.evaluate("document.documentElement.lang") == lang
        assert page.evaluate(
            "document.documentElement.scrollWidth <= window.innerWidth"), "sideways scroll"
        assert page.evaluate(CONTRAST_JS) == []
        assert page.locator(".rcard").count() >= 60
    finally:
        page.close()


def test_a_glossary_link_lands_on_its_entry(live_server, browser) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(f"{live_server.url}/rules/cavemen?lang=de#term-conch")
        top = page.evaluate("document.getElementById('term-conch').getBoundingClientRect().top")
        assert 0 <= top < 100
        assert page.locator("#term-conch").inner_text() == "Muschel"
        background = page.evaluate(
            "getComputedStyle(document.getElementById('term-conch')).backgroundColor")
        assert background != "rgba(0, 0, 0, 0)"  # the entry arrived at is highlighted
    finally:
        page.close()
