"""Tokens, masks and positional encoding in a real browser: every switch toggled, a screenshot per state.

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
BAD_BATCH = "<b>bold</b> 你好 👍🏽\n" + "x" * 60 + "\n\n   "


def assert_page(p, key: str, lang: str) -> None:
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate(f"{key}.title", lang))
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


def flip(p, label: str) -> None:
    """Click the st.toggle labelled ``label``."""
    p.locator('[data-testid="stCheckbox"]', has=p.get_by_role("switch", name=label, exact=True)).click()


def flip_mask(p, label: str) -> None:
    """Click the masks' pill labelled ``label`` (a switch: on → off → on)."""
    p.locator(".st-key-masks-switches").get_by_role("button", name=label, exact=True).click()


def submit_text(p, label: str, text: str) -> None:
    box = p.get_by_role("textbox", name=label)
    box.fill(text)
    box.press("Control+Enter")


@pytest.mark.parametrize("lang", LANGS)
def test_tokens_page(page, wait_for_app, screenshot, lang):
    p = page(f"/tokens?lang={lang}")
    assert_page(p, "tokens", lang)
    model = has_model(p, lang)
    wait_for_charts(p, 5 if model else 0)
    expect(p.locator("td.pad").first).to_be_visible()
    screenshot(p, f"issue5_tokens_default_{lang}")
    for side in ("decoder_in", "labels", "source"):
        p.get_by_role("radio", name=translate(f"tokens.batch.side_{side}", lang), exact=True).click()
        wait_for_url(p, wait_for_app, f"tok_side={side}")
        if side != "source":
            expect(p.locator("td.special").first).to_be_visible()
        screenshot(p, f"issue5_tokens_side_{side}_{lang}")
    submit_text(p, translate("tokens.batch.input", lang, lines=8, chars=48), BAD_BATCH)
    wait_for_url(p, wait_for_app, "batch=%3Cb%3E")
    expect(p.get_by_text(translate("common.input.truncated", lang, limit=48))).to_be_visible()
    expect(p.locator("td.unk").first).to_be_visible()
    assert p.locator('[data-testid="stMain"] b', has_text="bold").count() == 0  # typed HTML stays text
    screenshot(p, f"issue5_tokens_bad_input_{lang}")
    submit_text(p, translate("tokens.batch.input", lang, lines=8, chars=48), "   ")
    wait_for_url(p, wait_for_app, r"batch=(\+|%20){3}")
    expect(p.get_by_text(translate("common.input.empty", lang))).to_be_visible()
    screenshot(p, f"issue5_tokens_empty_{lang}")


