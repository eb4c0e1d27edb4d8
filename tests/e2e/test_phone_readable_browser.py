"""On a 390-px phone, what fits is not enough: it must be readable (#35 item 19).

* a formula is whole in its box, or its box scrolls with its scrollbar drawn (Streamlit draws a
  formula's scrollbar only under a hovering mouse, and a phone has none: the formula looked cut);
* the Attention overview's small maps stay maps (not strips of 5-px cells), its titles do not run
  into each other, and the zoomed head writes no numbers too small to read;
* the home page's architecture drawing writes its labels at 9 px or more (its box scrolls sideways).

Screenshots in test-artifacts/.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from tests.e2e.test_phone_browser import PHONE, view_name
from ui.i18n import LANGS

MIN_FONT_PX = 9

# Every formula's box, measured: does its content fit, and if not, can the visitor see that it scrolls?
FORMULAS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .katex-display')].map(box => {
  const style = getComputedStyle(box), rect = box.getBoundingClientRect();
  const thumb = (style.scrollbarColor || '').split(/\\s+(?![^(]*\\))/)[0];
  return {
    formula: box.textContent.slice(0, 40),
    fits: box.scrollWidth <= box.clientWidth + 1,
    scrolls: /(auto|scroll)/.test(style.overflowX),
    scrollbar_drawn: style.scrollbarWidth !== 'none' && !/^(transparent|rgba\\([^)]*,\\s*0\\))$/.test(thumb),
    clipped_below: box.scrollHeight > box.clientHeight + 1 && style.overflowY !== 'visible',
    inside_screen: rect.left >= -1 && rect.right <= window.innerWidth + 1,
  };
})"""
# The formulas these pages write are made to wrap on a phone; others may scroll in their box.
WRAPPING = ("/attention", "/positional-encoding", "/training", "/tokens", "/decoding")
SCROLLING_ALLOWED = ()


@pytest.mark.parametrize("lang", LANGS)
def test_every_formula_is_whole_in_its_box_or_visibly_scrolls_on_a_phone(page, server_url, wait_for_app, screenshot,
                                                                         lang):
    p = page(f"/?lang={lang}")
    p.set_viewport_size(PHONE)
    problems = []
    for path in WRAPPING + SCROLLING_ALLOWED:
        p.goto(f"{server_url}{path}?lang={lang}")
        wait_for_app(p)
        p.locator('[data-testid="stMain"] h1').first.wait_for()
        p.locator('[data-testid="stMain"] .katex-display').first.wait_for()
        try:  # a page lays out again after its run (columns, fonts): measure once it has settled
            p.wait_for_function(f"() => ({FORMULAS_JS})().every(b => b.inside_screen && !b.clipped_below && "
                                f"(b.fits || ({str(path in SCROLLING_ALLOWED).lower()} && b.scrolls && b.scrollbar_drawn)))",
                                timeout=15_000, polling=200)
        except PlaywrightTimeoutError:
            pass  # measured below, and reported by the assertion
        for box in p.evaluate(FORMULAS_JS):
            if not box["inside_screen"] or box["clipped_below"]:
                problems.append((path, "cut", box))
            elif not box["fits"] and (path in WRAPPING or not (box["scrolls"] and box["scrollbar_drawn"])):
                problems.append((path, "wider than its box" if path in WRAPPING else "scrolls unseen", box))
        screenshot(p, f"formulas_{view_name(path)}_390px_{lang}")
    assert problems == []


