"""The masks page in a real browser: every switch and section, a screenshot per state, in both languages.

The server uses the shipped checkpoints; where none is installed, the model-dependent parts show
a notice instead and the checks that need a model are skipped inside the test.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from ui.i18n import LANGS, translate

pytestmark = pytest.mark.e2e

EXCEPTION = '[data-testid="stException"]'
PLOT = ".js-plotly-plot"
PHONE = {"width": 390, "height": 844}


def assert_page(p, lang: str) -> None:
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("masks.title", lang))
    assert p.locator(EXCEPTION).count() == 0


def wait_for_url(p, wait_for_app, pattern: str) -> None:
    """Wait until the rerun caused by an action has written ``pattern`` into the URL and finished."""
    p.wait_for_url(re.compile(pattern))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


def wait_for_charts(p, count: int) -> None:
    """Plotly draws after the script run; wait until ``count`` charts are on the page."""
    p.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= {count}")


def has_model(p, lang: str) -> bool:
    return p.get_by_text(translate("common.model.none_available", lang)).count() == 0


def flip_mask(p, label: str) -> None:
    """Click the mask's toggle labelled ``label`` (on → off → on)."""
    p.locator('[data-testid="stCheckbox"]', has=p.get_by_role("switch", name=label, exact=True)).click()


def show(p, wait_for_app, section: str, lang: str) -> None:
    """Pick a section of the masks page (its segmented control)."""
    p.get_by_role("radio", name=translate(f"masks.{section}.heading", lang), exact=True).click()
    wait_for_url(p, wait_for_app, f"mask_view={section}")


@pytest.mark.parametrize("lang", LANGS)
def test_masks_page(page, wait_for_app, screenshot, lang):
    p = page(f"/masks?lang={lang}&sent=2")
    assert_page(p, lang)
    model = has_model(p, lang)
    wait_for_charts(p, 3)  # the section shown: the three masks
    screenshot(p, f"masks_default_{lang}")
    padding = translate("masks.padding_switch", lang)
    ahead = translate("masks.look_ahead_switch", lang)
    flip_mask(p, padding)
    wait_for_url(p, wait_for_app, "mask_pad=false")
    expect(p.get_by_text(translate("masks.matrices.padding", lang) + translate("masks.matrices.off", lang))
           ).to_be_visible()
    screenshot(p, f"masks_padding_off_{lang}")
    flip_mask(p, ahead)
    wait_for_url(p, wait_for_app, "mask_ahead=false")
    screenshot(p, f"masks_both_off_{lang}")
    flip_mask(p, padding)
    wait_for_url(p, wait_for_app, "mask_pad=true")
    screenshot(p, f"masks_look_ahead_off_{lang}")
    flip_mask(p, ahead)
    wait_for_url(p, wait_for_app, "mask_ahead=true")
    # Back to both on: the titles say so again, none is left saying "off".
    for title in ("masks.matrices.padding", "masks.matrices.look_ahead"):
        off_title = translate(title, lang) + translate("masks.matrices.off", lang)
        expect(p.get_by_text(off_title)).to_have_count(0)
        expect(p.get_by_text(translate(title, lang), exact=True).first).to_be_visible()
    if model:
        show(p, wait_for_app, "effect", lang)
        wait_for_charts(p, 4)
        flip_mask(p, padding)
        wait_for_url(p, wait_for_app, "mask_pad=false")
        expect(p.get_by_text(translate("masks.effect.encoder_title", lang,
                                       state=translate("masks.effect.off", lang))).first).to_be_visible()
        screenshot(p, f"masks_effect_padding_off_{lang}")
        flip_mask(p, padding)
        wait_for_url(p, wait_for_app, "mask_pad=true")
        show(p, wait_for_app, "row", lang)
        p.locator('[data-testid="stRadio"]').get_by_text(translate("masks.row.kind_encoder", lang), exact=True).click()
        wait_for_url(p, wait_for_app, "mask_kind=encoder")
        p.get_by_role("slider").last.focus()
        p.keyboard.press("End")
        wait_for_url(p, wait_for_app, "mask_query=24")
        wait_for_charts(p, 3)
        screenshot(p, f"masks_row_{lang}")
    show(p, wait_for_app, "printout", lang)
    expect(p.get_by_text("decoder_mask(torch.tensor([[1, 2, 3, 0, 0]]))")).to_be_visible()
    screenshot(p, f"masks_printout_{lang}")


def test_masks_page_fits_a_phone(page, wait_for_app, screenshot):
    """At 390 px the pictures stack and none runs off the screen."""
    p = page("/masks?lang=en&sent=2")
    p.set_viewport_size(PHONE)
    wait_for_charts(p, 3)
    flip_mask(p, translate("masks.padding_switch", "en"))
    wait_for_url(p, wait_for_app, "mask_pad=false")
    charts = p.locator(PLOT)
    expect(charts).to_have_count(3)
    for n in range(3):
        box = charts.nth(n).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1, box
    screenshot(p, "masks_phone_en")


def test_switching_the_language_twice_keeps_the_chosen_sentence_and_layer(page, wait_for_app):
    """English → 中文 → English → 中文 on Masks: no exception, and the sentence and layer picked stay
    picked. (A select box hands back the label it showed in the other language; that must not reset
    the choice, nor raise as it once did in ``clamp_state``.)"""
    p = page("/masks?lang=en&sent=2&mask_view=effect&mask_layer=1")
    assert_page(p, "en")
    for lang in ("zh", "en", "zh", "en"):
        p.get_by_test_id("stSidebar").get_by_text(translate(f"common.language_name.{lang}", lang), exact=True).click()
        wait_for_url(p, wait_for_app, f"lang={lang}")
        assert_page(p, lang)
        assert "sent=2" in p.url and "mask_layer=1" in p.url, (lang, p.url)
        expect(p.get_by_role("combobox", name=translate("tokens.sentence.pick", lang), exact=True)
               ).to_have_value(re.compile(r"^3\W+hi!$"))
