"""The masks page in a real browser: every switch and section, a screenshot per state, in both languages.

The server uses the shipped checkpoints; where none is installed, the model-dependent parts show
a notice instead and the checks that need a model are skipped inside the test.
"""
from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from explain.code import SNIPPETS, source_of
from ui.i18n import LANGS, translate


EXCEPTION = '[data-testid="stException"]'
MAIN = '[data-testid="stMain"]'
PLOT = ".js-plotly-plot"
PHONE = {"width": 390, "height": 844}


def assert_page(p, lang: str) -> None:
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("masks.title", lang))
    assert p.locator(EXCEPTION).count() == 0


def wait_for_url(p, wait_for_app, pattern: str) -> None:
    """Wait until the rerun caused by an action has written ``pattern`` into the URL and finished."""
    p.wait_for_url(re.compile(pattern))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


def wait_for_charts(p, count: int) -> None:
    """Plotly draws after the script run; wait until ``count`` charts are on the page."""
    p.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= {count}")


def has_model(p, lang: str) -> bool:
    return p.get_by_text(translate("common.model.none_available", lang)).count() == 0


def flip_mask(p, label: str) -> None:
    """Click the mask's toggle labelled ``label`` (on → off → on)."""
    p.locator('[data-testid="stCheckbox"]', has=p.get_by_role("switch", name=label, exact=True)).click()


def show(p, wait_for_app, section: str, lang: str) -> None:
    """Pick a section of the masks page (its segmented control)."""
    p.get_by_role("radio", name=translate(f"masks.{section}.heading", lang), exact=True).click()
    wait_for_url(p, wait_for_app, f"masks_view={section}")


@pytest.mark.parametrize("lang", LANGS)
def test_masks_page(page, wait_for_app, screenshot, lang):
    p = page(f"/masks?model=copy&lang={lang}&sent=2")
    assert_page(p, lang)
    model = has_model(p, lang)
    wait_for_charts(p, 3)  # the section shown: the three masks
    screenshot(p, f"masks_default_{lang}")
    padding = translate("masks.padding_switch", lang)
    ahead = translate("masks.look_ahead_switch", lang)
    flip_mask(p, padding)
    wait_for_url(p, wait_for_app, "masks_pad=false")
    expect(p.get_by_text(translate("masks.matrices.padding", lang) + translate("masks.matrices.off", lang))
           ).to_be_visible()
    screenshot(p, f"masks_padding_off_{lang}")
    flip_mask(p, ahead)
    wait_for_url(p, wait_for_app, "masks_ahead=false")
    screenshot(p, f"masks_both_off_{lang}")
    flip_mask(p, padding)
    wait_for_url(p, wait_for_app, "masks_pad=true")
    screenshot(p, f"masks_look_ahead_off_{lang}")
    flip_mask(p, ahead)
    wait_for_url(p, wait_for_app, "masks_ahead=true")
    # Back to both on: the titles say so again, none is left saying "off".
    for title in ("masks.matrices.padding", "masks.matrices.look_ahead"):
        off_title = translate(title, lang) + translate("masks.matrices.off", lang)
        expect(p.get_by_text(off_title)).to_have_count(0)
        expect(p.get_by_text(translate(title, lang), exact=True).first).to_be_visible()
    if model:
        show(p, wait_for_app, "effect", lang)
        wait_for_charts(p, 4)
        flip_mask(p, padding)
        wait_for_url(p, wait_for_app, "masks_pad=false")
        expect(p.get_by_text(translate("masks.effect.encoder_title", lang,
                                       state=translate("masks.effect.off", lang))).first).to_be_visible()
        screenshot(p, f"masks_effect_padding_off_{lang}")
        flip_mask(p, padding)
        wait_for_url(p, wait_for_app, "masks_pad=true")
        show(p, wait_for_app, "row", lang)
        p.locator('[data-testid="stRadio"]').get_by_text(translate("masks.row.kind_encoder", lang), exact=True).click()
        wait_for_url(p, wait_for_app, "masks_kind=encoder")
        p.get_by_role("slider").last.focus()
        p.keyboard.press("End")
        wait_for_url(p, wait_for_app, "masks_query=5")  # "hi!" is drawn with 3 of its 22 <pad>: positions 0..5
        wait_for_charts(p, 3)
        screenshot(p, f"masks_row_{lang}")
    show(p, wait_for_app, "printout", lang)
    expect(p.get_by_text("decoder_mask(torch.tensor([[1, 2, 3, 0, 0]]))")).to_be_visible()
    screenshot(p, f"masks_printout_{lang}")


