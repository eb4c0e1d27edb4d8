"""Home in a real browser (#31): the paper's numbers beside the sidebar's model, a closed card that opens on its
d_k row, and that fits a 390-px phone open; both languages, screenshots in test-artifacts/."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.test_phone_browser import PHONE, overflow_once_settled
from tests.e2e.widgets import EXCEPTION
from ui import models
from ui.i18n import translate

pytestmark = pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints")
CARD = ".st-key-home_paper_card"


@pytest.mark.parametrize("lang, name", [("en", "en-zh"), ("zh", "zh-en")])
def test_the_papers_numbers_open_on_a_phone(page, screenshot, lang, name):
    p = page(f"/?lang={lang}", phone=True)
    summary = p.locator(f"{CARD} summary")
    expect(summary).to_contain_text(translate("common.paper_card.heading", lang))
    d_k = p.locator(f"{CARD} tr").filter(has=p.locator("td", has_text=translate("common.paper_card.row.d_k", lang)))
    expect(d_k).to_be_hidden()  # closed until opened
    summary.click()
    expect(d_k).to_be_visible()
    expect(d_k.locator("td").nth(1)).to_have_text("64")  # the paper's 512 / 8
    expect(p.locator(f"{CARD} [data-testid='stCaptionContainer']")).to_contain_text(name)
    width = overflow_once_settled(p)
    assert width["page"] <= PHONE["width"] + 1 and not width["sticking"], width
    assert p.locator(EXCEPTION).count() == 0
    screenshot(p, f"home_paper_card_phone_{lang}")
