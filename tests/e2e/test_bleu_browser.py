"""The BLEU page in a real browser: every control, both languages, a phone-wide window.

Needs a shipped model (assets/checkpoints); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import EXCEPTION, MAIN, charts, choose, settled_box, widget
from ui import models
from ui.i18n import translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]


def metric(p, label: str) -> str:
    """The value of the st.metric labelled ``label``."""
    box = p.get_by_test_id("stMetric").filter(has=p.get_by_text(label, exact=True))
    return box.get_by_test_id("stMetricValue").inner_text().strip()


def settle(p, wait_for_app, pattern: str) -> None:
    """Wait until the URL matches ``pattern`` and the run it started has finished, without an exception."""
    p.wait_for_url(re.compile(pattern))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


def click_radio(p, wait_for_app, key: str, label: str, pattern: str) -> None:
    """Click option ``label`` of the st.radio ``key`` and wait for ``pattern`` in the URL."""
    widget(p, key).get_by_text(label, exact=True).click()
    settle(p, wait_for_app, pattern)


def type_box(p, wait_for_app, key: str, text: str, pattern: str) -> None:
    box = widget(p, key).locator("input")
    box.fill(text)
    box.press("Enter")
    settle(p, wait_for_app, pattern)


def test_bleu_every_control(page, wait_for_app, screenshot):
    p = page("/bleu?lang=en&model=copy")  # a character model: BLEU on characters
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("bleu.title", "en"))
    expect(charts(p, "bleu.corpus_chart")).to_have_count(1)
    expect(p.get_by_text(re.compile(r'sacrebleu tokenize="char"'))).to_be_visible()
    bleu_label, exact_label = translate("bleu.metric.bleu", "en"), translate("bleu.metric.exact", "en")
    assert float(metric(p, bleu_label)) > 90  # a shipped model on its own task
    screenshot(p, "bleu_corpus_en")

    click_radio(p, wait_for_app, "bleu.noise", translate("bleu.noise.swap", "en"), r"bleu_noise=swap(&|$)")
    expect(p.get_by_test_id("stMetric").filter(has=p.get_by_text(exact_label, exact=True))
           .get_by_test_id("stMetricValue")).to_have_text("0.0%")
    assert 50 < float(metric(p, bleu_label)) < 100  # one wrong token: exact match 0, BLEU only a little lower
    expect(p.get_by_text(re.compile(r"^Sample \d+ is wrong"))).to_be_visible()
    click_radio(p, wait_for_app, "bleu.noise", translate("bleu.noise.short", "en"), r"bleu_noise=short(&|$)")
    assert float(metric(p, translate("bleu.metric.bp", "en"))) < 1
    screenshot(p, "bleu_corpus_short_en")

    slider = widget(p, "bleu.n").get_by_role("slider")
    slider.focus()
    slider.press("ArrowRight")
    settle(p, wait_for_app, r"bleu_n=60(&|$)")
    expect(widget(p, "bleu.samples_csv")).to_have_count(1)
    type_box(p, wait_for_app, "bleu.seed", "3", r"bleu_seed=3(&|$)")

    choose(p, wait_for_app, "bleu.section", translate("bleu.section.worked", "en"), "bleu_view", "worked")
    expect(charts(p, "bleu.worked_chart")).to_have_count(1)
    expect(p.get_by_text(re.compile(r"^sacrebleu agrees"))).to_be_visible()
    choose(p, wait_for_app, "bleu.order", translate("bleu.order_name", "en", n=2), "bleu_order", "2")
    expect(p.get_by_text(re.compile(r"p_2")).first).to_be_attached()
    p.get_by_role("combobox", name=translate("bleu.worked.pick", "en"), exact=True).click()
    p.get_by_role("option").nth(4).click()
    settle(p, wait_for_app, r"bleu_pick=4(&|$)")
    screenshot(p, "bleu_worked_sample_en")

    click_radio(p, wait_for_app, "bleu.pair", translate("bleu.worked.pair.typed", "en"), r"bleu_pair=typed(&|$)")
    type_box(p, wait_for_app, "bleu.reference", "the cat is on the mat", r"bleu_ref=the")
    type_box(p, wait_for_app, "bleu.candidate", "the the the the", r"bleu_cand=the")
    click_radio(p, wait_for_app, "bleu.tokenize", translate("bleu.tokenize_name.13a", "en"), r"bleu_tok=13a(&|$)")
    expect(p.get_by_text(re.compile(r"^No match at all for: 2-gram, 3-gram, 4-gram"))).to_be_visible()
    expect(p.get_by_text(re.compile(r"^sacrebleu agrees"))).to_be_visible()
    screenshot(p, "bleu_worked_typed_en")


def test_bleu_in_chinese_on_a_phone(page, wait_for_app, screenshot):
    model, tokenize = ("en-zh", "zh") if "en-zh" in models.shipped_models() else ("copy", "char")
    p = page(f"/bleu?lang=zh&bleu_noise=swap&model={model}")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("bleu.title", "zh"))
    expect(p.get_by_text(re.compile(f'sacrebleu tokenize="{tokenize}"'))).to_be_visible()
    expect(charts(p, "bleu.corpus_chart")).to_have_count(1)
    assert metric(p, translate("bleu.metric.exact", "zh")) == "0.0%"
    screenshot(p, "bleu_corpus_zh")
    p.set_viewport_size({"width": 390, "height": 900})
    wait_for_app(p)
    screenshot(p, "bleu_corpus_zh_phone")
    choose(p, wait_for_app, "bleu.section", translate("bleu.section.worked", "zh"), "bleu_view", "worked")
    expect(charts(p, "bleu.worked_chart")).to_have_count(1)
    expect(p.get_by_text(re.compile(r"^sacrebleu 的结果一致"))).to_be_visible()
    screenshot(p, "bleu_worked_zh_phone")
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bleu_int8_weights(page, wait_for_app, screenshot, lang):
    """The int8 section: sizes, the answers before and after, one head's maps side by side; a control changes
    the maps; on a phone (390 px) nothing sticks out."""
    from tests.e2e.test_phone_browser import PHONE, overflow_once_settled

    p = page(f"/bleu?lang={lang}&model=copy&bleu_view=int8&bleu_n=20", locale="zh-CN" if lang == "zh" else "en-US")
    expect(p.get_by_text(translate("bleu.int8.size.heading", lang), exact=True)).to_be_visible()
    expect(p.get_by_text(translate("bleu.int8.metric.changed", lang), exact=True)).to_be_visible()
    for name in ("float32", "int8"):
        expect(charts(p, f"bleu.int8_map_{name}")).to_have_count(1)
    title = translate("bleu.int8.attention.title", lang, model="int8", layer=1, head=1)
    expect(charts(p, "bleu.int8_map_int8").get_by_text(title)).to_have_count(1)
    choose(p, wait_for_app, "bleu.q_kind", translate("bleu.int8.attention.kinds.encoder", lang), "bleu_q_kind",
           "encoder")
    choose(p, wait_for_app, "bleu.q_head", "2", "bleu_q_head", "2")
    title = translate("bleu.int8.attention.title", lang, model="int8", layer=1, head=2)
    expect(charts(p, "bleu.int8_map_int8").get_by_text(title)).to_have_count(1)
    expect(p.get_by_text(translate("bleu.int8.others.heading", lang), exact=True)).to_be_visible()
    widget(p, "bleu.int8_map_int8").scroll_into_view_if_needed()
    screenshot(p, f"bleu_int8_{lang}")
    assert p.locator(EXCEPTION).count() == 0
    # A phone opens the view at its own width (a table in the closed expander keeps the width it was drawn at).
    p = page(f"/bleu?lang={lang}&model=copy&bleu_view=int8&bleu_n=20&bleu_q_kind=encoder&bleu_q_head=2",
             locale="zh-CN" if lang == "zh" else "en-US", phone=True)
    expect(charts(p, "bleu.int8_map_int8").get_by_text(title)).to_have_count(1)
    overflow = overflow_once_settled(p)
    assert overflow["page"] <= PHONE["width"] + 1 and not overflow["sticking"], overflow
    box = settled_box(charts(p, "bleu.int8_map_int8"))
    assert box is not None and box["width"] <= PHONE["width"]
    screenshot(p, f"bleu_int8_{lang}_phone")
    assert p.locator(EXCEPTION).count() == 0