# Every problem a narrow chart can have, as a list of sentences (empty: none). A chart's title must stay
# inside its chart and touch nothing (no tick label, axis title, plot area, or another chart's title);
# tick labels must not overlap (plotly slants them 30° only where that leaves them apart, so the check
# reads the upright and the vertical ones, whose boxes are exact); a formula must not be cut off.
LAYOUT_PROBLEMS = r"""() => {
  const box = e => e.getBoundingClientRect();
  const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const problems = [];
  const titles = [];
  document.querySelectorAll('.js-plotly-plot').forEach((chart, n) => {
    const frame = box(chart);
    const title = chart.querySelector('.gtitle');
    const others = [...chart.querySelectorAll('.xtitle, .ytitle, .xtick text, .ytick text, .nsewdrag')];
    if (title) {
      const t = box(title);
      titles.push([n, t]);
      if (t.left < frame.left - 1 || t.right > frame.right + 1) problems.push(`chart ${n}: its title runs out of it`);
      others.forEach(o => { if (hit(t, box(o))) problems.push(`chart ${n}: its title touches ${o.getAttribute('class') || o.textContent}`); });
    }
    for (const axis of ['xtick', 'ytick']) {
      const labels = [...chart.querySelectorAll(`.${axis} text`)]
        .filter(e => !/rotate\((?!-?90)/.test(e.getAttribute('transform') || '')).map(box);
      for (let i = 1; i < labels.length; i++)
        if (hit(labels[i - 1], labels[i])) { problems.push(`chart ${n}: ${axis} labels overlap`); break; }
    }
  });
  for (let i = 0; i < titles.length; i++) for (let j = i + 1; j < titles.length; j++)
    if (hit(titles[i][1], titles[j][1])) problems.push(`charts ${titles[i][0]} and ${titles[j][0]}: titles overlap`);
  document.querySelectorAll('.katex-display').forEach(f => {
    if (f.scrollWidth > f.clientWidth + 4) problems.push(`a formula is cut off: ${f.scrollWidth} > ${f.clientWidth} px`);
  });
  if (document.documentElement.scrollWidth > window.innerWidth) problems.push('the page scrolls sideways');
  return problems;
}"""


def settle_charts(p, count: int, width: int) -> None:
    """Wait until ``count`` charts are drawn and none is wider than ``width`` (plotly resizes after a viewport change)."""
    p.wait_for_function(f"""() => {{ const c = [...document.querySelectorAll('{PLOT}')];
        return c.length >= {count} && c.every(e => e.getBoundingClientRect().width <= {width}
                                                  && e.querySelector('.gtitle, .xtick')); }}""")
    p.wait_for_timeout(300)  # plotly's own relayout after the resize


@pytest.mark.parametrize("lang", LANGS)
def test_masks_page_fits_a_phone(page, wait_for_app, screenshot, lang):
    """At 390 × 844 the charts stack, and in every section no title touches anything, no tick labels
    overlap, no formula is cut off and the page does not scroll sideways."""
    p = page(f"/masks?model=copy&lang={lang}&sent=0&masks_pad=false")  # "hello world": 11 tokens and 3 drawn <pad>
    p.set_viewport_size(PHONE)
    sections = {"matrices": 3, "printout": 0}
    if has_model(p, lang):
        sections.update(effect=4, row=3)
    for section, charts in sections.items():
        if section != "matrices":
            show(p, wait_for_app, section, lang)
        settle_charts(p, charts, PHONE["width"])
        assert p.evaluate(LAYOUT_PROBLEMS) == [], (section, lang)
        for n in range(charts):
            box = p.locator(PLOT).nth(n).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1, box
        screenshot(p, f"masks_phone_{section}_{lang}")


# The glyphs written in a mask's cells: their size, and whether each fits the width of a cell.
CELL_GLYPHS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(chart => {
  const plot = chart.querySelector('.nsewdrag').getBoundingClientRect();
  const columns = chart._fullData[0].z[0].length;
  const glyphs = [...chart.querySelectorAll('.heatmaplayer text')];
  return {count: glyphs.length, cell: plot.width / columns,
          widest: Math.max(0, ...glyphs.map(g => g.getBoundingClientRect().width)),
          smallest: Math.min(99, ...glyphs.map(g => parseFloat(getComputedStyle(g).fontSize)))};
})"""


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("viewport", [{"width": 1440, "height": 1000}, PHONE], ids=["wide", "phone"])
def test_true_and_false_are_readable_in_the_cells(page, screenshot, lang, viewport):
    """A short sentence's masks say True/False (or T/F) in every cell, at 12 px, each within its cell."""
    for sent, name in (("2", "short"), ("0", "longer")):  # "hi!": 6 and 7 a side; "hello world": 14 and 15
        p = page(f"/masks?model=copy&lang={lang}&sent={sent}")
        p.set_viewport_size(viewport)
        settle_charts(p, 3, viewport["width"])
        for chart in p.evaluate(CELL_GLYPHS):
            assert chart["count"] == round(chart["count"] ** 0.5) ** 2 > 0, chart  # a glyph in every cell
            assert chart["smallest"] >= 12 and chart["widest"] <= chart["cell"], chart
        screenshot(p, f"masks_cells_{name}_{viewport['width']}_{lang}")


