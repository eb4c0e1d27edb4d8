"""The LayerNorm page in a real browser: every control (the norm, the token, the pads switch, the
seed, the "1 +" connection, the batch), a screenshot per state in both languages, and the page at a phone's width.

The server uses the shipped checkpoints; where none is installed, the sections that run a model
show a notice and the checks that need one are skipped inside the test.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from explain.text import MAX_CHARS, MAX_LINES
from tests.e2e.conftest import ARTIFACTS
from tests.e2e.widgets import EXCEPTION, pick, query, widget
from ui.i18n import LANGS, translate


PLOT = ".js-plotly-plot"
PHONE = {"width": 390, "height": 844}
BATCH = "hello world\nattention is all you need\nhi!"


def wait_for_url(p, wait_for_app, pattern: str) -> None:
    """Wait until the rerun caused by an action has written ``pattern`` into the URL and finished."""
    p.wait_for_url(re.compile(pattern))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


def has_model(p, lang: str) -> bool:
    return p.get_by_text(translate("common.model.none_available", lang)).count() == 0


def metric(p, label: str) -> str:
    """The value of the st.metric labelled ``label``."""
    box = p.get_by_test_id("stMetric").filter(has=p.get_by_text(label, exact=True))
    return box.get_by_test_id("stMetricValue").inner_text().strip()


def pick_option(p, label: str, option: str) -> None:
    """Open the select box labelled ``label`` and click its option ``option``."""
    pick(p, p.get_by_role("combobox", name=label, exact=True), option)


@pytest.mark.parametrize("lang", LANGS)
def test_layer_norm_page(page, wait_for_app, screenshot, lang):
    p = page(f"/layer-norm?lang={lang}&model=copy")  # the default model follows the language
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("layer_norm.title", lang))
    assert p.locator(EXCEPTION).count() == 0
    model = has_model(p, lang)
    p.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= {8 if model else 3}")
    screenshot(p, f"layernorm_default_{lang}")

    seed = widget(p, "layer_norm.seed").get_by_role("radio", name="3", exact=True)
    before = metric(p, translate("layer_norm.grad.growth_post", lang))
    seed.click()
    wait_for_url(p, wait_for_app, r"layer_norm_seed=3(&|$)")
    expect(p.get_by_test_id("stMetric").filter(has=p.get_by_text(translate("layer_norm.grad.growth_post", lang),
                                                                  exact=True))).not_to_contain_text(before)
    ARTIFACTS.mkdir(exist_ok=True)  # the page is taller than a screenshot: its last chart on its own
    widget(p, "layer_norm.grad_chart").screenshot(path=str(ARTIFACTS / f"layernorm_gradients_{lang}.png"))

    # The "1 +" of another connection: the top feed-forward passes a fair share back even without the skip.
    one_plus = p.get_by_test_id("stTable").filter(has_text=translate("layer_norm.grad.one_plus_row_gain", lang))
    expect(one_plus).to_contain_text("e-0")  # the default, the top cross-attention: ~1e-8 without the skip
    option = translate("layer_norm.token.site_option", lang, stack=translate("layer_norm.token.stack_decoder", lang),
                       n=6, total=6, sublayer=translate("layer_norm.token.sublayer_ffn", lang))
    pick_option(p, translate("layer_norm.grad.one_plus_site", lang), option)
    wait_for_url(p, wait_for_app, r"layer_norm_skip_at=decoder\.5\.ffn")
    expect(one_plus).not_to_contain_text("e-0")
    one_plus.screenshot(path=str(ARTIFACTS / f"layernorm_one_plus_{lang}.png"))
    if not model:
        return

    option = translate("layer_norm.token.site_option", lang, stack=translate("layer_norm.token.stack_decoder", lang),
                       n=1, total=2, sublayer=translate("layer_norm.token.sublayer_cross_attn", lang))
    pick_option(p, translate("layer_norm.token.site", lang), option)
    wait_for_url(p, wait_for_app, r"layer_norm_at=decoder\.0\.cross_attn")
    expect(p.get_by_text(translate("layer_norm.token.reads_post", lang).split("**")[0].strip())).to_be_visible()
    screenshot(p, f"layernorm_decoder_cross_{lang}")

    widget(p, "layer_norm.token").get_by_role("slider").focus()
    p.keyboard.press("End")
    wait_for_url(p, wait_for_app, r"layer_norm_tok=[1-9]")
    assert int(query(p)["layer_norm_tok"]) > 0

    layer_label, batch_label = (translate(f"layer_norm.batch.{name}_shift", lang) for name in ("layer", "batch"))
    batch_before = metric(p, batch_label)
    assert metric(p, layer_label) == "0.000"
    p.locator('[data-testid="stCheckbox"]',
              has=p.get_by_role("switch", name=translate("layer_norm.batch.count_pads", lang), exact=True)).click()
    wait_for_url(p, wait_for_app, r"layer_norm_pads=false")
    assert metric(p, batch_label) != batch_before
    screenshot(p, f"layernorm_pads_off_{lang}")

    # Another sentence of the batch changes: this sentence's BatchNorm output moves, its LayerNorm output does not.
    shown = metric(p, batch_label)
    box = p.get_by_role("textbox", name=translate("tokens.batch.input", lang, lines=MAX_LINES, chars=MAX_CHARS),
                        exact=True)
    box.fill(BATCH.replace("attention is all you need", "attention is all you need today"))
    box.press("Control+Enter")
    wait_for_url(p, wait_for_app, r"batch=hello\+world%0Aattention\+is\+all\+you\+need\+today")
    expect(p.get_by_test_id("stMetric").filter(has=p.get_by_text(batch_label, exact=True))).not_to_contain_text(shown)
    assert metric(p, layer_label) == "0.000"
    screenshot(p, f"layernorm_batch_edited_{lang}")


def test_layer_norm_page_on_a_phone(page, screenshot):
    p = page("/layer-norm?lang=zh")
    p.set_viewport_size(PHONE)
    model = has_model(p, "zh")
    p.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= {8 if model else 3}")
    assert p.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(p, "layernorm_phone_zh")
    ARTIFACTS.mkdir(exist_ok=True)  # below the page's first 5000 px: the diagram and the gradients on their own
    for key in ("layer_norm.wiring_pre", "layer_norm.grad_chart"):  # the chart: three wirings on a log axis
        widget(p, key).screenshot(path=str(ARTIFACTS / f"layernorm_phone_{key.split('.')[1]}_zh.png"))


def test_the_section_links_jump_to_their_sections_on_a_phone(page, wait_for_app):
    """#35 item 21: the page is some 9,000 px on a phone with five topics; a line of links at its top jumps to
    each (same tab, the heading just below Streamlit's header)."""
    p = page("/layer-norm?lang=zh")
    p.set_viewport_size(PHONE)
    links = p.locator('[data-testid="stMarkdownContainer"] p a[href^="#layer-norm-"]')
    expect(links).to_have_count(5)
    wait_for_app(p)
    links.filter(has_text=translate("layer_norm.grad.heading", "zh")).click()
    p.wait_for_function("""() => { const h = document.getElementById('layer-norm-grad');
                                   const top = h && h.getBoundingClientRect().top;
                                   return h && top >= 0 && top < 200; }""", timeout=15_000)
    assert len(p.context.pages) == 1
