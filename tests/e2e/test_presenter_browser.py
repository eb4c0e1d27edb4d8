"""Presenter mode in a real browser: no sidebar, larger lettering, the keyboard stepping through the
page's stops, its sections and on to the next page, Esc leaving; "reset this page"; both languages."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from ui.i18n import LANGS, translate

MAIN = "[data-testid='stMain']"
STATE_JS = """() => {
  const main = document.querySelector("[data-testid='stMain']");
  const on = document.querySelector(".st-key-masks-section [role=radio][aria-checked=true]");
  return {top: main.scrollTop, end: main.scrollTop + main.clientHeight >= main.scrollHeight - 4,
          section: on ? on.innerText : null};
}"""


def state(p) -> dict:
    return p.evaluate(STATE_JS)


def press_until(p, key: str, done, tries: int = 25) -> dict:
    """Press ``key`` (on the page itself, nothing focused) until ``done(state)``; the state reached."""
    for _ in range(tries):
        p.evaluate("() => document.activeElement && document.activeElement.blur()")
        p.keyboard.press(key)
        p.wait_for_timeout(250)
        now = state(p)
        if done(now):
            return now
    raise AssertionError(f"{key} never reached the state wanted: {now}")


@pytest.mark.parametrize("lang", LANGS)
def test_presenter_mode_steps_through_sections_and_pages_with_the_keyboard(page, wait_for_app, screenshot, lang):
    p = page(f"/masks?lang={lang}&present=1", locale="zh-CN" if lang == "zh" else "en-US")
    bar = p.locator(".st-key-tp_presenter")
    expect(bar).to_be_visible()
    expect(bar).to_contain_text(translate("common.presenter.leave", lang))
    expect(p.locator("section[data-testid='stSidebar']")).to_be_hidden()
    assert p.evaluate("() => getComputedStyle(document.documentElement).fontSize") == "22px"
    p.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 1")
    screenshot(p, f"presenter_masks_{lang}")
    first = state(p)["section"]
    assert first == translate("masks.matrices.heading", lang)

    # → scrolls down stop by stop; at the page's end it opens the next section, its picker at the top.
    reached = press_until(p, "ArrowRight", lambda s: s["section"] != first)
    assert reached["section"] == translate("masks.printout.heading", lang)
    wait_for_app(p)
    picker_top = p.evaluate("() => document.querySelector('.st-key-masks-section').getBoundingClientRect().top")
    assert 40 < picker_top < 140
    # ← with the picker at the top goes back a section.
    p.keyboard.press("ArrowLeft")
    expect(p.locator(".st-key-masks-section [role=radio][aria-checked=true]")).to_have_text(first)
    wait_for_app(p)

    # Arrows typed into a text box stay there.
    box = p.locator(f"{MAIN} textarea").first
    box.click()
    box.press("ArrowRight")
    assert "/masks" in p.url

    # → through every section to the page's end goes on to the next page, still presenting.
    p.evaluate("() => { const m = document.querySelector(\"[data-testid='stMain']\"); m.scrollTop = m.scrollHeight; }")
    for _ in range(12):
        if "/positional-encoding" in p.url:
            break
        p.evaluate("() => document.activeElement && document.activeElement.blur()")
        p.keyboard.press("ArrowRight")
        p.wait_for_timeout(600)
        p.evaluate("() => { const m = document.querySelector(\"[data-testid='stMain']\"); m.scrollTop = m.scrollHeight; }")
    p.wait_for_url(re.compile(r"/positional-encoding\?.*present=1"))
    wait_for_app(p)
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("positional_encoding.title", lang))
    expect(p.locator(".st-key-tp_presenter")).to_be_visible()

    # Esc leaves presenter mode: the sidebar is back, the link no longer says present.
    p.evaluate("() => document.activeElement && document.activeElement.blur()")
    p.keyboard.press("Escape")
    expect(p.locator(".st-key-tp_presenter")).to_have_count(0)
    expect(p.locator("section[data-testid='stSidebar']")).to_be_visible()
    p.wait_for_function("() => !location.search.includes('present')")


def test_reset_this_page_from_the_sidebar(page, wait_for_app):
    p = page("/masks?lang=en&masks_view=row&masks_pad=false")
    p.locator("section[data-testid='stSidebar']").get_by_role(
        "button", name=translate("common.presenter.reset", "en")).click()
    p.wait_for_url(re.compile(r"masks_view=matrices"))
    wait_for_app(p)
    assert "masks_pad=true" in p.url
    assert "lang=en" in p.url
