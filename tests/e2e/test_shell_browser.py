"""The app shell in a real browser: deep links on a fresh server, language, the tour, the diagram."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import switch_language
from ui import prefetch
from ui.i18n import LANGS, translate
from ui.tour import TOUR, neighbours


EXCEPTION = '[data-testid="stException"]'


def heading(key: str, lang: str) -> str:
    return translate("common.app_title" if key == "home" else f"{key}.title", lang)


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlparse(url).query)


def path_of(url: str) -> str:
    return urlparse(url).path.strip("/")


def assert_shell(p, key: str, lang: str) -> None:
    """The page ``key`` in ``lang``: its heading, the shared sidebar, no exception."""
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(heading(key, lang))
    sidebar = p.locator('[data-testid="stSidebar"]')
    expect(sidebar.locator('[data-testid="stSidebarNav"]')).to_be_visible()
    expect(sidebar.get_by_text(translate("common.sidebar.language", lang), exact=True)).to_be_visible()
    expect(sidebar.get_by_text(re.compile(r"(cpu|cuda|mps)"))).to_be_visible()
    assert p.locator(EXCEPTION).count() == 0
    assert query(p.url).get("lang") == [lang]


def test_deep_links_on_a_fresh_server(page, fresh_server_url, screenshot):
    """Every page opened by its own URL before any session has run the router."""
    order = [s for s in TOUR if not s.is_default] + [TOUR[0]]  # the first request is a deep link
    for lang in LANGS:
        for s in order:
            p = page(f"/{s.url_path}?lang={lang}", base_url=fresh_server_url)
            assert_shell(p, s.key, lang)
            assert path_of(p.url) == s.url_path
            screenshot(p, f"page_{s.key}_{lang}")
            p.context.close()


def test_language_follows_the_browser_locale(page):
    p = page("/", locale="zh-CN")
    assert_shell(p, "home", "zh")
    p = page("/masks", locale="en-GB")
    assert_shell(p, "masks", "en")


def test_switch_language_then_follow_next_through_the_tour(page, wait_for_app, screenshot):
    p = page("/?lang=en")
    assert_shell(p, "home", "en")
    switch_language(p, "zh", heading("home", "zh"))
    wait_for_app(p)
    assert_shell(p, "home", "zh")
    for s in TOUR[:-1]:
        _, following = neighbours(s.key)
        label = translate("common.nav.next", "zh", title=translate(following.title_key, "zh"))
        p.locator('[data-testid="stMain"] [data-testid="stPageLink"]').filter(has_text=label).click()
        p.wait_for_url(re.compile(rf"/{re.escape(following.url_path)}(\?|$)"))
        expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(heading(following.key, "zh"))
        wait_for_app(p)
        assert_shell(p, following.key, "zh")
        screenshot(p, f"tour_{following.key}_zh")
    _, last = neighbours(TOUR[-1].key)
    assert last is None


def test_sidebar_navigation_keeps_the_language(page, wait_for_app):
    p = page("/tokens?lang=zh")
    # "注意力" is also inside "注意力的计算代价" (the cost page): pick the link whose whole name it is.
    p.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=translate("attention.title", "zh"),
                                                          exact=True).click()
    p.wait_for_url(re.compile(r"/attention(\?|$)"))
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(heading("attention", "zh"))
    wait_for_app(p)
    expect(p).to_have_url(re.compile(r"[?&]lang=zh\b"))
    assert_shell(p, "attention", "zh")


def test_the_other_pages_code_loads_while_home_is_read(page, wait_for_app):
    """#35 item 22: the chart, table and formula code the next pages need arrives while Home is read, so the
    first click to Tokens finds plotly ready; the element that loads it takes no room on the page."""
    p = page("/?lang=en")
    assert p.locator(".st-key-tp_prefetch").count() == 1
    expect(p.locator(".st-key-tp_prefetch")).to_be_hidden()
    assert p.locator(".js-plotly-plot").count() == 0  # Home draws no chart: plotly comes only from the prefetch
    p.wait_for_function(f"window.__tpPrefetched === {len(prefetch.chunk_files())}", timeout=60_000)
    plotly_requests = "performance.getEntriesByType('resource').filter(r => r.name.includes('/PlotlyChart.')).length"
    assert p.evaluate(plotly_requests) == 1
    p.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=translate("tokens.title", "en"),
                                                          exact=True).click()
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(heading("tokens", "en"))
    wait_for_app(p)
    p.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    assert p.evaluate(plotly_requests) == 1  # the page's charts used the module already loaded
    assert p.locator(EXCEPTION).count() == 0


def _home_in_chinese(page, wait_for_app):
    """Home, switched to 中文 in this session only (not in the link), to prove a click keeps the session."""
    p = page("/?lang=en")
    switch_language(p, "zh", heading("home", "zh"))
    wait_for_app(p)
    return p


def _click_opens_in_this_session(p, wait_for_app, link, target: str) -> None:
    link.click()
    url_path = next(s.url_path for s in TOUR if s.key == target)
    p.wait_for_url(re.compile(rf"/{re.escape(url_path)}(\?|$)"))
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(heading(target, "zh"))
    wait_for_app(p)
    assert_shell(p, target, "zh")


@pytest.mark.parametrize("target", ["tokens", "positional_encoding", "attention", "feed_forward", "layer_norm", "decoding", "output_and_loss",
                                    "training"])
def test_clicking_the_diagram_opens_the_page_in_the_same_session(page, wait_for_app, target):
    p = _home_in_chinese(page, wait_for_app)
    block = p.locator(f'.tp-diagram a[data-page="{target}"]').first
    expect(block).to_be_visible()
    assert "lang=zh" in block.get_attribute("href")
    _click_opens_in_this_session(p, wait_for_app, block, target)


def test_the_sidebar_lists_every_page_of_the_tour(page, wait_for_app):
    """Fourteen pages: Streamlit folds a menu of more than ten behind "View more" unless told not to."""
    p = page("/?lang=en")
    wait_for_app(p)
    nav = p.locator('[data-testid="stSidebarNav"] a')
    expect(nav).to_have_count(len(TOUR))
    for s in TOUR:
        expect(p.locator('[data-testid="stSidebarNav"]')).to_contain_text(translate(s.title_key, "en"))


def test_clicking_a_residual_arrow_opens_the_residual_stream(page, wait_for_app):
    """The grey residual arrows are thin lines: a click on the line itself (not its box's middle) opens the page."""
    p = _home_in_chinese(page, wait_for_app)
    arrow = p.locator('.tp-diagram a[data-page="residual_stream"] path').first
    box = arrow.bounding_box()
    assert box is not None
    # The encoder's first arrow runs left, down the left edge of its box, then right: click on that left edge.
    p.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)
    url_path = next(s.url_path for s in TOUR if s.key == "residual_stream")
    p.wait_for_url(re.compile(rf"/{re.escape(url_path)}(\?|$)"))
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(heading("residual_stream", "zh"))