def test_switching_the_language_twice_keeps_the_chosen_sentence_and_layer(page, wait_for_app):
    """English → 中文 → English → 中文 on Masks: no exception, and the sentence and layer picked stay
    picked. (A select box hands back the label it showed in the other language; that must not reset
    the choice, nor raise as it once did in ``clamp_state``.)"""
    p = page("/masks?model=copy&lang=en&sent=2&masks_view=effect&masks_layer=1")
    assert_page(p, "en")
    for lang in ("zh", "en", "zh", "en"):
        p.get_by_test_id("stSidebar").get_by_text(translate(f"common.language_name.{lang}", lang), exact=True).click()
        wait_for_url(p, wait_for_app, f"lang={lang}")
        assert_page(p, lang)
        assert "sent=2" in p.url and "masks_layer=1" in p.url, (lang, p.url)  # the link's mask_layer, renamed
        expect(p.get_by_role("combobox", name=translate("tokens.sentence.pick", lang), exact=True)
               ).to_have_value(re.compile(r"^3\W+hi!$"))


# The title of the n-th chart as text: its markup (bold, line breaks) and spaces taken out (a line may break
# after CJK punctuation, where there was no space).
CHART_TITLE = ("n => { const c = document.querySelectorAll('.js-plotly-plot')[n];"
               " return c && c.layout.title.text.replace(/<[^>]*>|\\s/g, ''); }")


def title_is(p, n: int, title: str) -> None:
    """Wait until the n-th chart's title reads ``title`` (compared without spaces)."""
    p.wait_for_function(f"({CHART_TITLE})({n}) === {json.dumps(''.join(title.split()))}")


@pytest.mark.parametrize("lang", LANGS)
def test_sparse_patterns_and_the_families_render_change_and_fit_a_phone(page, wait_for_app, screenshot, lang):
    """#32: the sparse section draws the window for "hello world" (11 tokens: 31 of 121 scores); picking
    Blocks redraws it (4 + 4 + 3: 41 of 121) and writes the URL; the model's answers are listed; at 390 px
    this section and the families section fit the screen."""
    p = page(f"/masks?model=copy&lang={lang}&sent=0&masks_view=sparse")
    assert_page(p, lang)
    wait_for_charts(p, 2)
    title_is(p, 0, translate("masks.sparse.encoder_title", lang, cells=31, full=121))
    if has_model(p, lang):  # the answers' table (a canvas: its cells are no text to find) under its switch
        expect(p.get_by_text(translate("masks.sparse.decoder_switch", lang), exact=True)).to_be_visible()
        expect(p.get_by_test_id("stDataFrame")).to_have_count(1)
    screenshot(p, f"masks_sparse_window_{lang}")
    p.get_by_role("radio", name=translate("masks.sparse.pattern_block", lang), exact=True).click()
    wait_for_url(p, wait_for_app, "masks_pattern=block")
    title_is(p, 0, translate("masks.sparse.encoder_title", lang, cells=41, full=121))
    expect(p.get_by_text(translate("masks.sparse.connect_never", lang))).to_be_visible()
    screenshot(p, f"masks_sparse_blocks_{lang}")
    p.set_viewport_size(PHONE)
    settle_charts(p, 2, PHONE["width"])
    assert p.evaluate(LAYOUT_PROBLEMS) == [], lang
    screenshot(p, f"masks_phone_sparse_{lang}")
    show(p, wait_for_app, "families", lang)
    settle_charts(p, 5, PHONE["width"])
    assert p.evaluate(LAYOUT_PROBLEMS) == [], lang
    screenshot(p, f"masks_phone_families_{lang}")
    assert p.locator(EXCEPTION).count() == 0


def test_the_sparse_patterns_code_follows_the_pattern_picked(page, wait_for_app, screenshot):
    """The cheaper-attention view's code panel shows the function that builds the pattern on screen and the two
    that put it into the model; picking another pattern swaps the first, the panel staying open. A phone, 中文."""
    p = page("/masks?model=copy&masks_view=sparse&masks_pattern=window&lang=zh", phone=True, locale="zh-CN")

    title = translate("code.panel.title", "zh", names=translate("masks.sparse.code_names", "zh"))
    panel = p.locator(f'{MAIN} [data-testid="stExpander"]').filter(has_text=title)
    expect(panel).to_have_count(1)
    panel.locator("summary").click()
    code = panel.locator(".tp-code")
    expect(code).to_have_count(3)
    expect(code.first).to_contain_text("def window_mask(")
    for key in ("restricted_attention", "restricted_look_ahead"):
        expect(panel.get_by_text(source_of(SNIPPETS[key].path).qualname).first).to_be_visible()
    wait_for_app(p)
    p.get_by_role("radio", name=translate("masks.sparse.pattern_block", "zh"), exact=True).click()
    wait_for_url(p, wait_for_app, "masks_pattern=block")
    expect(code.first).to_contain_text("def block_mask(")  # the same panel, still open, now with block_mask
    expect(code).to_have_count(3)
    width = p.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollWidth")
    assert width <= 390, width
    panel.scroll_into_view_if_needed()
    screenshot(p, "masks_sparse_code_390px_zh")
    assert p.locator(EXCEPTION).count() == 0
