"""The attention page in a real browser: every control, a click on the grid, both languages, bad
input, a phone-wide window.

Needs a shipped model (assets/checkpoints); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import EXCEPTION, MAIN, PHONE_USER_AGENT, charts, choose, query, settled_box, type_into, widget
from ui import models
from ui.i18n import translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]

def test_attention_every_control(page, wait_for_app, screenshot):
    p = page("/attention?model=copy&lang=en")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("attention.title", "en"))
    expect(charts(p, "attention.grid")).to_have_count(1)
    expect(charts(p, "attention.zoom")).to_have_count(1)
    screenshot(p, "attention_overview_en")

    for kind in ("decoder", "cross", "encoder"):
        choose(p, wait_for_app, "attention.kind", translate(f"attention.kind.{kind}", "en"), "attention_kind", kind)
        expect(widget(p, "attention.zoom")).to_contain_text(translate(f"attention.kind.{kind}", "en"))
    choose(p, wait_for_app, "attention.kind", translate("attention.kind.cross", "en"), "attention_kind", "cross")
    choose(p, wait_for_app, "attention.layer", "1", "attention_layer", "1")
    choose(p, wait_for_app, "attention.head", "2", "attention_head", "2")
    expect(widget(p, "attention.zoom")).to_contain_text("layer 1, head 2")
    # Layer and head live in one fragment: a new head keeps the layer, a new layer keeps the head.
    cfg = models.get_model("copy").model.config
    last_layer, last_head = str(cfg.n_layers), str(cfg.n_heads)
    choose(p, wait_for_app, "attention.layer", last_layer, "attention_layer", last_layer)
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer {last_layer}, head 2")
    choose(p, wait_for_app, "attention.head", last_head, "attention_head", last_head)
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer {last_layer}, head {last_head}")
    assert query(p)["attention_layer"] == last_layer
    choose(p, wait_for_app, "attention.layer", "1", "attention_layer", "1")
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer 1, head {last_head}")

    # A click on the last small map (bottom right of the one chart) selects its layer and head.
    plot_area = widget(p, "attention.grid").locator(".nsewdrag")
    plot_area.scroll_into_view_if_needed()
    box = plot_area.bounding_box()
    p.mouse.click(box["x"] + box["width"] * 0.9, box["y"] + box["height"] * 0.8)
    p.wait_for_url(re.compile(rf"attention_layer={cfg.n_layers}(&|$)"))
    wait_for_app(p)
    assert query(p)["attention_head"] == str(cfg.n_heads)
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer {last_layer}, head {last_head}")
    screenshot(p, "attention_grid_click_en")

    # The PNG button of plotly's modebar is there; the CSV download gives every head.
    charts(p, "attention.zoom").hover()
    with p.expect_download() as png:
        widget(p, "attention.zoom").locator('[data-title="Download plot as a PNG"]').click()
    assert png.value.suggested_filename.endswith(".png")
    with p.expect_download() as download:
        widget(p, "attention.export_grid").get_by_role("button").click()
    csv = download.value.path().read_text(encoding="utf-8").splitlines()
    assert csv[0] == "layer,head,query_position,query_token,key_position,key_token,weight"
    rows = [line.split(",") for line in csv[1:]]
    assert {(int(r[0]), int(r[1])) for r in rows} == {(l, h) for l in range(1, cfg.n_layers + 1)
                                                       for h in range(1, cfg.n_heads + 1)}
    n_queries = len("hello world") + 1  # cross-attention: <bos> + one row per answer character
    assert len({int(r[2]) for r in rows}) == n_queries
    assert len(rows) == cfg.n_layers * cfg.n_heads * n_queries * len({int(r[4]) for r in rows})

    choose(p, wait_for_app, "attention.section", translate("attention.section.heads", "en"), "attention_view", "heads")
    expect(charts(p, "attention.head_view")).to_have_count(1)
    widget(p, "attention.all_heads").get_by_text(translate("attention.heads.all", "en"), exact=True).click()
    p.wait_for_url(re.compile(r"attention_all=false"))
    wait_for_app(p)
    screenshot(p, "attention_head_view_en")

    choose(p, wait_for_app, "attention.section", translate("attention.section.inside", "en"), "attention_view", "inside")
    for key in ("attention.vectors", "attention.scores", "attention.weights"):
        expect(charts(p, key)).to_have_count(1)
    widget(p, "attention.scale").get_by_text(translate("attention.inside.scale", "en"), exact=True).click()
    p.wait_for_url(re.compile(r"attention_scale=false"))
    wait_for_app(p)
    expect(p.get_by_text(translate("attention.inside.scores_raw", "en"))).to_be_visible()
    screenshot(p, "attention_inside_unscaled_en")

    choose(p, wait_for_app, "attention.section", translate("attention.section.stats", "en"), "attention_view", "stats")
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    screenshot(p, "attention_stats_en")

    choose(p, wait_for_app, "attention.section", translate("attention.section.ablation", "en"), "attention_view",
           "ablation")
    option = translate("attention.ablation.option", "en", kind=translate("attention.kind.cross", "en"), layer=1,
                       head=1)
    box = widget(p, "attention.ablate").locator("input")
    box.click()
    box.press_sequentially(option)
    box.press("Enter")
    p.wait_for_url(re.compile(r"attention_off=cross-1-1"))
    p.keyboard.press("Escape")
    wait_for_app(p)
    expect(p.get_by_text(translate("attention.ablation.probability_same", "en"))).to_be_visible()
    expect(charts(p, "attention.ablation_chart")).to_have_count(1)
    screenshot(p, "attention_ablation_en")
    assert p.locator(EXCEPTION).count() == 0


def test_attention_in_chinese_with_bad_input(page, wait_for_app, screenshot):
    p = page("/attention?model=copy&lang=zh&attention_view=inside&attention_kind=decoder", locale="zh-CN")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("attention.title", "zh"))
    expect(p.get_by_text(translate("attention.section.inside", "zh"), exact=True)).to_be_visible()
    screenshot(p, "attention_inside_zh")
    type_into(p, wait_for_app, "attention.text", "<b>x</b> ☃")
    unknown = re.compile(re.escape(translate("common.input.unknown_chars", "zh", chars="")) + ".*☃")
    expect(p.locator(f"{MAIN} [data-testid='stAlert']").filter(has_text=unknown)).to_be_visible()
    assert "<b>x" not in (widget(p, "attention.scores").inner_html())
    type_into(p, wait_for_app, "attention.text", "")
    expect(p.get_by_text(translate("common.input.empty", "zh"))).to_be_visible()
    expect(charts(p, "attention.scores")).to_have_count(0)
    screenshot(p, "attention_empty_zh")
    assert p.locator(EXCEPTION).count() == 0


def test_attention_fits_a_phone_wide_window(page, wait_for_app, screenshot):
    p = page("/attention?model=copy&lang=en")
    expect(charts(p, "attention.grid")).to_have_count(1)
    expect(charts(p, "attention.phone_grid")).to_have_count(0)  # only the layout shown is sent
    p.set_viewport_size({"width": 390, "height": 844})  # the page reports the narrow window: one run
    grid, zoom = charts(p, "attention.phone_grid"), charts(p, "attention.zoom")  # the overview drawn for a phone
    expect(grid).to_have_count(1)
    wait_for_app(p)
    expect(charts(p, "attention.grid")).to_have_count(0)
    expect(zoom).to_have_count(1)
    cfg = models.get_model("copy").model.config
    expect(grid.locator(".annotation-text")).to_have_count(cfg.n_layers * cfg.n_heads)  # a title per small map
    for chart in (grid, zoom):
        box = chart.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    screenshot(p, "attention_overview_390px")
    p.set_viewport_size({"width": 1440, "height": 1000})  # and back: the wide overview again
    expect(charts(p, "attention.grid")).to_have_count(1)
    wait_for_app(p)
    expect(charts(p, "attention.phone_grid")).to_have_count(0)
    assert p.locator(EXCEPTION).count() == 0


def test_a_phone_gets_its_overview_in_the_first_run_and_a_wider_window_the_wide_one(browser, server_url,
                                                                                       wait_for_app):
    """A phone's browser is known by its User-Agent: its first run draws the phone's overview (no second
    run to correct it); turned to a window wider than 640 px, the wide one replaces it."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, user_agent=PHONE_USER_AGENT,
                                  is_mobile=True, has_touch=True)
    # Remembers whether the wide overview was ever on the page (a wrong first guess draws it, then corrects it).
    context.add_init_script("new MutationObserver(() => { if (document.querySelector('.st-key-attention-grid'))"
                            " window.tpWideSeen = true; }).observe(document, {childList: true, subtree: true});")
    p = context.new_page()
    sent = []  # every message the page sends the server (a run asked for is one)
    p.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    p.goto(f"{server_url}/attention?model=copy&lang=en")
    expect(charts(p, "attention.phone_grid")).to_have_count(1, timeout=60_000)
    wait_for_app(p)
    first_run = len(sent)
    p.wait_for_timeout(1500)  # a wrong guess would be reported at once
    assert len(sent) == first_run and not p.evaluate("window.tpWideSeen === true"), "drawn for a desktop first"
    p.set_viewport_size({"width": 900, "height": 844})
    expect(charts(p, "attention.grid")).to_have_count(1)
    wait_for_app(p)
    expect(charts(p, "attention.phone_grid")).to_have_count(0)
    assert len(sent) > first_run  # the width was reported
    assert p.locator(EXCEPTION).count() == 0
    context.close()


