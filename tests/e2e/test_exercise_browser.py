"""An exercise in a real browser (issue #34): on the Attention page, write an attention whose mask polarity
is reversed, Check it, read the hint that names the mistake, Use mine, and see the model's own map beside the
one it makes; in English and 中文, and in a 390-px window (the editor usable on a phone).
The server runs learner code only for a loopback browser without a proxy header (TP_LEARNER_CODE=local),
which is what this test's browser is. Screenshots in test-artifacts/."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from explain.exercises import EXERCISES
from sandbox import runner
from tests.e2e.test_phone_browser import PHONE, overflow_once_settled
from tests.e2e.widgets import EXCEPTION, MAIN, pick, widget
from ui import models
from ui.i18n import translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
    pytest.mark.skipif(not runner.available(), reason="bubblewrap cannot start a sandbox here"),
]
EX = EXERCISES["attention"]


@pytest.mark.parametrize(("lang", "phone"), [("en", False), ("zh", False), ("zh", True)])
def test_a_reversed_mask_is_named_and_its_symptom_shown_in_the_model(page, wait_for_app, screenshot, lang, phone):
    p = page(f"/attention?model=copy&lang={lang}")
    if phone:
        p.set_viewport_size(PHONE)
    title = translate("exercises.panel.heading", lang, title=translate(f"exercises.{EX.key}.title", lang))
    box = p.locator(f'{MAIN} [data-testid="stExpander"]').filter(has_text=title)
    expect(box).to_have_count(1)
    box.locator("summary").click()
    editor = widget(p, f"attention.exercise_{EX.key}_code").locator("textarea")
    editor.fill(EX.bug("mask_polarity").source)
    editor.press("Control+Enter")  # a text area's value reaches the server on Ctrl+Enter or blur
    wait_for_app(p)
    widget(p, f"attention.exercise_{EX.key}_check").get_by_role("button").click()
    wait_for_app(p)
    hint = translate(f"exercises.{EX.key}.bug.mask_polarity", lang).split("`")[0].strip()  # before its code span
    expect(box.get_by_text(hint, exact=False).first).to_be_visible(timeout=60_000)
    assert box.locator(".tp-cases tr[data-passed='false']").count() >= 1
    screenshot(p, f"exercise_attention_hint_{lang}{'_phone' if phone else ''}")

    widget(p, f"attention.exercise_{EX.key}_use_mine").get_by_role("button").click()
    wait_for_app(p)
    maps = box.locator(".js-plotly-plot")
    expect(maps).to_have_count(3, timeout=60_000)  # the difference heatmap, the model's map, the one with yours
    expect(box.get_by_text(translate("exercises.panel.use_mine_yours", lang, answer="@").split("@")[0].rstrip("*"),
                           exact=False)).to_be_visible()
    assert p.locator(EXCEPTION).count() == 0
    if phone:
        width = overflow_once_settled(p)
        assert width["page"] <= PHONE["width"] + 1 and width["sticking"] == [], width
    maps.last.scroll_into_view_if_needed()
    screenshot(p, f"exercise_attention_use_mine_{lang}{'_phone' if phone else ''}")


@pytest.mark.parametrize(("url", "page_key", "key", "bug", "charts"), [
    ("/output-and-loss?model=copy&lang=zh", "output_and_loss", "label_smoothing", "softmax_axis", 1),  # a scalar: no diff map
    ("/masks?model=copy&lang=zh", "masks", "look_ahead_mask", "polarity", 3),
])
def test_use_mine_on_a_phone_in_chinese(page, wait_for_app, screenshot, url, page_key, key, bug, charts):
    """A planted mistake loaded from the list, checked and used in the model on a 390-px screen in 中文: the
    loss position by position, or the decoder's map beside the model's; nothing wider than the screen."""
    ex = EXERCISES[key]
    p = page(url, locale="zh-CN")
    p.set_viewport_size(PHONE)
    title = translate("exercises.panel.heading", "zh", title=translate(f"exercises.{ex.key}.title", "zh"))
    box = p.locator(f'{MAIN} [data-testid="stExpander"]').filter(has_text=title)
    wait_for_app(p)
    box.locator("summary").click()
    pick(p, widget(p, f"{page_key}.exercise_{ex.key}_bug").locator("input"),
         translate(f"exercises.{ex.key}.bug_name.{bug}", "zh"))
    # the mistake is in the editor before Check (a click during the run that loads it would send the old text)
    expect(widget(p, f"{page_key}.exercise_{ex.key}_code").locator("textarea")).to_have_value(ex.bug(bug).source)
    wait_for_app(p)
    widget(p, f"{page_key}.exercise_{ex.key}_check").get_by_role("button").click()
    wait_for_app(p)
    expect(box.locator(".tp-cases")).to_have_count(1, timeout=60_000)
    hint = translate(f"exercises.{ex.key}.bug.{bug}", "zh").split("`")[0].strip()  # the hint that names it
    expect(box.get_by_text(hint, exact=False).first).to_be_visible()
    widget(p, f"{page_key}.exercise_{ex.key}_use_mine").get_by_role("button").click()
    wait_for_app(p)
    maps = box.locator(".js-plotly-plot")
    expect(maps).to_have_count(charts, timeout=60_000)  # the check's difference heatmap (a matrix), and use mine's
    assert p.locator(EXCEPTION).count() == 0
    width = overflow_once_settled(p)
    assert width["page"] <= PHONE["width"] + 1 and width["sticking"] == [], width
    maps.last.scroll_into_view_if_needed()
    screenshot(p, f"exercise_{ex.key}_use_mine_zh_phone")
