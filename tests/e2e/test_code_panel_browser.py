"""The code panel in a real browser (issue #30): on the Attention page's one-head view, open the panel,
select ``scores``, and see the line that computed it marked and the scores picture framed; in English
and 中文, and in a 390-px window where the code scrolls inside its own box, never the page.
Screenshots in test-artifacts/."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from explain.code import SNIPPETS, source_of
from figures.style import HIGHLIGHT_COLOR
from tests.e2e.test_phone_browser import PHONE, overflow_once_settled
from tests.e2e.widgets import EXCEPTION, MAIN, charts, widget
from ui import models
from ui.code_panel import MARK_COLOR
from ui.i18n import translate

pytestmark = [
    pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints"),
]
SNIPPET_KEYS = ("multi_head", "split_heads", "scaled_dot_product_attention", "masked_softmax")
FRAME_COLORS_JS = "el => (el.layout.shapes || []).map(s => s.line && s.line.color)"


@pytest.mark.parametrize(("lang", "phone"), [("en", False), ("zh", False), ("en", True), ("zh", True)])
def test_select_scores_marks_its_line_and_frames_its_picture(page, wait_for_app, screenshot, lang, phone):
    p = page(f"/attention?model=copy&lang={lang}&attention_view=inside")
    if phone:
        p.set_viewport_size(PHONE)
    title = translate("code.panel.title", lang,
                      names=", ".join(source_of(SNIPPETS[k].path).qualname for k in SNIPPET_KEYS))
    panel = p.locator(f'{MAIN} [data-testid="stExpander"]').filter(has_text=title)
    expect(panel).to_have_count(1)
    assert FRAME_COLORS_JS and HIGHLIGHT_COLOR not in charts(p, "attention.scores").first.evaluate(FRAME_COLORS_JS)

    panel.locator("summary").click()  # drawn only while open: the click runs the view
    boxes = panel.locator(".tp-code")
    expect(boxes).to_have_count(len(SNIPPET_KEYS))
    wait_for_app(p)
    assert f"lang={lang}" in p.url and "attention_view=inside" in p.url  # the run kept the visitor's view
    expect(p.locator(f"{MAIN} h1").first).to_have_text(translate("attention.title", lang))
    expect(panel.locator(f'span[style*="{MARK_COLOR}"]')).to_have_count(0)  # nothing selected yet

    widget(p, "attention.code_step").get_by_text(re.compile(r"^scores")).click()
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0
    sdpa = source_of(SNIPPETS["scaled_dot_product_attention"].path)
    line = sdpa.lines_of("scores = q @ k.transpose")[0]
    expect(boxes.nth(2)).to_have_attribute("data-marked", str(line))
    marked = panel.locator(f'span[style*="{MARK_COLOR}"]')
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("scores = q @ k.transpose(-2, -1)")
    expect(marked).to_contain_text(str(line))  # the file's own line number
    assert panel.is_visible()  # the rerun kept the panel open

    frames = charts(p, "attention.scores").first.evaluate(FRAME_COLORS_JS)
    assert HIGHLIGHT_COLOR in frames
    assert HIGHLIGHT_COLOR not in charts(p, "attention.weights").first.evaluate(FRAME_COLORS_JS)

    marked.scroll_into_view_if_needed()
    if phone:
        width = overflow_once_settled(p)
        assert width["page"] <= PHONE["width"] + 1 and width["sticking"] == [], width
        box = boxes.nth(0)
        assert box.evaluate("el => el.scrollWidth > el.clientWidth")  # long lines scroll inside the box
    screenshot(p, f"code_panel_scores_{lang}_{'phone' if phone else 'wide'}")
