"""The decoding page in a real browser: every control, both languages, bad input, links to a step.

Needs a shipped model (assets/checkpoints); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from figures.decoding import wrapped
from tests.e2e.widgets import EXCEPTION, MAIN, charts, choose, query, settled_box, type_into, wait_for, widget
from ui import models
from ui.i18n import translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]
ENDED = f"{MAIN} [data-testid='stAlertContentSuccess'], {MAIN} [data-testid='stAlertContentWarning']"


def step_status(p, step: int | str, n: int | str = r"\d+"):
    """The status line of step ``step`` of ``n`` ("Step 2 of 9. The decoder reads ...")."""
    return p.get_by_text(re.compile(rf"^Step {step} of {n}\b"))


def click_step(p, wait_for_app, button: str, expected: int) -> None:
    """Click ‹ Previous or Next › (``button``: "prev" / "next") and wait for ``?decoding_step=expected``."""
    widget(p, f"decoding.{button}").get_by_role("button").click()
    p.wait_for_url(re.compile(rf"decoding_step={expected}(&|$)"))
    wait_for_app(p)


def step_slider(p):
    return widget(p, "decoding.step").get_by_role("slider")


def test_decoding_every_control(page, wait_for_app, screenshot):
    p = page("/decoding?model=copy&lang=en")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("decoding.title", "en"))
    expect(charts(p, "decoding.step_figure")).to_have_count(1)
    expect(step_status(p, 1)).to_be_visible()
    expect(widget(p, "decoding.prev").get_by_role("button")).to_be_disabled()

    click_step(p, wait_for_app, "next", 2)
    click_step(p, wait_for_app, "next", 3)
    expect(step_status(p, 3)).to_be_visible()
    expect(step_slider(p)).to_have_value("3")
    click_step(p, wait_for_app, "prev", 2)
    expect(step_status(p, 2)).to_be_visible()
    for line in wrapped(translate("decoding.steps.triangle", "en", layer=1, head=1)).split("<br>"):  # two lines
        expect(charts(p, "decoding.step_figure").get_by_text(line)).to_be_visible()
    slider = step_slider(p)
    slider.focus()
    slider.press("End")
    p.wait_for_url(re.compile(r"decoding_step=(?!2(&|$))\d+"))
    wait_for_app(p)
    last = query(p)["decoding_step"]
    expect(step_status(p, last, last)).to_be_visible()
    expect(p.locator(ENDED)).to_have_count(1)
    expect(widget(p, "decoding.next").get_by_role("button")).to_be_disabled()
    screenshot(p, "decoding_last_step_en")

    choose(p, wait_for_app, "decoding.layer", "2", "decoding_layer", "2")
    choose(p, wait_for_app, "decoding.head", "2", "decoding_head", "2")
    # The figure follows the layer and head, and the step stays where it was.
    expect(charts(p, "decoding.step_figure").get_by_text(
        wrapped(translate("decoding.steps.triangle", "en", layer=2, head=2)).split("<br>")[-1])).to_be_visible()
    expect(step_status(p, last, last)).to_be_visible()
    choose(p, wait_for_app, "decoding.strategy", translate("decoding.strategy_name.beam", "en"), "decoding_strategy", "beam")
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    choose(p, wait_for_app, "decoding.strategy", translate("decoding.strategy_name.sample", "en"), "decoding_strategy",
           "sample")
    expect(charts(p, "decoding.step_figure")).to_have_count(1)
    expect(charts(p, "decoding.step_figure").get_by_text(translate("decoding.steps.sampled_probs", "en"))).to_have_count(1)
    screenshot(p, "decoding_sampling_step_en")

    choose(p, wait_for_app, "decoding.section", translate("decoding.section.compare", "en"), "decoding_view", "compare")
    beam = widget(p, "decoding.beam").get_by_role("slider")
    beam.focus()
    beam.press("Home")
    p.wait_for_url(re.compile(r"decoding_beam=1(&|$)"))
    wait_for_app(p)
    texts = p.locator(f"{MAIN} [data-testid='stCode']").all_inner_texts()
    assert texts[0] == texts[1], "a beam of one is greedy decoding"
    temperature = widget(p, "decoding.temperature").get_by_role("slider")
    temperature.focus()
    temperature.press("End")
    p.wait_for_url(re.compile(r"decoding_temp=2\.0(&|$)"))
    wait_for_app(p)
    top_k = widget(p, "decoding.top_k").get_by_role("slider")
    top_k.focus()
    top_k.press("Home")
    p.wait_for_url(re.compile(r"decoding_topk=1(&|$)"))
    wait_for_app(p)
    seed = widget(p, "decoding.seed").locator("input")
    seed.fill("42")
    seed.press("Enter")
    p.wait_for_url(re.compile(r"decoding_seed=42(&|$)"))
    wait_for_app(p)
    screenshot(p, "decoding_compare_en")

    choose(p, wait_for_app, "decoding.section", translate("decoding.section.forcing", "en"), "decoding_view", "forcing")
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    expect(charts(p, "decoding.forcing_chart")).to_have_count(1)
    screenshot(p, "decoding_forcing_en")
    assert p.locator(EXCEPTION).count() == 0


def test_decoding_in_chinese_with_bad_input(page, wait_for_app, screenshot):
    p = page("/decoding?model=copy&lang=zh&decoding_view=steps&decoding_step=3", locale="zh-CN")
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("decoding.title", "zh"))
    assert query(p)["decoding_step"] == "3"
    expect(p.get_by_text(re.compile(r"^第 3 步，共 \d+ 步"))).to_be_visible()
    screenshot(p, "decoding_steps_zh")
    type_into(p, wait_for_app, "decoding.text", "x" * 120)
    expect(p.get_by_text(translate("common.input.truncated", "zh", limit=48)[:8])).to_be_visible()
    type_into(p, wait_for_app, "decoding.text", "   ")
    expect(p.get_by_text(translate("common.input.empty", "zh"))).to_be_visible()
    screenshot(p, "decoding_empty_zh")
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.skipif("dates" not in models.shipped_models(), reason="the dates model is not shipped yet")
def test_decoding_a_typed_target_when_the_task_has_none(page, wait_for_app, screenshot):
    p = page("/decoding?lang=en&model=dates&decoding_view=forcing")
    type_into(p, wait_for_app, "decoding.text", "31 feb 2026")
    expect(p.get_by_text(translate("decoding.forcing.no_target", "en"))).to_be_visible()
    type_into(p, wait_for_app, "decoding.target", "2026-03-03")
    p.wait_for_url(re.compile(r"decoding_target=2026-03-03"))
    expect(p.locator(f"{MAIN} [data-testid='stDataFrame']")).to_have_count(1)
    screenshot(p, "decoding_typed_target_en")
    assert p.locator(EXCEPTION).count() == 0


def test_decoding_step_link_follows_the_view(page, wait_for_app, screenshot):
    """The step is in the URL (``?decoding_step=``) like every view control: a step change shows there, a
    link opens its step, a bad value gets one notice, and the step survives a trip to another page."""
    p = page("/decoding?model=copy&lang=en&decoding_step=abc")
    expect(step_status(p, 1)).to_be_visible()
    expect(p.locator("[data-testid='stToast']")).to_have_count(1)
    expect(p.locator("[data-testid='stToast']")).to_contain_text("abc")
    assert query(p)["decoding_step"] == "1", "the ignored value leaves the link, which names the step shown"
    screenshot(p, "decoding_bad_step_link_en")

    slider = step_slider(p)
    slider.focus()
    slider.press("End")
    p.wait_for_url(re.compile(r"decoding_step=(?!1(&|$))\d+"))
    wait_for_app(p)
    last = int(query(p)["decoding_step"])
    expect(step_status(p, last, last)).to_be_visible()
    # A shorter sentence has fewer steps than the one shown: it shows its own last step, the nearest,
    # and the link says so.
    type_into(p, wait_for_app, "decoding.text", "ab")
    p.wait_for_url(re.compile(rf"decoding_step=(?!{last}(&|$))\d+"))
    shorter = int(query(p)["decoding_step"])
    assert shorter < last
    expect(step_status(p, shorter, shorter)).to_be_visible()
    expect(p.locator(ENDED)).to_have_count(1)

    linked = page("/decoding?model=copy&lang=en&decoding_step=3")
    expect(step_status(linked, 3)).to_be_visible()
    expect(step_slider(linked)).to_have_value("3")
    expect(linked.locator("[data-testid='stToast']")).to_have_count(0)
    assert query(linked)["decoding_step"] == "3"

    fresh = page("/decoding?model=copy&lang=en")
    for expected in (2, 3):
        click_step(fresh, wait_for_app, "next", expected)
    # Away to another page and back by the sidebar: the step is where it was, in the view and the link.
    fresh.locator('[data-testid="stSidebarNav"] a').filter(has_text=translate("tokens.title", "en")).click()
    fresh.wait_for_url(re.compile(r"/tokens(\?|$)"))
    wait_for_app(fresh)
    assert "decoding_step" not in query(fresh)
    fresh.locator('[data-testid="stSidebarNav"] a').filter(has_text=translate("decoding.title", "en")).click()
    fresh.wait_for_url(re.compile(r"/decoding(\?|$)"))
    wait_for_app(fresh)
    expect(step_status(fresh, 3)).to_be_visible()
    fresh.wait_for_url(re.compile(r"decoding_step=3(&|$)"))
    screenshot(fresh, "decoding_step_after_page_switch_en")
    assert p.locator(EXCEPTION).count() == 0 and fresh.locator(EXCEPTION).count() == 0


def test_decoding_on_a_phone(page, wait_for_app, screenshot):
    """At 390 px the step's controls and figure fit the width (no sideways scrolling)."""
    p = page("/decoding?model=copy&lang=en&decoding_step=2")
    p.set_viewport_size({"width": 390, "height": 900})
    wait_for_app(p)
    expect(step_status(p, 2)).to_be_visible()
    expect(charts(p, "decoding.step_figure")).to_have_count(1)
    width = p.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollWidth")
    assert width <= 390, width
    screenshot(p, "decoding_step_390px_en")
    assert p.locator(EXCEPTION).count() == 0