# The overview's maps (one <image> per heatmap), its titles and tick labels, and the zoom's cell numbers,
# as drawn in the grid the browser shows.
OVERVIEW_JS = """() => {
  const shown = el => el.getClientRects().length > 0;
  const grids = [...document.querySelectorAll('[class*="st-key-attention-"][class*="grid"] .js-plotly-plot')].filter(shown);
  if (grids.length !== 1) return {grids: grids.length};
  const grid = grids[0];
  const maps = [...grid.querySelectorAll('g.hm image')].map(m => m.getBoundingClientRect())
    .map(r => ({width: r.width, height: r.height}));
  const titles = [...grid.querySelectorAll('g.annotation')].map(a => a.getBoundingClientRect());
  let overlaps = 0;
  titles.forEach((a, i) => titles.slice(i + 1).forEach(b => {
    if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) overlaps++;
  }));
  const fonts = [...grid.querySelectorAll('g.annotation text, .ytick text, .xtick text')].filter(shown)
    .map(t => parseFloat(getComputedStyle(t).fontSize));
  const numbers = [...document.querySelectorAll('.st-key-attention-zoom g.heatmap-label text')].filter(shown)
    .map(t => parseFloat(getComputedStyle(t).fontSize));
  return {grids: 1, key: grid.closest('[class*="st-key-attention-"][class*="grid"]').className.match(/st-key-\\S+/)[0],
          maps, overlaps, fonts, numbers, width: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("lang", LANGS)
def test_the_attention_overview_is_readable_on_a_phone_and_unchanged_on_a_wide_screen(page, wait_for_app, screenshot,
                                                                                      lang):
    p = page(f"/attention?lang={lang}")
    expect(p.locator(".st-key-attention-zoom .js-plotly-plot")).to_have_count(1)
    wide = p.evaluate(OVERVIEW_JS)
    assert wide["grids"] == 1 and wide["key"].endswith("attention-grid"), wide
    assert wide["numbers"] and min(wide["numbers"]) >= MIN_FONT_PX, "a wide screen shows the zoom's numbers"
    screenshot(p, f"attention_overview_1440px_{lang}")

    p.set_viewport_size(PHONE)
    p.wait_for_function(f"() => ({OVERVIEW_JS})().grids === 1 && (({OVERVIEW_JS})().key || '').includes('phone')",
                        timeout=15_000, polling=200)
    p.wait_for_timeout(500)  # plotly redraws for the new width from a ResizeObserver
    phone = p.evaluate(OVERVIEW_JS)
    assert len(phone["maps"]) == len(wide["maps"]), "every head has its map on a phone too"
    smallest = min(phone["maps"], key=lambda m: m["width"] * m["height"])
    assert smallest["width"] >= 100 and smallest["height"] >= 100, f"maps, not strips: {smallest}"
    assert 0.5 <= smallest["width"] / smallest["height"] <= 2, smallest
    assert phone["overlaps"] == 0, "the maps' titles run into each other"
    assert min(phone["fonts"]) >= MIN_FONT_PX, phone["fonts"]
    assert all(size >= MIN_FONT_PX for size in phone["numbers"]), f"zoomed numbers too small: {phone['numbers']}"
    assert phone["width"] <= PHONE["width"] + 1
    screenshot(p, f"attention_overview_390px_{lang}")


# Rendered size of the architecture drawing's labels: the font size in drawing units times the drawing's scale.
DIAGRAM_JS = """svg => {
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return {smallest: Math.min(...[...svg.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize) * scale)),
          page: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("lang", LANGS)
def test_the_home_diagram_labels_are_readable_on_a_phone(page, screenshot, lang):
    p = page(f"/?lang={lang}")
    p.set_viewport_size(PHONE)
    diagram = p.locator("svg.tp-arch")
    diagram.wait_for()
    p.wait_for_timeout(300)  # the component lays out again for the new width
    drawn = diagram.evaluate(DIAGRAM_JS)
    assert drawn["smallest"] >= MIN_FONT_PX, f"labels of {drawn['smallest']:.1f} px"
    assert drawn["page"] <= PHONE["width"] + 1, "the drawing scrolls in its own box, not the page"
    screenshot(p, f"home_diagram_390px_{lang}")


def test_a_phones_charts_have_no_toolbar_over_their_titles_and_a_desktops_keep_it(page, wait_for_app, screenshot):
    """A touch screen has no hover, so plotly's toolbar showed all the time; on a 390-px phone its eight
    buttons lay across each chart's title and legend. A phone's charts go without it; a desktop keeps it."""
    phone = page("/positional-encoding?lang=zh", locale="zh-CN", phone=True)
    charts = phone.locator('[data-testid="stPlotlyChart"]')
    expect(charts.first).to_be_visible()
    assert charts.count() >= 3
    assert phone.locator(".modebar-btn").count() == 0
    titles = phone.locator('[data-testid="stPlotlyChart"] .gtitle')
    assert titles.count() >= 1
    for i in range(titles.count()):  # nothing lies over the middle of any chart's title
        titles.nth(i).scroll_into_view_if_needed()
        box = titles.nth(i).bounding_box()
        covered = phone.evaluate("([x, y]) => !!document.elementFromPoint(x, y)?.closest('.modebar, [data-testid=\"stElementToolbar\"]')",
                                 [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
        assert not covered, titles.nth(i).text_content()
    screenshot(phone, "positional_zh_phone_charts")

    desk = page("/positional-encoding?lang=zh", locale="zh-CN")
    charts = desk.locator('[data-testid="stPlotlyChart"]')
    charts.first.hover()
    expect(desk.locator(".modebar-btn").first).to_be_attached()
    assert desk.locator(".modebar-btn").count() >= charts.count()
