"""The Paper vs this code page in a real browser: a link opens its row, and a row picked afterwards opens too
(a browser keeps an expander's open/closed state across reruns, which AppTest cannot see); both languages,
screenshots in test-artifacts/."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from explain.exercises import for_page

from explain.paper_vs_code import ROW_KEYS
from tests.e2e.widgets import EXCEPTION, MAIN, pick, query, widget
from ui import models
from ui.i18n import translate

pytestmark = pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints")
CARD = ".st-key-paper_vs_code_card"  # the paper's numbers, above the rows: not a row
OPEN_ROWS = (f"() => [...document.querySelectorAll('{MAIN} [data-testid=\"stExpander\"] details')]"
             f".filter(d => !d.closest('{CARD}')).map(d => d.open)")


def opened(p) -> list[str]:
    return [key for key, is_open in zip(ROW_KEYS, p.evaluate(OPEN_ROWS)) if is_open]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_link_opens_its_row_and_a_pick_opens_another(page, wait_for_app, screenshot, lang):
    p = page(f"/paper-vs-code?lang={lang}&paper_vs_code_row=neg_inf")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("paper_vs_code.title", lang))
    expect(p.locator(f'{MAIN} [data-testid="stExpander"]')).to_have_count(1 + len(ROW_KEYS) + len(for_page("paper_vs_code")))
    expect(p.locator(f"{CARD} [data-testid='stExpander']")).to_have_count(1)
    assert opened(p) == ["neg_inf"]
    screenshot(p, f"paper_vs_code_neg_inf_{lang}")

    pick(p, widget(p, "paper_vs_code.row"), translate("paper_vs_code.rows.shared_layer.title", lang))
    p.wait_for_url(re.compile(r"[?&]paper_vs_code_row=shared_layer(&|$)"))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0
    expect(p.locator(f"{MAIN} details[open]")).to_have_count(1)
    assert opened(p) == ["shared_layer"] and query(p)["paper_vs_code_row"] == "shared_layer"
    screenshot(p, f"paper_vs_code_shared_layer_{lang}")
