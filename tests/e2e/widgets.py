"""Finding and working the app's widgets in a real browser, for the page tests of tests/e2e/."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

EXCEPTION = '[data-testid="stException"]'
MAIN = '[data-testid="stMain"]'

PHONE_USER_AGENT = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 "
                    "(KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1")  # an iPhone's Safari


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