@pytest.mark.parametrize("target", ["masks", "training"])
def test_the_home_tour_list_opens_its_page_in_the_same_session(page, wait_for_app, target):
    p = _home_in_chinese(page, wait_for_app)
    entry = p.locator(f'.tp-tour a[data-page="{target}"]')
    expect(entry).to_contain_text(translate(f"{target}.title", "zh"))
    assert "lang=zh" in entry.get_attribute("href")
    _click_opens_in_this_session(p, wait_for_app, entry, target)


def test_bad_link_values_show_a_notice_not_a_traceback(page, screenshot):
    p = page("/attention?lang=xx&model=nope", locale="zh-CN")
    assert_shell(p, "attention", "zh")
    toasts = p.locator('[data-testid="stToast"]')
    # One notice per bad value; they can arrive a moment apart, so wait for each (not for the first).
    expect(toasts.filter(has_text="xx")).to_be_visible()
    expect(toasts.filter(has_text="nope")).to_be_visible()
    screenshot(p, "bad_link_zh")


# Issue #24: the Cross-Attention block opened the encoder's self-attention. Each block opens the view it names.
BLOCKS = [("Cross-Attention", "attention", "attention_kind", "cross"),
          ("Masked Multi-Head", "attention", "attention_kind", "decoder"),
          ("Multi-Head", "attention", "attention_kind", "encoder"),
          ("Output Embedding", "tokens", "tokens_side", "decoder_in"),
          ("Input Embedding", "tokens", "tokens_side", "source"),
          ("Feed Forward", "feed_forward", "feed_forward_stack", "encoder"),
          ("Feed Forward", "feed_forward", "feed_forward_stack", "decoder"),
          ("Linear", "output_and_loss", "output_and_loss_view", "logits"),
          ("Add & Norm", "layer_norm", "layer_norm_at", "decoder.0.cross_attn")]


@pytest.mark.parametrize(("block", "target", "param", "value"), BLOCKS)
def test_each_block_of_the_diagram_opens_the_view_it_names(page, wait_for_app, screenshot, block, target, param,
                                                           value):
    p = _home_in_chinese(page, wait_for_app)
    english = page("/?lang=en").locator(f'.tp-diagram a[data-page="{target}"][data-query="{param}={value}"]')
    expect(english.filter(has_text=block)).to_have_count(1)  # the link sits on the block that names the view
    link = p.locator(f'.tp-diagram a[data-page="{target}"][data-query="{param}={value}"]').first
    href = query(link.get_attribute("href"))
    assert href.get(param) == [value] and href.get("lang") == ["zh"], href
    _click_opens_in_this_session(p, wait_for_app, link, target)
    assert query(p.url).get(param) == [value]
    if target == "attention":
        option = p.locator(".st-key-attention-kind").get_by_role(
            "radio", name=translate(f"attention.kind.{value}", "zh"), exact=True)
        expect(option).to_be_checked()
    screenshot(p, f"home_block_{param}_{value}_zh")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cross_attention_block_is_the_one_that_opens_cross_attention(page, screenshot, lang):
    """The link sits on the block whose text says Cross-Attention (in each language's drawing)."""
    p = page(f"/?lang={lang}", locale="zh-CN" if lang == "zh" else "en-US")
    link = p.locator('.tp-diagram a[data-query="attention_kind=cross"]')
    expect(link).to_have_count(1)
    words = {"en": "Cross-Attention", "zh": "交叉注意力"}[lang]
    expect(link).to_contain_text(words)
    screenshot(p, f"home_diagram_{lang}")
