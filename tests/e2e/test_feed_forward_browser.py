"""The feed-forward page in a real browser: every control in both languages, the CSV, a phone-wide window.

Needs a shipped model (assets/checkpoints); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import EXCEPTION, MAIN, charts, choose, pick, query, type_into, widget
from ui import models
from ui.i18n import LANGS, translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]


def pick_option(p, wait_for_app, label: str, option: str, pattern: str) -> None:
    """Open the select box labelled ``label``, click ``option`` and wait for ``pattern`` in the URL."""
    pick(p, p.get_by_role("combobox", name=label, exact=True), option)
    p.wait_for_url(re.compile(pattern))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang", LANGS)
def test_feed_forward_every_control(page, wait_for_app, screenshot, lang):
    p = page(f"/feed-forward?model=copy&lang={lang}")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("feed_forward.title", lang))
    for key in ("feed_forward.activations", "feed_forward.zeros", "feed_forward.output"):
        expect(charts(p, key)).to_have_count(1)
    screenshot(p, f"ffn_default_{lang}")

    choose(p, wait_for_app, "feed_forward.stack", translate("feed_forward.stack.decoder", lang), "feed_forward_stack", "decoder")
    choose(p, wait_for_app, "feed_forward.layer", "2", "feed_forward_layer", "2")
    expect(p.get_by_text(re.compile(re.escape(translate("feed_forward.decoder_reads_task", lang, target="")[:12])))).to_be_visible()
    with p.expect_download() as download:
        widget(p, "feed_forward.export_hidden").get_by_role("button").click()
    lines = download.value.path().read_text(encoding="utf-8").splitlines()
    assert lines[0] == "position,token,unit,before,after" and lines[1].startswith("0,<bos>,0,")
    screenshot(p, f"ffn_decoder_layer2_{lang}")

    type_into(p, wait_for_app, "feed_forward.text", "abcd")
    p.wait_for_url(re.compile(r"feed_forward_text=abcd(&|$)"))
    choose(p, wait_for_app, "feed_forward.section", translate("feed_forward.section.position", lang), "feed_forward_view", "position")
    expect(charts(p, "feed_forward.position_chart")).to_have_count(1)
    to_option = translate("feed_forward.position.option", lang, i=3, token="c")
    pick_option(p, wait_for_app, translate("feed_forward.position.to", lang), to_option, r"feed_forward_to=3(&|$)")
    from_option = translate("feed_forward.position.option", lang, i=2, token="b")
    pick_option(p, wait_for_app, translate("feed_forward.position.from", lang), from_option, r"feed_forward_from=2(&|$)")
    metrics = p.locator(f"{MAIN} [data-testid='stMetricValue']")
    expect(metrics).to_have_count(3)
    assert metrics.nth(1).inner_text().strip() == "0"  # the FFN's other positions did not move
    choose(p, wait_for_app, "feed_forward.stack", translate("feed_forward.stack.encoder", lang), "feed_forward_stack", "encoder")
    screenshot(p, f"ffn_position_wise_{lang}")

    choose(p, wait_for_app, "feed_forward.section", translate("feed_forward.section.params", lang), "feed_forward_view", "params")
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    expect(charts(p, "feed_forward.params_chart")).to_have_count(1)
    assert query(p)["feed_forward_view"] == "params"
    screenshot(p, f"ffn_parameters_{lang}")
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("section", ["inside", "position", "params"])
def test_feed_forward_on_a_phone(page, screenshot, section):
    p = page(f"/feed-forward?model=copy&lang=en&feed_forward_view={section}")
    p.set_viewport_size({"width": 390, "height": 844})
    p.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 1")
    assert p.evaluate("() => document.documentElement.scrollWidth") <= 390
    screenshot(p, f"ffn_phone_{section}_en")