def boxes(locator) -> list[dict]:
    """The on-screen boxes of every element ``locator`` finds."""
    return [box for box in (locator.nth(i).bounding_box() for i in range(locator.count())) if box]


def overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_step_titles_do_not_overlap_on_a_phone(page, wait_for_app, screenshot, lang):
    """Issue #24: at 390 px the triangle's title ran into the next-token bars' title."""
    p = page(f"/decoding?model=copy&lang={lang}&decoding_step=2", locale="zh-CN" if lang == "zh" else "en-US")
    p.set_viewport_size({"width": 390, "height": 900})
    wait_for_app(p)
    chart = charts(p, "decoding.step_figure")
    expect(chart).to_have_count(1)
    chart.scroll_into_view_if_needed()
    titles = boxes(chart.locator("g.annotation text"))
    # the triangle's, the bars' and the cross-attention's; in 中文 also the vertical axes' titles, written across
    assert len(titles) == (3 if lang == "en" else 4), titles
    assert not any(overlap(a, b) for i, a in enumerate(titles) for b in titles[i + 1:]), titles
    screenshot(p, f"decoding_step_titles_390px_{lang}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_sampled_unlikely_token_is_listed_and_marked(page, wait_for_app, screenshot, lang):
    """At temperature 2 reverse's sample draws '6' at step 2 (model probability ~0.003, not among the 8
    most likely): it is listed, its label red and bold, a red triangle beside it, its value written."""
    p = page(f"/decoding?lang={lang}&model=reverse&decoding_strategy=sample&decoding_temp=2.0&decoding_seed=3&decoding_step=2",
             locale="zh-CN" if lang == "zh" else "en-US")
    chart = charts(p, "decoding.step_figure")
    expect(chart).to_have_count(1)
    expect(chart.locator(".yaxislayer-above text", has_text="6")).to_have_count(1)
    label = chart.locator(".yaxislayer-above text", has_text="6").inner_html()
    assert "font-weight:bold" in label.replace(" ", "") and "#d62728" in label.lower(), label
    triangles = chart.locator(".scatterlayer path.point")
    assert any("#d62728" in (triangles.nth(i).get_attribute("style") or "") or
               "214, 39, 40" in (triangles.nth(i).get_attribute("style") or "") for i in range(triangles.count()))
    assert chart.locator(".barlayer text", has_text=re.compile(r"^0\.00\d")).count() >= 1, "tiny values are written"
    assert chart.locator(".barlayer text", has_text=re.compile(r"e-\d")).count() == 0, "in plain decimals"
    screenshot(p, f"decoding_sampled_token_{lang}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_teacher_forcing_table_fits_a_1280_px_page(page, wait_for_app, screenshot, lang):
    """Issue #35 item 20: at 1280 px the teacher-forcing table's last column was cut (the grid scrolled sideways)."""
    p = page(f"/decoding?lang={lang}&decoding_view=forcing", locale="zh-CN" if lang == "zh" else "en-US")
    p.set_viewport_size({"width": 1280, "height": 1000})
    wait_for_app(p)
    grid = p.locator(f"{MAIN} [data-testid='stDataFrame']").first
    expect(grid).to_be_visible()
    grid.scroll_into_view_if_needed()
    p.wait_for_timeout(500)  # the grid measures its columns after it is drawn
    scroll, client = grid.locator(".dvn-scroller").first.evaluate("s => [s.scrollWidth, s.clientWidth]")
    assert scroll <= client, f"the table is {scroll - client} px wider than its box"
    screenshot(p, f"decoding_forcing_table_1280px_{lang}")


def test_all_at_once_against_one_at_a_time(page, wait_for_app, screenshot):
    """The shipped copy model on "hello world": one pass over <bos> + 11 placeholders writes repeats and no
    <eos> (12 passes step by step, 1 all at once); copies of <bos> make every position write "h"; at 390 px
    the positions run down the screen and nothing scrolls sideways."""
    p = page("/decoding?model=copy&lang=en&decoding_view=parallel&decoding_text=hello+world")
    wait_for_app(p)
    expect(charts(p, "decoding.parallel_chart")).to_have_count(1)
    metrics = p.locator(f"{MAIN} [data-testid='stMetricValue']")
    expect(metrics).to_have_text(["12", "1"])
    answers = p.locator(f"{MAIN} [data-testid='stCode']")
    expect(answers.nth(0)).to_contain_text("hello world")
    expect(answers.nth(1)).to_contain_text("hlo  wworrll")
    expect(p.get_by_text(translate("decoding.parallel.no_eos", "en").split("`")[0])).to_be_visible()
    screenshot(p, "decoding_all_at_once_en")
    widget(p, "decoding.placeholder").get_by_role("radio").nth(1).click()  # copies of <bos>
    p.wait_for_url(re.compile(r"decoding_placeholder=bos(&|$)"))
    wait_for_app(p)
    expect(answers.nth(1)).to_contain_text("h" * 12)
    phone = page("/decoding?model=copy&lang=en&decoding_view=parallel&decoding_text=hello+world", phone=True)
    chart = charts(phone, "decoding.parallel_chart")
    expect(chart).to_have_count(1)
    width = phone.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollWidth")
    assert width <= 390, width
    chart.scroll_into_view_if_needed()
    assert chart.bounding_box()["height"] > chart.bounding_box()["width"], "the positions run down a phone"
    screenshot(phone, "decoding_all_at_once_390px_en")
    assert p.locator(EXCEPTION).count() == 0 and phone.locator(EXCEPTION).count() == 0


@pytest.mark.skipif("sort" not in models.shipped_models(), reason="the sort model is not shipped")
def test_beam_search_as_a_tree_and_its_length_penalty(page, wait_for_app, screenshot):
    """The shipped sort model on "zyx" with a beam of 3: the tree is drawn, and the answer is xyz; α = 2 (the
    slider's end) ranks by score / length², and the longer xyzyz wins. On a 390-px phone, in 中文, the steps run
    down the screen and nothing scrolls sideways."""
    url = "/decoding?model=sort&decoding_view=compare&decoding_text=zyx&decoding_beam=3"
    p = page(url + "&lang=en")
    chart = charts(p, "decoding.beam_tree")
    expect(chart).to_have_count(1)
    expect(chart.get_by_text(translate("decoding.tree.chosen", "en"))).to_be_visible()
    answers = p.locator(f"{MAIN} [data-testid='stCode']")
    expect(answers.nth(1)).to_have_text(re.compile(r"^\s*xyz\s*$"))
    chart.scroll_into_view_if_needed()
    screenshot(p, "decoding_beam_tree_en")
    alpha = widget(p, "decoding.length_penalty").get_by_role("slider")
    alpha.focus()
    alpha.press("End")
    p.wait_for_url(re.compile(r"decoding_length_penalty=2\.0(&|$)"))
    wait_for_app(p)
    expect(answers.nth(1)).to_have_text(re.compile(r"^\s*xyzyz\s*$"))
    expect(p.get_by_text(translate("decoding.tree.alpha_changed", "en", alpha="2").split(":")[0])).to_be_visible()
    screenshot(p, "decoding_beam_tree_alpha_2_en")

    phone = page(url + "&lang=zh&decoding_length_penalty=1.0", phone=True, locale="zh-CN")
    tree = charts(phone, "decoding.beam_tree")
    expect(tree).to_have_count(1)
    expect(tree.get_by_text(translate("decoding.tree.chosen", "zh"))).to_be_visible()
    width = phone.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollWidth")
    assert width <= 390, width
    tree.scroll_into_view_if_needed()
    box = settled_box(tree)
    assert box["height"] > box["width"], "the steps run down a phone"
    screenshot(phone, "decoding_beam_tree_390px_zh")
    assert p.locator(EXCEPTION).count() == 0 and phone.locator(EXCEPTION).count() == 0


@pytest.mark.skipif("sort" not in models.shipped_models(), reason="the sort model is not shipped")
def test_stepping_through_beam_search_moves_a_band_along_its_tree(page, wait_for_app, screenshot):
    """Step by step with beam search, the tree is drawn under the step's beams, a band over the step on screen;
    Next moves the band one step (only the step's fragment reruns)."""
    p = page("/decoding?model=sort&decoding_strategy=beam&decoding_text=zyx&decoding_beam=3&decoding_step=2&lang=zh",
             locale="zh-CN")
    tree = charts(p, "decoding.step_tree")
    expect(tree).to_have_count(1)

    def band() -> list[float]:
        return tree.evaluate("el => [el.layout.shapes[0].x0, el.layout.shapes[0].x1]")

    wait_for(lambda: band() == [2 - 0.45, 2 + 0.45], timeout=30)
    p.get_by_role("button", name=translate("decoding.steps.next", "zh")).click()
    p.wait_for_url(re.compile(r"decoding_step=3(&|$)"))
    wait_for_app(p)
    expect(p.get_by_text(translate("decoding.steps.tree_caption", "zh", step=3))).to_be_visible()
    wait_for(lambda: band() == [3 - 0.45, 3 + 0.45], timeout=30)  # plotly redraws the chart after the run
    tree.scroll_into_view_if_needed()
    screenshot(p, "decoding_step_tree_zh")
    assert p.locator(EXCEPTION).count() == 0