@pytest.mark.parametrize("lang", LANGS)
def test_masks_page(page, wait_for_app, screenshot, lang):
    p = page(f"/masks?lang={lang}&sent=2")
    assert_page(p, "masks", lang)
    model = has_model(p, lang)
    wait_for_charts(p, 1)  # the section shown: the three masks, as one figure
    screenshot(p, f"issue5_masks_default_{lang}")
    padding = translate("masks.padding_switch", lang)
    ahead = translate("masks.look_ahead_switch", lang)
    flip_mask(p, padding)
    wait_for_url(p, wait_for_app, "mask_pad=false")
    expect(p.get_by_text(translate("masks.matrices.padding", lang) + translate("masks.matrices.off", lang))
           ).to_be_visible()
    screenshot(p, f"issue5_masks_padding_off_{lang}")
    flip_mask(p, ahead)
    wait_for_url(p, wait_for_app, "mask_ahead=false")
    screenshot(p, f"issue5_masks_both_off_{lang}")
    flip_mask(p, padding)
    wait_for_url(p, wait_for_app, "mask_pad=true")
    screenshot(p, f"issue5_masks_look_ahead_off_{lang}")
    flip_mask(p, ahead)
    wait_for_url(p, wait_for_app, "mask_ahead=true")
    # Back to both on: the fragment redraws the first picture it made (kept for its own reruns), not
    # the last one's "off" titles.
    for title in ("masks.matrices.padding", "masks.matrices.look_ahead"):
        off_title = translate(title, lang) + translate("masks.matrices.off", lang)
        expect(p.get_by_text(off_title)).to_have_count(0)
        expect(p.get_by_text(translate(title, lang), exact=True).first).to_be_visible()
    if model:
        show(p, wait_for_app, "effect", lang)
        wait_for_charts(p, 1)
        flip_mask(p, padding)
        wait_for_url(p, wait_for_app, "mask_pad=false")
        expect(p.get_by_text(translate("masks.effect.encoder_title", lang,
                                       state=translate("masks.effect.off", lang))).first).to_be_visible()
        screenshot(p, f"issue5_masks_effect_padding_off_{lang}")
        flip_mask(p, padding)
        wait_for_url(p, wait_for_app, "mask_pad=true")
        show(p, wait_for_app, "row", lang)
        p.locator('[data-testid="stRadio"]').get_by_text(translate("masks.row.kind_encoder", lang), exact=True).click()
        wait_for_url(p, wait_for_app, "mask_kind=encoder")
        p.get_by_role("slider").last.focus()
        p.keyboard.press("End")
        wait_for_url(p, wait_for_app, "mask_query=24")
        screenshot(p, f"issue5_masks_row_{lang}")
    show(p, wait_for_app, "printout", lang)
    expect(p.get_by_text("decoder_mask(torch.tensor([[1, 2, 3, 0, 0]]))")).to_be_visible()
    screenshot(p, f"issue5_masks_printout_{lang}")


def show(p, wait_for_app, section: str, lang: str) -> None:
    """Pick a section of the masks page (its segmented control)."""
    p.get_by_role("radio", name=translate(f"masks.{section}.heading", lang), exact=True).click()
    wait_for_url(p, wait_for_app, f"mask_view={section}")


@pytest.mark.parametrize("lang", LANGS)
def test_positional_page(page, wait_for_app, screenshot, lang):
    p = page(f"/positional-encoding?lang={lang}")
    assert_page(p, "positional", lang)
    model = has_model(p, lang)
    wait_for_charts(p, 9 if model else 6)  # the table and its waves are one chart
    expect(p.get_by_text("0.909297")).to_be_visible()
    screenshot(p, f"issue5_positional_default_{lang}")
    sliders = p.get_by_role("slider")
    sliders.nth(3).focus()  # the dimension pair
    p.keyboard.press("End")
    wait_for_url(p, wait_for_app, "pe_pair=31")
    screenshot(p, f"issue5_positional_last_pair_{lang}")
    sliders.nth(2).focus()  # the base
    p.keyboard.press("Home")
    wait_for_url(p, wait_for_app, "pe_base=10(&|$)")
    sliders.nth(0).focus()  # d_model
    p.keyboard.press("Home")
    wait_for_url(p, wait_for_app, "pe_d=2(&|$)")
    expect(p.get_by_text(translate("positional.table.one_pair", lang))).to_be_visible()
    screenshot(p, f"issue5_positional_smallest_{lang}")
    if model:
        flip(p, translate("positional.blind.use_pe", lang))
        wait_for_url(p, wait_for_app, "pe_on=true")
        expect(p.get_by_text(translate("positional.blind.sees_order", lang))).to_be_visible()
        screenshot(p, f"issue5_positional_pe_on_{lang}")
        flip(p, translate("positional.blind.use_pe", lang))
        wait_for_url(p, wait_for_app, "pe_on=false")
        p.get_by_role("button", name=translate("positional.blind.shuffle", lang)).click()
        wait_for_url(p, wait_for_app, "pe_shuffle=1")
        expect(p.get_by_text(translate("positional.blind.blind", lang))).to_be_visible()
        screenshot(p, f"issue5_positional_shuffled_{lang}")
