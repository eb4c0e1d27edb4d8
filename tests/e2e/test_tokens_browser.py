"""The tokens page in a real browser: every side of the batch, bad input, a screenshot per state.

The server uses the shipped checkpoints; where none is installed, the embedding pictures show a
notice instead and the chart count says so.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.e2e.widgets import charts, paste_into, pick, widget
from ui.i18n import LANGS, translate


EXCEPTION = '[data-testid="stException"]'
PLOT = ".js-plotly-plot"
BAD_BATCH = "<b>bold</b> 你好 👍🏽\n" + "x" * 60 + "\n\n   "


def wait_for_url(p, wait_for_app, pattern: str) -> None:
    """Wait until the rerun caused by an action has written ``pattern`` into the URL and finished."""
    p.wait_for_url(re.compile(pattern))
    wait_for_app(p)
    assert p.locator(EXCEPTION).count() == 0


def submit_text(p, label: str, text: str) -> None:
    box = p.get_by_role("textbox", name=label)
    box.fill(text)
    box.press("Control+Enter")


@pytest.mark.parametrize("lang", LANGS)
def test_tokens_page(page, wait_for_app, screenshot, lang):
    p = page(f"/tokens?model=copy&lang={lang}")
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("tokens.title", lang))
    assert p.locator(EXCEPTION).count() == 0
    model = p.get_by_text(translate("common.model.none_available", lang)).count() == 0
    p.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= {2 if model else 0}")
    if model:  # the four steps: one chart, two by two
        assert steps_grid(p) == (2, 2)
    expect(p.locator("td.pad").first).to_be_visible()
    expect(p.locator("td.pad").first).to_have_css("background-color", "rgb(228, 229, 233)")  # padding: grey
    screenshot(p, f"tokens_default_{lang}")
    for side in ("decoder_in", "labels", "source"):
        p.get_by_role("radio", name=translate(f"tokens.batch.side_{side}", lang), exact=True).click()
        wait_for_url(p, wait_for_app, f"tokens_side={side}")
        if side != "source":
            expect(p.locator("td.special").first).to_be_visible()
            expect(p.locator("td.special").first).to_have_css("background-color", "rgb(219, 233, 251)")  # blue
        screenshot(p, f"tokens_side_{side}_{lang}")
    label = translate("tokens.batch.input", lang, lines=8, chars=48)
    submit_text(p, label, BAD_BATCH)
    wait_for_url(p, wait_for_app, "batch=%3Cb%3E")
    expect(p.get_by_text(translate("common.input.truncated", lang, limit=48))).to_be_visible()
    expect(p.locator("td.unk").first).to_be_visible()
    expect(p.locator("td.unk").first).to_have_css("background-color", "rgb(253, 224, 223)")  # unknown: red
    assert p.locator('[data-testid="stMain"] b', has_text="bold").count() == 0  # typed HTML stays text
    screenshot(p, f"tokens_bad_input_{lang}")
    submit_text(p, label, "   ")
    wait_for_url(p, wait_for_app, r"batch=(\+|%20){3}")
    expect(p.get_by_text(translate("common.input.empty", lang))).to_be_visible()
    screenshot(p, f"tokens_empty_{lang}")


@pytest.mark.parametrize("lang", LANGS)
def test_a_long_paste_into_the_batch_box_is_kept_cut_and_said(page, wait_for_app, screenshot, lang):
    """2,500 characters pasted into the 2,000-character batch box: the box takes the paste, keeps
    the first 2,000 (the URL holds only those) and says so; the model's own limits are reported as
    for typed text (the browser used to refuse such a paste and keep the old text)."""
    p = page(f"/tokens?model=copy&lang={lang}")
    expect(p.locator("td.pad").first).to_be_visible()
    box = p.get_by_role("textbox", name=translate("tokens.batch.input", lang, lines=8, chars=48))
    pasted = ("the cat sat on the mat\n" * 120)[:2500]
    paste_into(box, pasted, submit="Control+Enter")
    wait_for_url(p, wait_for_app, "batch=the")
    expect(box).to_have_value(pasted[:2000])
    expect(p.get_by_text(translate("common.link_and_paste.paste_cut", lang, count="2,500", limit="2,000"))
           ).to_be_visible()
    lines = len([line for line in pasted[:2000].splitlines() if line.strip()])
    expect(p.get_by_text(translate("common.input.too_many_lines", lang, limit=8, count=lines))).to_be_visible()
    assert parse_qs(urlparse(p.url).query)["batch"][0] == pasted[:2000]  # bounded: the cut text, not the paste
    screenshot(p, f"tokens_long_paste_{lang}")


def steps_grid(p) -> tuple[int, int]:
    """(columns, rows) of the four-step chart's subplots, as the browser laid them out."""
    p.wait_for_function(f"document.querySelectorAll('.st-key-tokens-stages {PLOT} .nsewdrag').length == 4")
    boxes = p.locator(f".st-key-tokens-stages {PLOT} .nsewdrag").evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [Math.round(r.x), Math.round(r.y)]; })")
    return len({x for x, _ in boxes}), len({y for _, y in boxes})


