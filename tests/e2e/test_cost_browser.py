"""The cost-of-attention page (with its latent attention section) and the attention page's "what attention
produces" view in a real browser: both languages, every control, a phone-wide window; screenshots go to
test-artifacts/.

Needs a shipped model (assets/checkpoints). The measurement runs once per server process (then kept), so the
first test that presses the button waits for it (at most about 10 s of measuring, on a busy machine more).
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import EXCEPTION, MAIN, charts, choose, query, settled_box, widget
from ui import models
from ui.i18n import translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]
MEASURE_TIMEOUT_MS = 120_000


def measured(p, wait_for_app, lang: str) -> None:
    """Press the button if the page still shows it, and wait for the chart."""
    button = widget(p, "attention_cost.measure").get_by_role("button")
    chart = charts(p, "attention_cost.chart")
    expect(button.or_(chart).first).to_be_visible()  # the model may still be loading under a busy machine
    if button.count():
        button.click()
    expect(chart).to_have_count(1, timeout=MEASURE_TIMEOUT_MS)
    wait_for_app(p)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cost_page_table_measurement_and_axes(page, wait_for_app, screenshot, lang):
    p = page(f"/attention-cost?lang={lang}", locale="zh-CN" if lang == "zh" else "en-US")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("attention_cost.title", lang))
    table = p.locator(f"{MAIN} table").first
    expect(table).to_contain_text(translate("attention_cost.table.row_self_attention", lang))
    expect(table).to_contain_text(translate("attention_cost.table.col_path", lang))
    measured(p, wait_for_app, lang)
    expect(p.locator(f"{MAIN} [data-testid='stMetric']")).to_have_count(2 + 3)  # the slopes, the latent maps' numbers
    screenshot(p, f"cost_measured_{lang}")

    widget(p, "attention_cost.log").get_by_text(translate("attention_cost.result.log", lang), exact=True).click()
    p.wait_for_url(re.compile(r"attention_cost_log=false"))
    wait_for_app(p)
    expect(charts(p, "attention_cost.chart")).to_have_count(1)
    screenshot(p, f"cost_linear_{lang}")
    with p.expect_download() as download:
        widget(p, "attention_cost.export").get_by_role("button").click()
    lines = download.value.path().read_text(encoding="utf-8").splitlines()
    assert lines[0] == "length,path,seconds,memory_bytes"
    assert {line.split(",")[1] for line in lines[1:]} == {"explicit", "sdpa"}
    assert p.locator(EXCEPTION).count() == 0


def test_cost_page_fits_a_phone_wide_window(page, wait_for_app, screenshot):
    p = page("/attention-cost?lang=en")
    p.set_viewport_size({"width": 390, "height": 844})
    wait_for_app(p)
    measured(p, wait_for_app, "en")
    for element in (p.locator(f"{MAIN} [data-testid='stTable']").first, charts(p, "attention_cost.chart")):
        box = element.bounding_box()  # the table scrolls inside its box rather than running off the screen
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    screenshot(p, "cost_390px")
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_what_attention_produces_in_both_languages(page, wait_for_app, screenshot, lang):
    p = page(f"/attention?lang={lang}&attention_view=inside&attention_kind=encoder&attention_layer=1&attention_head=1",
             locale="zh-CN" if lang == "zh" else "en-US")
    expect(p.get_by_text(translate("attention.head_output.heading", lang), exact=True)).to_be_visible()
    chart = charts(p, "attention.head_output")
    expect(chart).to_have_count(1)
    expect(chart.locator(".annotation-text")).to_have_count(3)  # the three steps' titles, shapes in them
    choose(p, wait_for_app, "attention.head", "2", "attention_head", "2")
    expect(chart.locator(".annotation-text").first).to_contain_text("2")
    chart.scroll_into_view_if_needed()
    screenshot(p, f"attention_head_output_{lang}")
    with p.expect_download() as download:
        widget(p, "attention.export_head_output").get_by_role("button").click()
    header = download.value.path().read_text(encoding="utf-8").splitlines()[0]
    assert header == "matrix,query_position,query_token,column,value"
    assert p.locator(EXCEPTION).count() == 0


def test_what_attention_produces_fits_a_phone_wide_window(page, wait_for_app, screenshot):
    p = page("/attention?lang=en&attention_view=inside&attention_kind=cross")
    p.set_viewport_size({"width": 390, "height": 844})
    wait_for_app(p)
    chart = charts(p, "attention.head_output")
    expect(chart).to_have_count(1)
    chart.scroll_into_view_if_needed()
    box = settled_box(chart)
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    screenshot(p, "attention_head_output_390px")
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_latent_attention_renders_and_its_slider_changes_the_maps(page, wait_for_app, screenshot, lang):
    p = page(f"/attention-cost?lang={lang}&attention_cost_latents=2", locale="zh-CN" if lang == "zh" else "en-US")
    expect(p.get_by_text(translate("attention_cost.latent.heading", lang), exact=True)).to_be_visible()
    maps = charts(p, "attention_cost.latent_maps")
    expect(maps).to_have_count(1)
    expect(maps.locator(".annotation-text")).to_have_count(4)  # R, W, W·R and the model's own map
    read_title = maps.locator(".annotation-text").first
    expect(read_title).to_have_text(re.compile(r"^R[:：] ?2 "))
    slider = widget(p, "attention_cost.latents").get_by_role("slider")
    slider.focus()
    slider.press("ArrowRight")
    p.wait_for_url(re.compile(r"[?&]attention_cost_latents=3(&|$)"))
    wait_for_app(p)
    expect(read_title).to_have_text(re.compile(r"^R[:：] ?3 "))
    expect(widget(p, "attention_cost.latent_measure").get_by_role("button")).to_contain_text("k = 3")
    maps.scroll_into_view_if_needed()
    screenshot(p, f"cost_latent_{lang}")
    assert p.locator(EXCEPTION).count() == 0


def test_latent_attention_fits_a_phone_wide_window_and_measures(page, wait_for_app, screenshot):
    p = page("/attention-cost?lang=en", phone=True)
    maps = charts(p, "attention_cost.latent_maps")
    expect(maps).to_have_count(1)
    maps.scroll_into_view_if_needed()
    box = settled_box(maps)
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    tops = {round(title.bounding_box()["y"]) for title in maps.locator(".annotation-text").all()}
    assert len(tops) == 4, "on a phone the four maps stand one under another"
    screenshot(p, "cost_latent_390px")
    widget(p, "attention_cost.latent_measure").get_by_role("button").click()
    chart = charts(p, "attention_cost.latent_chart")
    expect(chart).to_have_count(1, timeout=MEASURE_TIMEOUT_MS)
    wait_for_app(p)
    chart.scroll_into_view_if_needed()
    box = settled_box(chart)
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    screenshot(p, "cost_latent_measured_390px")
    assert p.locator(EXCEPTION).count() == 0
