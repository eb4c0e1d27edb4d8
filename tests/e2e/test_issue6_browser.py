"""The attention and decoding pages in a real browser: every control, both languages, bad input.

Needs a shipped model (assets/checkpoints); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from ui import models
from ui.i18n import translate

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]

EXCEPTION = '[data-testid="stException"]'
MAIN = '[data-testid="stMain"]'


def query(p) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(p.url).query).items()}


def widget(p, key: str):
    """The element of the widget with session key ``key`` (Streamlit writes dots as hyphens)."""
    return p.locator(f".st-key-{key.replace('.', '-')}")


def choose(p, wait_for_app, key: str, label: str, param: str, value: str) -> None:
    """Click option ``label`` of the segmented control ``key`` and wait until ``?param=value``."""
    widget(p, key).get_by_role("radio", name=label, exact=True).click()
    p.wait_for_url(re.compile(rf"[?&]{param}={re.escape(value)}(&|$)"))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


def charts(p, key: str):
    return widget(p, key).locator(".js-plotly-plot")


def type_into(p, wait_for_app, key: str, text: str) -> None:
    box = widget(p, key).locator("input")
    box.fill(text)
    box.press("Enter")
    wait_for_app(p)


# ------------------------------------------------------------------ attention


def test_attention_every_control(page, wait_for_app, screenshot):
    p = page("/attention?lang=en")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("attention.title", "en"))
    expect(charts(p, "attention.grid")).to_have_count(1)
    expect(charts(p, "attention.zoom")).to_have_count(1)
    screenshot(p, "issue6_attention_overview_en")

    for kind in ("decoder", "cross", "encoder"):
        choose(p, wait_for_app, "attention.kind", translate(f"attention.kind.{kind}", "en"), "att_kind", kind)
        expect(widget(p, "attention.zoom")).to_contain_text(translate(f"attention.kind.{kind}", "en"))
    choose(p, wait_for_app, "attention.kind", translate("attention.kind.cross", "en"), "att_kind", "cross")
    choose(p, wait_for_app, "attention.layer", "1", "att_layer", "1")
    choose(p, wait_for_app, "attention.head", "2", "att_head", "2")
    expect(widget(p, "attention.zoom")).to_contain_text("layer 1, head 2")
    # The head is a fragment inside the layer's: a new head keeps the layer, a new layer keeps the head.
    cfg = models.get_model(models.shipped_models()[0]).model.config
    last_layer, last_head = str(cfg.n_layers), str(cfg.n_heads)
    choose(p, wait_for_app, "attention.layer", last_layer, "att_layer", last_layer)
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer {last_layer}, head 2")
    choose(p, wait_for_app, "attention.head", last_head, "att_head", last_head)
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer {last_layer}, head {last_head}")
    assert query(p)["att_layer"] == last_layer
    choose(p, wait_for_app, "attention.layer", "1", "att_layer", "1")
    expect(widget(p, "attention.zoom")).to_contain_text(f"layer 1, head {last_head}")

    # A click on the last small map selects its layer and head.
    last = widget(p, "attention.grid").locator(".nsewdrag").last
    last.scroll_into_view_if_needed()
    box = last.bounding_box()
    p.mouse.click(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.4)
    p.wait_for_url(re.compile(rf"att_layer={cfg.n_layers}(&|$)"))
    wait_for_app(p)
    assert query(p)["att_head"] == str(cfg.n_heads)
    screenshot(p, "issue6_attention_grid_click_en")

    # The PNG button of plotly's modebar is there; the CSV download gives the shown map.
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

    choose(p, wait_for_app, "attention.section", translate("attention.section.heads", "en"), "att_view", "heads")
    expect(charts(p, "attention.head_view")).to_have_count(1)
    widget(p, "attention.all_heads").get_by_text(translate("attention.heads.all", "en"), exact=True).click()
    p.wait_for_url(re.compile(r"att_all=false"))
    wait_for_app(p)
    screenshot(p, "issue6_attention_head_view_en")

    choose(p, wait_for_app, "attention.section", translate("attention.section.inside", "en"), "att_view", "inside")
    for key in ("attention.vectors", "attention.scores", "attention.weights"):
        expect(charts(p, key)).to_have_count(1)
    widget(p, "attention.scale").get_by_text(translate("attention.inside.scale", "en"), exact=True).click()
    p.wait_for_url(re.compile(r"att_scale=false"))
    wait_for_app(p)
    expect(p.get_by_text(translate("attention.inside.scores_raw", "en"))).to_be_visible()
    screenshot(p, "issue6_attention_inside_unscaled_en")

    choose(p, wait_for_app, "attention.section", translate("attention.section.stats", "en"), "att_view", "stats")
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    screenshot(p, "issue6_attention_stats_en")

    choose(p, wait_for_app, "attention.section", translate("attention.section.ablation", "en"), "att_view",
           "ablation")
    option = translate("attention.ablation.option", "en", kind=translate("attention.kind.cross", "en"), layer=1,
                       head=1)
    box = widget(p, "attention.ablate").locator("input")
    box.click()
    box.press_sequentially(option)
    box.press("Enter")
    p.wait_for_url(re.compile(r"att_off=cross-1-1"))
    p.keyboard.press("Escape")
    wait_for_app(p)
    expect(p.get_by_text(translate("attention.ablation.probability_same", "en"))).to_be_visible()
    expect(charts(p, "attention.ablation_chart")).to_have_count(1)
    screenshot(p, "issue6_attention_ablation_en")
    assert p.locator(EXCEPTION).count() == 0


def test_attention_in_chinese_with_bad_input(page, wait_for_app, screenshot):
    p = page("/attention?lang=zh&att_view=inside&att_kind=decoder", locale="zh-CN")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("attention.title", "zh"))
    expect(p.get_by_text(translate("attention.section.inside", "zh"), exact=True)).to_be_visible()
    screenshot(p, "issue6_attention_inside_zh")
    type_into(p, wait_for_app, "attention.text", "<b>x</b> ☃")
    unknown = re.compile(re.escape(translate("common.input.unknown_chars", "zh", chars="")) + ".*☃")
    expect(p.locator(f"{MAIN} [data-testid='stAlert']").filter(has_text=unknown)).to_be_visible()
    assert "<b>x" not in (widget(p, "attention.scores").inner_html())
    type_into(p, wait_for_app, "attention.text", "")
    expect(p.get_by_text(translate("common.input.empty", "zh"))).to_be_visible()
    expect(charts(p, "attention.scores")).to_have_count(0)
    screenshot(p, "issue6_attention_empty_zh")
    assert p.locator(EXCEPTION).count() == 0


# ------------------------------------------------------------------ decoding


def test_decoding_every_control(page, wait_for_app, screenshot):
    p = page("/decoding?lang=en")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("decoding.title", "en"))
    expect(charts(p, "decoding.step_figure")).to_have_count(1)
    status = p.get_by_text(re.compile(r"^Step 1 of \d+"))
    expect(status).to_be_visible()

    widget(p, "decoding.next").get_by_role("button").click()
    p.wait_for_url(re.compile(r"dec_step=2(&|$)"))
    wait_for_app(p)
    widget(p, "decoding.next").get_by_role("button").click()
    p.wait_for_url(re.compile(r"dec_step=3(&|$)"))
    wait_for_app(p)
    expect(p.get_by_text(re.compile(r"^Step 3 of \d+"))).to_be_visible()
    widget(p, "decoding.prev").get_by_role("button").click()
    p.wait_for_url(re.compile(r"dec_step=2(&|$)"))
    wait_for_app(p)
    # Step 2 again: its status and figure come from the fragment's memo of the steps drawn so far.
    expect(p.get_by_text(re.compile(r"^Step 2 of \d+"))).to_be_visible()
    expect(charts(p, "decoding.step_figure").get_by_text(
        translate("decoding.steps.triangle", "en", layer=1, head=1))).to_be_visible()
    slider = widget(p, "dec_step").get_by_role("slider")
    slider.focus()
    slider.press("End")
    p.wait_for_url(re.compile(r"dec_step=(?!2(&|$))\d+"))
    wait_for_app(p)
    ended = p.locator(f"{MAIN} [data-testid='stAlertContentSuccess'], {MAIN} [data-testid='stAlertContentWarning']")
    expect(ended).to_have_count(1)
    expect(widget(p, "decoding.next").get_by_role("button")).to_be_disabled()
    screenshot(p, "issue6_decoding_last_step_en")

    choose(p, wait_for_app, "decoding.layer", "2", "dec_layer", "2")
    choose(p, wait_for_app, "decoding.head", "2", "dec_head", "2")
    # A new layer and head is a full run: the memo starts afresh, so the figure follows them.
    expect(charts(p, "decoding.step_figure").get_by_text(
        translate("decoding.steps.triangle", "en", layer=2, head=2))).to_be_visible()
    choose(p, wait_for_app, "decoding.strategy", translate("decoding.strategy_name.beam", "en"), "dec_strategy", "beam")
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    choose(p, wait_for_app, "decoding.strategy", translate("decoding.strategy_name.sample", "en"), "dec_strategy",
           "sample")
    expect(charts(p, "decoding.step_figure")).to_have_count(1)
    screenshot(p, "issue6_decoding_sampling_step_en")

    choose(p, wait_for_app, "decoding.section", translate("decoding.section.compare", "en"), "dec_view", "compare")
    beam = widget(p, "decoding.beam").get_by_role("slider")
    beam.focus()
    beam.press("Home")
    p.wait_for_url(re.compile(r"dec_beam=1(&|$)"))
    wait_for_app(p)
    texts = p.locator(f"{MAIN} [data-testid='stCode']").all_inner_texts()
    assert texts[0] == texts[1], "a beam of one is greedy decoding"
    temperature = widget(p, "decoding.temperature").get_by_role("slider")
    temperature.focus()
    temperature.press("End")
    p.wait_for_url(re.compile(r"dec_temp=2\.0(&|$)"))
    wait_for_app(p)
    top_k = widget(p, "decoding.top_k").get_by_role("slider")
    top_k.focus()
    top_k.press("Home")
    p.wait_for_url(re.compile(r"dec_topk=1(&|$)"))
    wait_for_app(p)
    seed = widget(p, "decoding.seed").locator("input")
    seed.fill("42")
    seed.press("Enter")
    p.wait_for_url(re.compile(r"dec_seed=42(&|$)"))
    wait_for_app(p)
    screenshot(p, "issue6_decoding_compare_en")

    choose(p, wait_for_app, "decoding.section", translate("decoding.section.forcing", "en"), "dec_view", "forcing")
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    expect(charts(p, "decoding.forcing_chart")).to_have_count(1)
    screenshot(p, "issue6_decoding_forcing_en")
    assert p.locator(EXCEPTION).count() == 0


def test_decoding_in_chinese_with_bad_input(page, wait_for_app, screenshot):
    p = page("/decoding?lang=zh&dec_view=steps&dec_step=3", locale="zh-CN")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("decoding.title", "zh"))
    assert query(p)["dec_step"] == "3"
    screenshot(p, "issue6_decoding_steps_zh")
    type_into(p, wait_for_app, "decoding.text", "x" * 120)
    expect(p.get_by_text(translate("common.input.truncated", "zh", limit=48)[:8])).to_be_visible()
    type_into(p, wait_for_app, "decoding.text", "   ")
    expect(p.get_by_text(translate("common.input.empty", "zh"))).to_be_visible()
    screenshot(p, "issue6_decoding_empty_zh")
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.skipif("dates" not in models.shipped_models(), reason="the dates model is not shipped yet")
def test_decoding_a_typed_target_when_the_task_has_none(page, wait_for_app, screenshot):
    p = page("/decoding?lang=en&model=dates&dec_view=forcing")
    type_into(p, wait_for_app, "decoding.text", "31 feb 2026")
    expect(p.get_by_text(translate("decoding.forcing.no_target", "en"))).to_be_visible()
    type_into(p, wait_for_app, "decoding.target", "2026-03-03")
    p.wait_for_url(re.compile(r"dec_target=2026-03-03"))
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    screenshot(p, "issue6_decoding_typed_target_en")
    assert p.locator(EXCEPTION).count() == 0


def test_decoding_step_link_follows_the_view(page, wait_for_app, screenshot):
    """The step slider is kept in the URL by Streamlit itself (bind="query-params"): the browser
    writes a moved slider, the server a step set in code; a bad link value gets our notice."""
    p = page("/decoding?lang=en&dec_step=abc")
    expect(p.get_by_text(re.compile(r"^Step 1 of \d+"))).to_be_visible()
    expect(p.locator("[data-testid='stToast']")).to_have_count(1)
    assert "dec_step" not in query(p), "the ignored value leaves the link"
    screenshot(p, "issue6_decoding_bad_step_link_en")

    slider = widget(p, "dec_step").get_by_role("slider")
    slider.focus()
    slider.press("End")
    p.wait_for_url(re.compile(r"dec_step=\d+"))
    wait_for_app(p)
    last = int(query(p)["dec_step"])
    expect(p.get_by_text(re.compile(rf"^Step {last} of {last}\b"))).to_be_visible()
    # A shorter sentence has fewer steps than the one shown: its decoding starts at step 1, and
    # the link says so (no dec_step: the default).
    type_into(p, wait_for_app, "decoding.text", "ab")
    expect(p.get_by_text(re.compile(r"^Step 1 of \d+"))).to_be_visible()
    assert "dec_step" not in query(p)

    for expected in (2, 3):
        widget(p, "decoding.next").get_by_role("button").click()
        p.wait_for_url(re.compile(rf"dec_step={expected}(&|$)"))
        wait_for_app(p)
    # Away to another page and back by the sidebar: the step is where it was, in the view and the link.
    p.locator('[data-testid="stSidebarNav"] a').filter(has_text=translate("tokens.title", "en")).click()
    p.wait_for_url(re.compile(r"/tokens(\?|$)"))
    wait_for_app(p)
    assert "dec_step" not in query(p)
    p.locator('[data-testid="stSidebarNav"] a').filter(has_text=translate("decoding.title", "en")).click()
    p.wait_for_url(re.compile(r"/decoding(\?|$)"))
    wait_for_app(p)
    expect(p.get_by_text(re.compile(r"^Step 3 of \d+"))).to_be_visible()
    p.wait_for_url(re.compile(r"dec_step=3(&|$)"))
    screenshot(p, "issue6_decoding_step_after_page_switch_en")
    assert p.locator(EXCEPTION).count() == 0
