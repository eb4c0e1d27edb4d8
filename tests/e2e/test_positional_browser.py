"""The positional-encoding page in a real browser: every slider to its ends, the switch and the
shuffle of order blindness, a screenshot per state.

The server uses the shipped checkpoints; where none is installed, order blindness is left out
and the checks that need a model are skipped inside the test.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import paste_into
from ui.i18n import LANGS, translate


EXCEPTION = '[data-testid="stException"]'
PLOT = ".js-plotly-plot"


def wait_for_url(p, wait_for_app, pattern: str) -> None:
    """Wait until the rerun caused by an action has written ``pattern`` into the URL and finished."""
    p.wait_for_url(re.compile(pattern))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


def flip(p, label: str) -> None:
    """Click the st.toggle labelled ``label``."""
    p.locator('[data-testid="stCheckbox"]', has=p.get_by_role("switch", name=label, exact=True)).click()


@pytest.mark.parametrize("lang", LANGS)
def test_positional_page(page, wait_for_app, screenshot, lang):
    p = page(f"/positional-encoding?model=copy&lang={lang}")
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("positional_encoding.title", lang))
    assert p.locator(EXCEPTION).count() == 0
    model = p.get_by_text(translate("common.model.none_available", lang)).count() == 0
    p.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= {9 if model else 6}")  # table+waves: one
    expect(p.get_by_text("0.909297")).to_be_visible()
    screenshot(p, f"positional_default_{lang}")
    sliders = p.get_by_role("slider")
    sliders.nth(3).focus()  # the dimension pair
    p.keyboard.press("End")
    wait_for_url(p, wait_for_app, "positional_encoding_pair=31")
    expect(p.get_by_text(re.compile(r"i = 31"))).to_be_visible()  # the pair's numbers follow the slider
    screenshot(p, f"positional_last_pair_{lang}")
    sliders.nth(2).focus()  # the base
    p.keyboard.press("Home")
    wait_for_url(p, wait_for_app, "positional_encoding_base=10(&|$)")
    sliders.nth(0).focus()  # d_model
    p.keyboard.press("Home")
    wait_for_url(p, wait_for_app, "positional_encoding_d=2(&|$)")
    expect(p.get_by_text(translate("positional_encoding.table.one_pair", lang))).to_be_visible()
    screenshot(p, f"positional_smallest_{lang}")
    if model:
        flip(p, translate("positional_encoding.blind.use_pe", lang))
        wait_for_url(p, wait_for_app, "positional_encoding_on=true")
        expect(p.get_by_text(translate("positional_encoding.blind.sees_order", lang))).to_be_visible()
        screenshot(p, f"positional_pe_on_{lang}")
        flip(p, translate("positional_encoding.blind.use_pe", lang))
        wait_for_url(p, wait_for_app, "positional_encoding_on=false")
        p.get_by_role("button", name=translate("positional_encoding.blind.shuffle", lang)).click()
        wait_for_url(p, wait_for_app, "positional_encoding_shuffle=1")
        expect(p.get_by_text(translate("positional_encoding.blind.blind", lang))).to_be_visible()
        screenshot(p, f"positional_shuffled_{lang}")


@pytest.mark.parametrize("lang", LANGS)
def test_identical_tokens_and_a_long_paste(page, wait_for_app, screenshot, lang):
    """'aaaa' with positional encoding on: the box says the shuffle is the sentence itself and the
    metrics beside it are 0. Then a 250-character paste into the 200-character box is taken, cut
    and said, as typed text is (the browser used to refuse it silently)."""
    p = page(f"/positional-encoding?model=copy&lang={lang}&positional_encoding_on=true")
    if p.get_by_text(translate("common.model.none_available", lang)).count():
        pytest.skip("no shipped model: order blindness is not drawn")
    box = p.get_by_role("textbox", name=translate("positional_encoding.blind.sentence", lang))
    box.fill("aaaa")
    box.press("Enter")
    wait_for_url(p, wait_for_app, "positional_encoding_text=aaaa(&|$)")
    expect(p.get_by_text(translate("positional_encoding.blind.nothing_to_shuffle", lang))).to_be_visible()
    metrics = p.locator('[data-testid="stMetricValue"]')
    expect(metrics).to_have_count(2)
    assert [metrics.nth(i).inner_text().strip() for i in range(2)] == ["0", "0"]
    screenshot(p, f"positional_identical_tokens_{lang}")

    pasted = ("the cat sat on the mat " * 20)[:250]
    paste_into(box, pasted)
    wait_for_url(p, wait_for_app, "positional_encoding_text=the")
    expect(box).to_have_value(pasted[:200])
    expect(p.get_by_text(translate("common.link_and_paste.paste_cut", lang, count=250, limit=200))).to_be_visible()
    expect(p.get_by_text(translate("common.input.truncated", lang, limit=48))).to_be_visible()
    assert len(parse_qs(urlparse(p.url).query)["positional_encoding_text"][0]) == 200  # the URL holds the cut text only
    screenshot(p, f"positional_long_paste_{lang}")


def test_positional_page_on_a_phone(page, screenshot):
    p = page("/positional-encoding?model=copy&lang=en")
    p.set_viewport_size({"width": 390, "height": 844})
    p.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= 6")
    assert p.evaluate("() => document.documentElement.scrollWidth") <= 390
    screenshot(p, "positional_phone_en")
