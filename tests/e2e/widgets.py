"""Finding and working the app's widgets in a real browser, for the page tests of tests/e2e/."""
from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

EXCEPTION = '[data-testid="stException"]'
MAIN = '[data-testid="stMain"]'

PHONE_USER_AGENT = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 "
                    "(KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1")  # an iPhone's Safari


def wait_for(predicate, timeout: float = 90.0, pause: float = 0.25) -> None:
    """Poll ``predicate()`` until it is true (an exception counts as not yet) or fail after ``timeout`` s: for what
    ``expect`` cannot wait on (a training run's step, a chart's layout, threads on the server)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if predicate():
                return
        except Exception:
            pass
        time.sleep(pause)
    raise AssertionError("condition not met in time")


def query(p) -> dict[str, str]:
    """The page's URL query as ``{name: first value}``."""
    return {k: v[0] for k, v in parse_qs(urlparse(p.url).query).items()}


def widget(p, key: str):
    """The element of the widget with session key ``key`` (Streamlit writes dots as hyphens)."""
    return p.locator(f".st-key-{key.replace('.', '-')}")


def choose(p, wait_for_app, key: str, label: str, param: str, value: str) -> None:
    """Click option ``label`` of the segmented control ``key`` and wait until ``?param=value``."""
    widget(p, key).get_by_role("radio", name=label, exact=True).click()
    p.wait_for_url(re.compile(rf"[?&]{param}={re.escape(value)}(&|$)"))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


LANGUAGE_NAMES = {"en": "English", "zh": "中文"}


def switch_language(p, lang: str, title: str) -> None:
    """Pick ``lang`` in the sidebar's language switch and wait until the page's title reads ``title``.

    A click can miss in a browser that is still moving the sidebar (it slides back in after a narrow
    window widens): the switch then never shows the language, and the click is tried again. A click
    that reached the switch is never repeated: if the app then puts the switch back or keeps the old
    title, the visitor's choice was lost, and that fails here with a message that says so.
    """
    radio = p.locator('[data-testid="stSidebar"] [data-testid="stRadio"]')
    option = radio.get_by_role("radio", name=LANGUAGE_NAMES[lang], exact=True)
    # Watches the switch every few ms from inside the page: "it was checked" survives the app putting it back.
    watch = """name => { window.__tpLanguageSeen = false; clearInterval(window.__tpLanguageWatch);
        window.__tpLanguageWatch = setInterval(() => {
          for (const input of document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stRadio"] input')) {
            if (input.checked && input.closest('label')?.textContent.includes(name)) window.__tpLanguageSeen = true;
          }
        }, 5); }"""
    for _ in range(3):
        p.evaluate(watch, LANGUAGE_NAMES[lang])
        radio.locator("label").filter(has_text=LANGUAGE_NAMES[lang]).click()
        try:
            p.wait_for_function("() => window.__tpLanguageSeen === true", timeout=5_000)
            break
        except PlaywrightTimeoutError:
            continue  # the click missed: the switch never showed the language
    else:
        raise AssertionError(f"three clicks on {LANGUAGE_NAMES[lang]!r} never reached the language switch")
    p.evaluate("() => clearInterval(window.__tpLanguageWatch)")
    expect(option, "the app put the language switch back: the visitor's click was lost").to_be_checked()
    expect(p.locator(f"{MAIN} h1").first, "the switch changed, the page did not follow").to_have_text(title)


def charts(p, key: str):
    """The plotly charts drawn inside the element of ``key``."""
    return widget(p, key).locator(".js-plotly-plot")


def type_into(p, wait_for_app, key: str, text: str) -> None:
    """Type ``text`` into the text box ``key``, press Enter and wait for the run."""
    box = widget(p, key).locator("input")
    box.fill(text)
    box.press("Enter")
    wait_for_app(p)


def paste_into(box, text: str, submit: str = "Enter") -> None:
    """Replace ``box``'s text by ``text`` as a paste does (one input event with all of it), then submit."""
    box.click()
    box.press("Control+A")
    box.page.keyboard.insert_text(text)
    box.press(submit)


def pick(p, box, option: str) -> None:
    """Open the select box ``box`` (a locator of it or inside it) and click its option ``option``.

    Under load the first click can land while the page still scrolls or reruns, and then it only focuses the box:
    the list is opened again until it shows. The option's text is typed before the click, so that it is the one
    option listed however long the list is."""
    for _ in range(4):
        box.scroll_into_view_if_needed()
        box.click()
        try:
            p.get_by_role("listbox").first.wait_for(state="visible", timeout=5_000)
            break
        except PlaywrightTimeoutError:
            p.keyboard.press("Escape")
    p.keyboard.insert_text(option)
    p.get_by_role("option", name=option, exact=True).click()


def settled_box(locator, timeout_ms: int = 30_000) -> dict:
    """``locator``'s bounding box once it is visible and has stopped moving (the same box twice, 150 ms
    apart). After the window is resized the app reruns for the new width and redraws its charts; a box
    read in between is None (the chart is being replaced) or the old width's."""
    expect(locator).to_be_visible(timeout=timeout_ms)
    last, waited = None, 0
    while waited <= timeout_ms:
        box = locator.bounding_box()
        if box is not None and box == last:
            return box
        last = box
        locator.page.wait_for_timeout(150)
        waited += 150
    raise AssertionError(f"the box of {locator} never settled (last: {last})")
