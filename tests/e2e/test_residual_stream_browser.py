"""The residual-stream page in a real browser: every control in both languages, a phone-wide window.

Needs a shipped model (assets/checkpoints); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import EXCEPTION, MAIN, charts, choose, type_into, widget
from ui import models
from ui.i18n import LANGS, translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]


@pytest.mark.parametrize("lang", LANGS)
def test_residual_stream_every_control(page, wait_for_app, screenshot, lang):
    p = page(f"/residual-stream?model=copy&lang={lang}")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("residual_stream.title", lang))
    expect(charts(p, "residual_stream.stream")).to_have_count(1)
    expect(charts(p, "residual_stream.path")).to_have_count(1)
    screenshot(p, f"residual_default_{lang}")

    choose(p, wait_for_app, "residual_stream.stack", translate("residual_stream.stack.decoder", lang), "residual_stream_stack", "decoder")
    token_box = p.get_by_role("combobox", name=translate("residual_stream.sizes.token", lang), exact=True)
    token_box.click()
    token_box.press_sequentially(translate("residual_stream.sizes.token_option", lang, i=3, token="l"))
    token_box.press("Enter")
    p.wait_for_url(re.compile(r"residual_stream_tok=3(&|$)"))
    wait_for_app(p)
    expect(widget(p, "residual_stream.path")).to_contain_text(translate("residual_stream.sizes.path_sizes", lang, token="l"))
    with p.expect_download() as download:
        widget(p, "residual_stream.export_stream").get_by_role("button").click()
    header = download.value.path().read_text(encoding="utf-8").splitlines()[0]
    assert header == "stack,layer,sublayer,position,token,x_norm,update_norm,ratio,turn_cos,update_cos"
    screenshot(p, f"residual_decoder_{lang}")

    type_into(p, wait_for_app, "residual_stream.text", "the cat")
    p.wait_for_url(re.compile(r"residual_stream_text=the"))
    choose(p, wait_for_app, "residual_stream.section", translate("residual_stream.section.off", lang), "residual_stream_view", "off")
    expect(p.get_by_text(translate("residual_stream.off.none", lang))).to_be_visible()
    option = translate("residual_stream.off.option", lang, stack=translate("residual_stream.stack.encoder", lang), layer=1,
                       sublayer=translate("residual_stream.long.self_attn", lang))
    box = widget(p, "residual_stream.off").locator("input")
    box.click()
    box.press_sequentially(option)
    box.press("Enter")
    p.wait_for_url(re.compile(r"residual_stream_off=enc-1-self"))
    p.keyboard.press("Escape")
    wait_for_app(p)
    expect(p.get_by_text(translate("residual_stream.off.probability_same", lang))).to_be_visible()
    expect(charts(p, "residual_stream.off_chart")).to_have_count(1)
    expect(p.get_by_text(translate("residual_stream.off.changed_answer", lang))).to_be_visible()
    screenshot(p, f"residual_switched_off_{lang}")
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("section", ["sizes", "off"])
def test_residual_stream_on_a_phone(page, screenshot, section):
    p = page(f"/residual-stream?model=copy&lang=en&residual_stream_view={section}&residual_stream_off=dec-1-cross")
    p.set_viewport_size({"width": 390, "height": 844})
    p.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 1")
    assert p.evaluate("() => document.documentElement.scrollWidth") <= 390
    screenshot(p, f"residual_phone_{section}_en")