def test_tokens_page_on_a_phone(page, screenshot):
    p = page("/tokens?model=copy&lang=en", phone=True)
    expect(p.locator("td.pad").first).to_be_attached()
    assert steps_grid(p) == (1, 4)  # one above the other, each as wide as the phone
    # A wide batch scrolls inside its own box: the page itself does not get wider than the phone.
    assert p.evaluate("() => document.documentElement.scrollWidth") <= 390
    screenshot(p, "tokens_phone_en")


@pytest.mark.parametrize("lang", LANGS)
def test_a_lookup_is_a_product_typed_ids_and_a_phone(page, wait_for_app, screenshot, lang):
    """#31: the one-hot example, ids typed in the browser (one repeated); on a phone nothing widens the page."""
    p = page(f"/tokens?model=copy&lang={lang}", phone=lang == "zh")
    box = p.locator(".st-key-tokens-lookup_ids input")
    box.fill("3, 3, 1")
    box.press("Enter")
    wait_for_url(p, wait_for_app, "tokens_lookup_ids=3")
    product = p.locator("table#T_lookup_product")
    expect(product.locator("tbody tr")).to_have_count(3)
    expect(product.locator("tbody tr").nth(1)).to_contain_text("0.2674")  # row 3 of nn.Embedding(5, 3) at seed 42
    expect(p.locator("table#T_lookup_weight td.special")).to_have_count(6)  # rows 1 and 3, marked once each
    box.scroll_into_view_if_needed()
    screenshot(p, f"tokens_lookup_{lang}{'_phone' if lang == 'zh' else ''}")
    assert p.evaluate("() => document.documentElement.scrollWidth") <= p.viewport_size["width"]
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang, model, word, other_side_word",
                         [("en", "en-zh", "cat", "猫"), ("zh", "zh-en", "猫", "cat")])
def test_what_an_embedding_means_a_word_and_the_other_table(page, wait_for_app, screenshot, lang, model, word,
                                                            other_side_word):
    """The shipped model's table: a word picked in the browser redraws its neighbours; the other table
    (the target's) opens on its own words. 中文 on a phone, where nothing may widen the page."""
    p = page(f"/tokens?model={model}&lang={lang}", phone=lang == "zh")
    if p.get_by_text(translate("common.model.none_available", lang)).count():
        expect(p.get_by_text(translate("tokens.embed.no_model", lang)).last).to_be_visible()
        return
    for key in ("tokens.space_nearest", "tokens.space_pairs", "tokens.space_map"):
        expect(charts(p, key)).to_have_count(1)
    pick(p, widget(p, "tokens.space_word"), word)
    wait_for_url(p, wait_for_app, "tokens_space_word=")
    expect(p.get_by_text(translate("tokens.space.nearest_title", lang, k=8, word=word))).to_be_visible()
    widget(p, "tokens.space_map").scroll_into_view_if_needed()
    screenshot(p, f"tokens_space_{lang}{'_phone' if lang == 'zh' else ''}")
    widget(p, "tokens.space_side").get_by_role("radio").nth(1).click()
    wait_for_url(p, wait_for_app, "tokens_space_side=target")
    expect(widget(p, "tokens.space_words")).to_contain_text(other_side_word)
    expect(charts(p, "tokens.space_pairs")).to_have_count(1)
    assert p.evaluate("() => document.documentElement.scrollWidth") <= p.viewport_size["width"]
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang", LANGS)
def test_byte_pair_encoding_renders_its_slider_cuts_again_and_fits_a_phone(page, wait_for_app, screenshot, lang):
    """#32: BPE learnt on the grammar's English sentences; the merges slider moved in the browser cuts the
    sentence again (one merge more: ?tokens_bpe_merges=101); 中文 on a phone, where nothing may widen the page."""
    phone = lang == "zh"
    p = page(f"/tokens?model=copy&lang={lang}", phone=phone)
    pieces = p.locator(".tp-bpe-pieces")
    expect(pieces).to_have_count(1)
    expect(charts(p, "tokens.bpe_curve")).to_have_count(1)
    expect(pieces).to_contain_text(translate("tokens.bpe.cut_bpe", lang, k=100, n=19))
    expect(pieces.locator("span", has_text="<unk>")).to_have_count(2)  # whole words: happiest, catfish
    expect(p.locator("table#T_bpe_compare tbody tr")).to_have_count(3)  # characters, words, BPE
    slider = widget(p, "tokens.bpe_merges").get_by_role("slider")
    slider.focus()
    slider.press("ArrowRight")
    wait_for_url(p, wait_for_app, r"[?&]tokens_bpe_merges=101(&|$)")
    expect(pieces).to_contain_text(translate("tokens.bpe.cut_bpe", lang, k=101, n="§").split("§")[0])
    expect(p.locator("table#T_bpe_merges tbody tr")).to_have_count(101)
    box = widget(p, "tokens.bpe_sentence").locator("input")
    box.fill("the catfish ate lowest apples .")
    box.press("Enter")
    wait_for_url(p, wait_for_app, "tokens_bpe_sentence=the")
    expect(pieces.locator("span", has_text="<unk>")).to_have_count(2)  # catfish, lowest: words only
    charts(p, "tokens.bpe_curve").scroll_into_view_if_needed()
    pieces.scroll_into_view_if_needed()
    screenshot(p, f"tokens_bpe_{lang}{'_phone' if phone else ''}")
    assert p.evaluate("() => document.documentElement.scrollWidth") <= p.viewport_size["width"]
    assert p.locator(EXCEPTION).count() == 0