def boxes(locator) -> list[dict]:
    """The on-screen boxes of every element ``locator`` finds."""
    return [box for box in (locator.nth(i).bounding_box() for i in range(locator.count())) if box]


def overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def locale(lang: str) -> str:
    return "zh-CN" if lang == "zh" else "en-US"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_all_heads_are_side_by_side_panels_each_in_its_own_colour(page, screenshot, lang):
    """Issue #24: overlaid, four heads' translucent lines blended into one brown tangle. Each head now has
    its own panel: the lines of one colour never reach into another colour's panel."""
    p = page(f"/attention?lang={lang}&model=reverse&attention_view=heads&attention_kind=cross&attention_all=true",
             locale=locale(lang))
    chart = charts(p, "attention.head_view")
    expect(chart).to_have_count(1)
    lines = chart.locator(".scatterlayer .js-line")
    spans: dict[str, tuple[float, float]] = {}
    for i in range(lines.count()):
        colour = lines.nth(i).evaluate("e => getComputedStyle(e).stroke")
        box = lines.nth(i).bounding_box()
        if box and box["width"] > 0:
            lo, hi = spans.get(colour, (box["x"], box["x"] + box["width"]))
            spans[colour] = (min(lo, box["x"]), max(hi, box["x"] + box["width"]))
    cfg = models.get_model("reverse").model.config
    assert len(spans) == cfg.n_heads, spans
    ordered = sorted(spans.values())
    assert all(a[1] < b[0] for a, b in zip(ordered, ordered[1:])), ordered
    screenshot(p, f"attention_head_view_panels_{lang}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reverse_opens_on_its_sharpest_cross_attention_head_and_the_statistics_show_it(page, wait_for_app,
                                                                                         screenshot, lang):
    """Reverse's clean anti-diagonal is in layer 2: the page opens there (computed), and the statistics'
    focus bars write their values without one label covering another."""
    from explain.attention import attention_maps, attention_view, most_focused_head
    from model.tasks import get_task
    ckpt = models.get_model("reverse")
    layer, head = most_focused_head(attention_maps(attention_view(ckpt, get_task("reverse").example), "cross"))
    assert layer == ckpt.model.config.n_layers, "the anti-diagonal heads are in the last layer"
    p = page(f"/attention?lang={lang}&model=reverse&attention_kind=cross", locale=locale(lang))
    expect(p).to_have_url(re.compile(rf"attention_layer={layer}&attention_head={head}|attention_head={head}.*attention_layer={layer}"))
    for key, value in (("attention.layer", layer), ("attention.head", head)):
        expect(widget(p, key).get_by_role("radio", name=str(value), exact=True)).to_be_checked()
    screenshot(p, f"attention_reverse_focused_{lang}")
    choose(p, wait_for_app, "attention.section", translate("attention.section.stats", lang), "attention_view", "stats")
    chart = charts(p, "attention.stats_chart")
    expect(chart).to_have_count(1)
    labels = boxes(chart.locator(".barlayer text"))
    assert len(labels) == ckpt.model.config.n_layers * ckpt.model.config.n_heads
    assert not any(overlap(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]), labels
    screenshot(p, f"attention_stats_focus_{lang}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_inside_one_head_switches_to_additive_compatibility_and_fits_a_phone(page, wait_for_app, screenshot, lang):
    """Paper section 3.2.1: the same Q and K scored by vᵀtanh(W_q q + W_k k), with what each function costs."""
    p = page(f"/attention?model=copy&lang={lang}&attention_view=inside&attention_kind=encoder", locale=locale(lang))
    expect(charts(p, "attention.scores")).to_have_count(1)
    expect(charts(p, "attention.additive_scores")).to_have_count(0)
    choose(p, wait_for_app, "attention.compat", translate("attention.compat.option.additive", lang),
           "attention_compat", "additive")
    for key in ("attention.additive_scores", "attention.additive_weights"):
        expect(charts(p, key)).to_have_count(1)
    expect(charts(p, "attention.scores")).to_have_count(0)
    expect(p.get_by_text(translate("attention.compat.cost.heading", lang), exact=True)).to_be_visible()
    expect(p.locator(f"{MAIN} [data-testid='stTable']")).to_contain_text(
        translate("attention.compat.cost.row_tanh", lang))
    widget(p, "attention.additive_scores").scroll_into_view_if_needed()
    screenshot(p, f"attention_additive_{lang}")
    p.set_viewport_size({"width": 390, "height": 844})
    wait_for_app(p)
    for key in ("attention.additive_scores", "attention.additive_weights"):
        box = settled_box(charts(p, key))
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    screenshot(p, f"attention_additive_{lang}_390px")
    choose(p, wait_for_app, "attention.compat", translate("attention.compat.option.dot", lang), "attention_compat",
           "dot")
    expect(charts(p, "attention.scores")).to_have_count(1)
    assert p.locator(EXCEPTION).count() == 0


def test_cross_attention_outlines_the_gold_alignment_and_scores_every_head(page, wait_for_app, screenshot):
    """en-zh's cross-attention: the grammar's alignment framed in red over the head, every head's score as a bar,
    the outline switched off and on through the URL, the best head one click away, and a phone-wide window."""
    if "en-zh" not in models.shipped_models():
        pytest.skip("no shipped en-zh model")
    from explain.alignment import head_alignment
    from model.tasks import get_task
    best_layer, best_head, _ = head_alignment(models.get_model("en-zh"), get_task("en-zh").example).best[0]
    other = (1, 1) if (best_layer, best_head) != (1, 1) else (1, 2)
    p = page(f"/attention?model=en-zh&lang=en&attention_kind=cross&attention_layer={other[0]}"
             f"&attention_head={other[1]}")
    outline = charts(p, "attention.zoom").locator(".scatterlayer path.js-line")  # one path per straight edge
    expect(outline.first).to_be_attached()
    assert "rgb(255, 43, 43)" in outline.first.get_attribute("style")  # the red of the outline
    expect(charts(p, "attention.alignment_chart")).to_have_count(1)
    expect(p.get_by_text(translate("attention.alignment.heading", "en"), exact=True)).to_be_visible()
    widget(p, "attention.zoom").scroll_into_view_if_needed()
    screenshot(p, "attention_alignment_en")

    switch = widget(p, "attention.alignment").locator("label").first  # the switch's input is hidden under its label
    switch.click()
    p.wait_for_url(re.compile(r"[?&]attention_alignment=false(&|$)"))
    wait_for_app(p)
    expect(outline).to_have_count(0)
    switch.click()
    p.wait_for_url(re.compile(r"[?&]attention_alignment=true(&|$)"))
    wait_for_app(p)
    expect(outline.first).to_be_attached()

    widget(p, "attention.alignment_best").locator("button").click()
    p.wait_for_url(re.compile(rf"attention_layer={best_layer}(&|$)"))
    wait_for_app(p)
    assert query(p)["attention_head"] == str(best_head)
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer {best_layer}, head {best_head}")

    p.set_viewport_size({"width": 390, "height": 844})
    wait_for_app(p)
    widget(p, "attention.alignment_chart").scroll_into_view_if_needed()
    box = settled_box(charts(p, "attention.alignment_chart"))
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    screenshot(p, "attention_alignment_390px")
    assert p.locator(EXCEPTION).count() == 0
