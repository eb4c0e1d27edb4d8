"""The output-and-loss page in a real browser: every control, both languages, a wrong target, the
link to the Decoding page's teacher forcing, and a phone's width.

Needs a shipped model (assets/checkpoints); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.test_phone_browser import PHONE, overflow_once_settled
from tests.e2e.widgets import EXCEPTION, MAIN, charts, choose, query, settled_box, type_into, widget
from ui import models
from ui.i18n import translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]


def metric(p, label: str):
    """The value of the metric labelled ``label``."""
    name = p.locator("[data-testid='stMetricLabel']", has_text=re.compile(rf"^{re.escape(label)}$"))
    box = p.locator(f"{MAIN} [data-testid='stMetric']").filter(has=name)
    return box.locator("[data-testid='stMetricValue']")


def press(p, wait_for_app, key: str, keys: str, param: str, value: str) -> None:
    """Focus the slider ``key``, press ``keys`` and wait for ``?param=value``."""
    slider = widget(p, key).get_by_role("slider")
    slider.focus()
    slider.press(keys)
    p.wait_for_url(re.compile(rf"[?&]{param}={re.escape(value)}(&|$)"))
    wait_for_app(p)


def test_output_every_control(page, wait_for_app, screenshot):
    p = page("/output-and-loss?lang=en&model=copy")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("output_and_loss.title", "en"))
    expect(charts(p, "output_and_loss.logits")).to_have_count(1)
    expect(charts(p, "output_and_loss.vector")).to_have_count(1)
    expect(charts(p, "output_and_loss.temperature_curve")).to_have_count(1)
    expect(p.get_by_text("Position 0.")).to_be_visible()
    p_right = translate("output_and_loss.logits.p_target", "en")
    first = float(metric(p, p_right).inner_text())
    assert 0.8 < first < 0.95, "the shipped copy model gives the right token about 1 − ε = 0.9"
    screenshot(p, "output_logits_en")

    press(p, wait_for_app, "output_and_loss.position", "ArrowRight", "output_and_loss_pos", "1")
    expect(p.get_by_text("Position 1.")).to_be_visible()
    press(p, wait_for_app, "output_and_loss.temperature", "End", "output_and_loss_temp", "5.0")
    hot = float(metric(p, p_right).inner_text())
    assert hot < first / 2, "a high temperature flattens the distribution"
    press(p, wait_for_app, "output_and_loss.temperature", "Home", "output_and_loss_temp", "0.0")
    expect(metric(p, p_right)).to_have_text("1.000")  # temperature 0: the argmax takes everything
    expect(metric(p, translate("output_and_loss.logits.entropy", "en"))).to_have_text("0.000")
    screenshot(p, "output_logits_cold_en")

    choose(p, wait_for_app, "output_and_loss.section", translate("output_and_loss.section.seed", "en"), "output_and_loss_view", "seed")
    expect(p.get_by_text("0.2014133334159851").first).to_be_visible()
    caption = p.get_by_text(re.compile(r"^Computed by torch here")).inner_text()
    assert caption.count("0.0900, 0.2447, 0.6652") == 2, caption  # ours and the seed's
    screenshot(p, "output_seed_en")

    choose(p, wait_for_app, "output_and_loss.section", translate("output_and_loss.section.loss", "en"), "output_and_loss_view", "loss")
    expect(charts(p, "output_and_loss.losses")).to_have_count(1)
    ppl = translate("output_and_loss.loss.ppl", "en")
    right_ppl = float(metric(p, ppl).inner_text())
    assert 1.0 < right_ppl < 1.5
    screenshot(p, "output_loss_en")
    type_into(p, wait_for_app, "output_and_loss.target", "hellx world")  # one wrong character
    p.wait_for_url(re.compile(r"output_and_loss_target=hellx"))
    expect(p.get_by_text(re.compile("^This is not the task's answer"))).to_be_visible()
    expect(metric(p, ppl)).not_to_have_text(f"{right_ppl:.3f}")
    assert float(metric(p, ppl).inner_text()) > 1.5, "a wrong token costs a lot"
    screenshot(p, "output_loss_wrong_target_en")

    choose(p, wait_for_app, "output_and_loss.section", translate("output_and_loss.section.smoothing", "en"), "output_and_loss_view", "smoothing")
    expect(charts(p, "output_and_loss.right_probs")).to_have_count(1)
    expect(charts(p, "output_and_loss.targets")).to_have_count(1)
    expect(charts(p, "output_and_loss.loss_curve")).to_have_count(1)
    press(p, wait_for_app, "output_and_loss.epsilon", "Home", "output_and_loss_eps", "0.0")
    expect(metric(p, translate("output_and_loss.smoothing.floor", "en"))).to_have_text("0.000")
    press(p, wait_for_app, "output_and_loss.epsilon", "ArrowRight", "output_and_loss_eps", "0.05")
    expect(metric(p, translate("output_and_loss.smoothing.perfect_smoothed", "en"))).to_have_text("∞")
    screenshot(p, "output_smoothing_en")
    assert p.locator(EXCEPTION).count() == 0

    p.get_by_role("link", name=translate("output_and_loss.forcing_link", "en")).click()
    p.wait_for_url(re.compile(r"/decoding\?.*decoding_view=forcing"))
    wait_for_app(p)
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("decoding.title", "en"))
    expect(charts(p, "decoding.forcing_chart")).to_have_count(1)
    assert query(p)["model"] == "copy"


@pytest.mark.parametrize("view", ["logits", "seed", "loss", "smoothing"])
def test_output_in_chinese_on_a_phone(page, wait_for_app, screenshot, view):
    p = page(f"/output-and-loss?model=copy&lang=zh&output_and_loss_view={view}", locale="zh-CN")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("output_and_loss.title", "zh"))
    expect(p.get_by_text(translate(f"output_and_loss.section_about.{view}", "zh"))).to_be_visible()
    screenshot(p, f"output_{view}_zh")
    p.set_viewport_size(PHONE)
    overflow = overflow_once_settled(p)
    assert overflow["page"] <= PHONE["width"] + 1 and not overflow["sticking"], overflow
    screenshot(p, f"output_{view}_zh_phone")
    assert p.locator(EXCEPTION).count() == 0


def test_output_bad_url_values_fall_back(page, wait_for_app):
    p = page("/output-and-loss?model=copy&lang=en&output_and_loss_view=nope&output_and_loss_temp=99&output_and_loss_pos=-3")
    expect(charts(p, "output_and_loss.logits")).to_have_count(1)
    assert query(p)["output_and_loss_view"] == "logits" and query(p)["output_and_loss_temp"] == "1.0" and query(p)["output_and_loss_pos"] == "0"
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_why_softmax_with_typed_scores_and_the_constant(page, wait_for_app, screenshot, lang):
    """#31: typed scores and the constant c, in the browser; on a phone the chart fits the screen."""
    p = page(f"/output-and-loss?model=copy&lang={lang}&output_and_loss_view=seed", locale="zh-CN" if lang == "zh" else "en-US")
    expect(charts(p, "output_and_loss.why_chart")).to_have_count(1)
    type_into(p, wait_for_app, "output_and_loss.scores", "-1, 0, 1")
    p.wait_for_url(re.compile(r"[?&]output_and_loss_scores=-1"))
    expect(p.get_by_text(translate("output_and_loss.seed.why.zero_sum", lang, softmax="[0.090, 0.245, 0.665]"))
           ).to_be_visible()
    press(p, wait_for_app, "output_and_loss.shift", "ArrowRight", "output_and_loss_shift", "0.5")
    expect(p.get_by_text(translate("output_and_loss.seed.why.negative", lang, ratio="[-0.333, 0.333, 1.000]",
                                   which="x1 + c"))).to_be_visible()
    widget(p, "output_and_loss.why_chart").scroll_into_view_if_needed()
    screenshot(p, f"output_why_softmax_{lang}")
    p.set_viewport_size(PHONE)
    overflow = overflow_once_settled(p)
    assert overflow["page"] <= PHONE["width"] + 1 and not overflow["sticking"], overflow
    box = settled_box(charts(p, "output_and_loss.why_chart"))
    assert box is not None and box["width"] <= PHONE["width"]
    screenshot(p, f"output_why_softmax_{lang}_phone")
    assert p.locator(EXCEPTION).count() == 0
