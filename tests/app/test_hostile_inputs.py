"""Hostile input on every page, in both languages: every query value a page reads and every text
box it has gets a table of nasty values (wrong types, out-of-range numbers, unknown names, HTML and
Markdown, control characters, NUL, bidi marks, combining marks, emoji, CJK, a megabyte of text).

Whatever comes in: no exception element; a bad link value falls back (the default on a fresh visit,
else what the page showed) with one notice naming it; text that is shown back is shown literally
(Markdown-escaped in notices, HTML-escaped in tables and chart labels, never live markup).

To keep this quick, one session per (page, lang) walks the whole table: each value is put in the
URL (as a pasted link does; the page sees the URL change) or typed into the box (``set_value``:
sent as a scripted client would, past the box's ``max_chars``, which Streamlit then applies), and
the page reruns. A text box gets each value once per language: by link in one, typed in the other.
A link longer than Streamlit reads (512 Ki characters) is dropped whole by Streamlit: no notice,
nothing changes. A value that only a button's result shows (the cost page's axes switch) is tested
after the press, and once waiting in the link before it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

import pytest
from streamlit.runtime.caching import cache_resource_api
from streamlit.runtime.state.query_params import CLIENT_STATE_QUERY_STRING_MAX_LENGTH
from streamlit.testing.v1 import AppTest

from model.tasks import get_task
from model.tokenizer import CharTokenizer
from tests.app.apptest_helpers import clean, open_script, query, random_model_fixtures, texts
from explain import attention as xa
from explain import bleu as bv
from explain import cost
from explain import decoding as dv
from explain import layernorm as lnv
from explain import masks as em
from explain import norm_placement as npl
from explain import positional as pv
from explain import residual as rv
from explain import tokens as tv
from ui.training import settings as trs
from ui.head_set import HeadSetParam
from ui.i18n import LANGS, translate
from ui.tour import TOUR
from ui.widgets import BATCH_PARAM
from explain.text import prepare_sentences
from ui.url_state import (BoolParam, ChoiceParam, FloatParam, IntParam, Param, TextParam,
                          markdown_literal)

N_LAYERS, N_HEADS, MAX_LEN = 2, 2, 40
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 3), ("dates", 4), folder="hostile_checkpoints", d_model=32, n_heads=N_HEADS, n_layers=N_LAYERS,
    d_ff=64, max_len=MAX_LEN)

MIXED = "<img src=x onerror=alert(1)> **b** 你好 "
NASTY: dict[str, str] = {
    "word": "abc",
    "overflow": "1e999",
    "negative": "-1",
    "nan": "NaN",
    "huge": "999999999",
    "zero": "0",
    "fraction": "2.5",
    "empty": "",
    "blank": "   ",
    "unknown_name": "no-such-task",
    "img": "<img src=x onerror=alert(1)>",
    "style": "<style>body{display:none}</style>",
    "js_link": "[link](javascript:alert(1))",
    "bold": "**bold**",
    "math": "$x$",
    "heading": "x\n===",
    "control": "a\x07b\x1b[31mc\x7f",
    "nul": "a\x00b",
    "bidi": "\u202eabc\u200f",
    "combining": "e\u0301\u0301a\u0308",
    "emoji": "👍🏽🇫🇷👨‍👩‍👧",
    "cjk": "你好，世界",
    "long": (MIXED * 300)[:10_000],  # far over every limit, yet a link Streamlit still reads
    "megabyte": (MIXED * 30_000)[:1_000_000],  # a link this long is dropped whole by Streamlit
}
# Payloads that would turn into markup if they reached Markdown or HTML unescaped.
MARKUP = {"img", "style", "js_link", "bold", "math", "heading", "long", "megabyte"}
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


# ------------------------------------------------------------------ what each page reads


@dataclass(frozen=True)
class Live:
    """A query value whose allowed range depends on what the page shows (e.g. the number of steps)."""

    name: str
    rule: Callable[[AppTest], Param]


Rule = Param | Live


def rule_of(spec: Rule, at: AppTest) -> Param:
    return spec.rule(at) if isinstance(spec, Live) else spec


MODEL = ChoiceParam("model", "copy", choices=("copy", "dates"))  # the sidebar's, with this module's models
SENT = IntParam("sent", 0, lo=0, hi=2)  # the default batch has three sentences
LAYER_HEAD = {name: IntParam(name, 1, lo=1, hi=hi) for name, hi in
              (("att_layer", N_LAYERS), ("att_head", N_HEADS), ("dec_layer", N_LAYERS), ("dec_head", N_HEADS))}
ATT_KIND = ChoiceParam("att_kind", "encoder", choices=xa.KINDS)


@dataclass(frozen=True)
class Settings:
    """Query values of ``page`` read once ``context`` (valid values) has led the page to them."""

    id: str
    page: str
    rules: tuple[Rule, ...]
    context: dict[str, str] = field(default_factory=dict)
    press: str | None = None  # the key of a button that shows these values (the cost page's measure button)


def picked_index(name: str, kind: str, key: str) -> Live:
    """An index into the options the widget ``key`` shows (``kind``: "selectbox" or "select_slider")."""
    return Live(name, lambda at: IntParam(name, 0, lo=0, hi=len(getattr(at, kind)(key=key).options) - 1))


STACK_LAYER = (ChoiceParam("ff_stack", "encoder", choices=rv.STACKS), IntParam("ff_layer", 1, lo=1, hi=N_LAYERS))
BLEU_SAMPLES = (IntParam("bleu_n", 50, lo=10, hi=200, step=10), IntParam("bleu_seed", 0, lo=0, hi=9999),
                ChoiceParam("bleu_noise", "none", choices=bv.NOISES))
BLEU_ORDER = IntParam("bleu_order", 1, lo=1, hi=bv.MAX_ORDER)
NORM_SITES = lnv.norm_sites(N_LAYERS, norm_first=False)  # this module's models are post-norm
COST_LOG = BoolParam("cst_log", True)  # read once a measurement is shown
FEW_SAMPLES = {"bleu_n": "10"}  # one chunk of samples to decode: the lowest N the page offers

SETTINGS = [
    Settings("home", "app_pages/home.py", (MODEL,)),
    Settings("tokens", "app_pages/tokens.py", (MODEL, SENT, ChoiceParam("tok_side", "source", choices=tv.SIDES))),
    Settings("masks", "app_pages/masks.py", (
        MODEL, SENT, BoolParam("mask_pad", True), BoolParam("mask_ahead", True),
        ChoiceParam("mask_kind", "decoder", choices=em.SELF_ATTENTION_KINDS), IntParam("mask_layer", 0, lo=0, hi=N_LAYERS - 1),
        IntParam("mask_head", 0, lo=0, hi=N_HEADS - 1),
        Live("mask_query", lambda at: IntParam("mask_query", 0, lo=0,
                                               hi=len(at.select_slider(key="masks.query").options) - 1)),
    ), context={"mask_view": "row"}),  # the section that reads every one of them
    Settings("masks_view", "app_pages/masks.py", (
        MODEL, SENT, BoolParam("mask_pad", True), BoolParam("mask_ahead", True),
        ChoiceParam("mask_view", "matrices", choices=("matrices", "printout", "effect", "row")),
    )),
    Settings("positional", "app_pages/positional_encoding.py", (
        MODEL, IntParam("pe_d", 64, lo=2, hi=256, step=2), IntParam("pe_len", 50, lo=2, hi=128),
        ChoiceParam("pe_base", "10000", choices=pv.BASES), IntParam("pe_pair", 0, lo=0, hi=31),
        BoolParam("pe_on", False), IntParam("pe_shuffle", 0, lo=0, hi=999),
    )),
    Settings("attention", "app_pages/attention.py", (
        MODEL, ChoiceParam("att_view", "overview", choices=("overview", "heads", "inside", "stats", "ablation")),
        ATT_KIND, LAYER_HEAD["att_layer"], LAYER_HEAD["att_head"],
    )),
    Settings("attention_heads", "app_pages/attention.py",
             (BoolParam("att_all", True), ATT_KIND, LAYER_HEAD["att_layer"], LAYER_HEAD["att_head"]),
             {"att_view": "heads"}),
    Settings("attention_inside", "app_pages/attention.py",
             (BoolParam("att_scale", True), ATT_KIND, LAYER_HEAD["att_layer"], LAYER_HEAD["att_head"]),
             {"att_view": "inside"}),
    Settings("attention_ablation", "app_pages/attention.py",
             (HeadSetParam("att_off", default=[], choices=tuple(xa.all_heads(N_LAYERS, N_HEADS))),),
             {"att_view": "ablation"}),
    Settings("decoding", "app_pages/decoding.py", (
        MODEL, ChoiceParam("dec_view", "steps", choices=("steps", "compare", "forcing")),
        ChoiceParam("dec_strategy", "greedy", choices=dv.STRATEGIES), LAYER_HEAD["dec_layer"], LAYER_HEAD["dec_head"],
        Live("dec_step", lambda at: IntParam("dec_step", 1, lo=1, hi=int(at.slider(key="decoding.step").max))),
    )),
    Settings("decoding_compare", "app_pages/decoding.py", (
        IntParam("dec_beam", 3, lo=1, hi=8), FloatParam("dec_temp", 1.0, lo=0.0, hi=2.0, step=0.1),
        ChoiceParam("dec_topk", "all", choices=dv.TOP_K_CHOICES), IntParam("dec_seed", 0, lo=0, hi=9999),
    ), {"dec_view": "compare"}),
    Settings("training", "app_pages/training.py", (
        MODEL, *(trs.PARAMS[name] for name in ("task", "preset", "batch_size", "warmup")), trs.COMPARE,
        *(trs.PARAMS[name] for name in ("factor", "label_smoothing", "seed", "max_steps", "use_padding_mask",
                                        "use_look_ahead_mask")),
    )),
    # The pages below define their params in the page file (a script, not importable): their choices come
    # from explain/ where it has them.
    Settings("ffn", "app_pages/feed_forward.py", (
        MODEL, ChoiceParam("ff_view", "inside", choices=("inside", "position", "params")), *STACK_LAYER,
    )),
    Settings("ffn_position", "app_pages/feed_forward.py", (
        *STACK_LAYER, picked_index("ff_from", "selectbox", "ffn.copy_from"),
        picked_index("ff_to", "selectbox", "ffn.copy_to"),
    ), {"ff_view": "position"}),
    Settings("residual", "app_pages/residual_stream.py", (
        MODEL, ChoiceParam("rs_view", "sizes", choices=("sizes", "off")),
        ChoiceParam("rs_stack", "encoder", choices=rv.STACKS), picked_index("rs_tok", "selectbox", "residual.token"),
    )),
    Settings("residual_off", "app_pages/residual_stream.py",
             (HeadSetParam("rs_off", default=[], choices=tuple(rv.all_connections(N_LAYERS))),), {"rs_view": "off"}),
    Settings("layernorm", "app_pages/layer_norm.py", (
        MODEL, SENT, ChoiceParam("ln_at", NORM_SITES[0], choices=NORM_SITES),
        picked_index("ln_tok", "select_slider", "layernorm.token"), BoolParam("ln_pads", True),
        IntParam("ln_seed", npl.SEEDS[0], lo=npl.SEEDS[0], hi=npl.SEEDS[-1]),
    )),
    Settings("output", "app_pages/output_and_loss.py", (
        MODEL, ChoiceParam("out_view", "logits", choices=("logits", "seed", "loss", "smoothing")),
        picked_index("out_pos", "select_slider", "output.position"),
        FloatParam("out_temp", 1.0, lo=0.0, hi=5.0, step=0.1),
    )),
    Settings("output_smoothing", "app_pages/output_and_loss.py", (
        FloatParam("out_eps", 0.1, lo=0.0, hi=0.5, step=0.05),
        picked_index("out_pos", "select_slider", "output.position"),
    ), {"out_view": "smoothing"}),
    Settings("bleu", "app_pages/bleu.py", (
        MODEL, ChoiceParam("bleu_view", "corpus", choices=("corpus", "worked")), *BLEU_SAMPLES,
    ), FEW_SAMPLES),
    Settings("bleu_worked", "app_pages/bleu.py", (
        ChoiceParam("bleu_pair", "sample", choices=("sample", "typed")), *BLEU_SAMPLES,
        picked_index("bleu_pick", "selectbox", "bleu.pick"), BLEU_ORDER,
    ), {**FEW_SAMPLES, "bleu_view": "worked"}),
    Settings("bleu_typed", "app_pages/bleu.py", (
        ChoiceParam("bleu_tok", "char", choices=bv.TOKENIZATIONS), BLEU_ORDER,
    ), {"bleu_view": "worked", "bleu_pair": "typed"}),
    Settings("cost", "app_pages/attention_cost.py", (MODEL,)),  # nothing measured: the page reads only the model
    Settings("cost_measured", "app_pages/attention_cost.py", (MODEL, COST_LOG), press="cost.measure"),
]


@dataclass(frozen=True)
class Box:
    """A text box: its widget, the query value bound to it, and how the page reads the text."""

    id: str
    page: str
    kind: str  # "text_area" or "text_input"
    key: str
    param: TextParam
    max_chars: int | None  # per sentence, as the page computes it for this module's models (max_len 40);
    # None: the page does not give the text to the model (no notices about it)
    max_lines: int = 1
    task: str = "copy"
    context: dict[str, str] = field(default_factory=dict)


EXAMPLE = get_task("copy").example
BOXES = [
    Box("tokens", "app_pages/tokens.py", "text_area", "batch.text", BATCH_PARAM, MAX_LEN - 1, max_lines=8),
    Box("masks", "app_pages/masks.py", "text_area", "batch.text", BATCH_PARAM, MAX_LEN - 1, max_lines=8),
    Box("positional", "app_pages/positional_encoding.py", "text_input", "positional.sentence",
        TextParam("pe_text", "the cat sat on the mat", max_len=200), MAX_LEN - 1),
    Box("attention", "app_pages/attention.py", "text_input", "attention.text",
        TextParam("att_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("decoding", "app_pages/decoding.py", "text_input", "decoding.text",
        TextParam("dec_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("decoding_target", "app_pages/decoding.py", "text_input", "decoding.target",
        TextParam("dec_target", "", max_len=200), MAX_LEN - 1, task="dates",
        context={"model": "dates", "dec_view": "forcing", "dec_text": "31 feb 2026"}),
    Box("ffn", "app_pages/feed_forward.py", "text_input", "ffn.text", TextParam("ff_text", EXAMPLE, max_len=200),
        MAX_LEN),
    Box("residual", "app_pages/residual_stream.py", "text_input", "residual.text",
        TextParam("rs_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("layernorm", "app_pages/layer_norm.py", "text_area", "batch.text", BATCH_PARAM, MAX_LEN - 1, max_lines=8),
    Box("output", "app_pages/output_and_loss.py", "text_input", "output.text",
        TextParam("out_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("output_target", "app_pages/output_and_loss.py", "text_input", "output.target",
        TextParam("out_target", EXAMPLE, max_len=200), MAX_LEN - 1),  # the copy task's answer is its sentence
    Box("bleu_reference", "app_pages/bleu.py", "text_input", "bleu.reference",
        TextParam("bleu_ref", "thank you so much, my brother", max_len=200), None,
        context={"bleu_view": "worked", "bleu_pair": "typed"}),
    Box("bleu_candidate", "app_pages/bleu.py", "text_input", "bleu.candidate",
        TextParam("bleu_cand", "thank you so much", max_len=200), None,
        context={"bleu_view": "worked", "bleu_pair": "typed"}),
]


# ------------------------------------------------------------------ checks


URL_PATHS = {stop.script: stop.url_path for stop in TOUR}


def open_page(app, page: str, query_: dict[str, str] | None = None, *, locale: str | None = None) -> AppTest:
    if page == "app_pages/home.py":  # the default page: no switch
        return clean(app(query=query_, locale=locale).run())
    home_first = URL_PATHS[page] != Path(page).stem  # e.g. /feed-forward runs feed_forward.py
    return open_script(app, page, query_, locale=locale, home_first=home_first)


def accepts(param: Param, raw: str) -> tuple[bool, object]:
    try:
        return True, param.parse(raw)
    except ValueError:
        return False, None


def link_is_read(at: AppTest) -> bool:
    """False when the URL is longer than Streamlit reads: it then ignores the whole query string."""
    return len(urlencode(at.query_params, doseq=True)) <= CLIENT_STATE_QUERY_STRING_MAX_LENGTH


def rerun(at: AppTest, where: str) -> AppTest:
    at.run()
    assert not at.exception, (where, [e.value for e in at.exception])
    return at


def notices_naming(at: AppTest, name: str) -> list[str]:
    """Toasts about the query value ``name`` (its name stands between spaces in both languages)."""
    return [toast for toast in texts(at.toast) if f" {markdown_literal(name)} " in toast]


def markdown_bodies(at: AppTest) -> list[str]:
    """Everything the page shows as Markdown: text, captions, headings, notices of every kind."""
    elements = [*at.markdown, *at.caption, *at.title, *at.header, *at.subheader, *at.warning, *at.info,
                *at.success, *at.error, *at.toast]
    return [e.proto.body for e in elements]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, attrs))


def live_markup(body: str) -> list[str]:
    """Tags or attributes in ``body`` that would run or hide things: what escaping must prevent."""
    parser = _Tags()
    parser.feed(body)
    bad = []
    for tag, attrs in parser.tags:
        if tag in ("img", "script", "iframe", "object", "embed", "link", "meta"):
            bad.append(tag)
        bad += [f"{tag}[{name}]" for name, value in attrs
                if name.startswith("on") or "javascript:" in (value or "").lower()]
    return bad


def assert_shown_literally(at: AppTest, value_id: str, where: str) -> None:
    raw = NASTY[value_id]
    markdown = markdown_bodies(at)
    if value_id in MARKUP:
        for body in markdown:
            assert raw[:200] not in body, (where, "unescaped in Markdown", body[:300])
    for body in markdown:
        assert not RAW_CONTROL.search(body), (where, "control character in Markdown", body[:300])
        assert not BIDI.search(body), (where, "bidi control in Markdown: it reorders the sentence", body[:300])
    allowing_html = [e.proto.body for e in at.markdown if e.proto.allow_html]
    for body in allowing_html + [h.proto.body for h in at.get("html")]:
        assert not live_markup(body), (where, live_markup(body))
        assert "<img" not in body and "<style>body" not in body, where
    for chart in at.get("plotly_chart"):
        spec = chart.proto.spec
        assert "<img" not in spec and "<style>body" not in spec and "javascript:" not in spec, where
        for tick in re.findall(r'"ticktext":\s*\[([^\]]*)\]', spec):
            # Labels are escaped; the only markup is the app's own bold for the looked-up rows.
            assert not re.search(r"<(?!/?b>)", tick), (where, tick[:300])


def prepared_text(box: Box, text: str):
    """What the page makes of ``text`` (the pure input function, with the page's limits)."""
    return prepare_sentences(text, CharTokenizer(get_task(box.task).alphabet), max_lines=box.max_lines,
                             max_chars=box.max_chars)


def expected_notices(box: Box, text: str, lang: str) -> list[str]:
    """The warnings the page must show for ``text``."""
    if box.max_chars is None:
        return []
    return [translate(n.key, lang, **{k: markdown_literal(str(v), 80) for k, v in n.values.items()})
            for n in prepared_text(box, text).notices]


@pytest.fixture(autouse=True)
def no_training_session_left_behind():
    """AppTest gives every session one id: release the training page's session cache around each test."""
    cache_resource_api.clear_session_cache("test session id")
    yield
    cache_resource_api.clear_session_cache("test session id")


@pytest.fixture(autouse=True)
def short_cost_measurements(monkeypatch):
    """The cost page measures three short lengths, afresh in each test (its button shows only before a measurement)."""
    monkeypatch.setattr(cost, "LENGTHS", (8, 16, 32))
    cost.forget_measurements()
    yield
    cost.forget_measurements()


# ------------------------------------------------------------------ query values


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s.id)
def test_every_query_value_survives_the_nasty_table(app, settings, lang):
    at = open_page(app, settings.page, {"lang": lang, **settings.context})
    if settings.press:
        at.button(key=settings.press).click()
        rerun(at, f"{settings.id}/{lang}/press")
    # What the page shows at first: a param's default, or what the page chose (the most focused head).
    current = {rule.name: rule.parse(query(at, rule.name)) if rule.name in at.query_params else rule.default
               for rule in (rule_of(spec, at) for spec in settings.rules)}
    for value_id, raw in NASTY.items():
        where = f"{settings.id}/{lang}/{value_id}"
        for spec in settings.rules:
            at.query_params[rule_of(spec, at).name] = raw
        rules = [rule_of(spec, at) for spec in settings.rules]  # ranges as the page showed them before
        read = link_is_read(at)
        rerun(at, where)
        rejected = 0
        for param in rules:
            ok, parsed = accepts(param, raw)
            if not read:  # nothing changes, nothing to say
                assert not at.toast, (where, texts(at.toast))
            elif ok:
                current[param.name] = parsed
                assert not notices_naming(at, param.name), (where, param.name, texts(at.toast))
            else:
                rejected += 1
                named = notices_naming(at, param.name)
                assert len(named) == 1, (where, param.name, texts(at.toast))
                assert markdown_literal(raw) in named[0], (where, named[0])
            assert query(at, param.name) == param.format(current[param.name]), (where, param.name)
        assert len(at.toast) == rejected, (where, texts(at.toast))
        assert at.title[0].value == translate("common.app_title" if settings.id == "home" else
                                              f"{settings.id.split('_')[0]}.title", lang), where
        assert_shown_literally(at, value_id, where)


@pytest.mark.parametrize("lang", LANGS)
def test_a_nasty_link_value_waiting_for_the_cost_button_is_named_when_it_is_pressed(app, lang):
    """A link may carry ``?cst_log=`` before anything is measured: the page reads it (and names a bad one)
    when the button shows the result."""
    for value_id, raw in NASTY.items():
        where = f"cost_button/{lang}/{value_id}"
        cost.forget_measurements()
        link = {"lang": lang, COST_LOG.name: raw}
        read = len(urlencode(link)) <= CLIENT_STATE_QUERY_STRING_MAX_LENGTH  # else Streamlit drops the whole link
        at = open_page(app, "app_pages/attention_cost.py", link)
        assert not at.toast, (where, texts(at.toast))  # nothing shown reads it yet
        at.button(key="cost.measure").click()
        rerun(at, where)
        ok, parsed = accepts(COST_LOG, raw)
        assert at.toggle(key="cost.log").value == (parsed if ok and read else COST_LOG.default), where
        assert query(at, COST_LOG.name) == COST_LOG.format(at.toggle(key="cost.log").value), where
        named = notices_naming(at, COST_LOG.name)
        if ok or not read:
            assert not at.toast, (where, texts(at.toast))
        else:
            assert len(named) == len(at.toast) == 1 and markdown_literal(raw) in named[0], (where, texts(at.toast))
        assert_shown_literally(at, value_id, where)


@pytest.mark.parametrize("locale", ["en-GB", "zh-CN"])
def test_a_nasty_language_falls_back_to_the_browsers(app, locale):
    lang = locale[:2]
    at = open_page(app, "app_pages/home.py", locale=locale)
    for value_id, raw in NASTY.items():
        where = f"lang/{locale}/{value_id}"
        at.query_params["lang"] = raw
        read = link_is_read(at)
        rerun(at, where)
        assert at.radio(key="lang").value == lang and query(at, "lang") == lang, where
        named = notices_naming(at, "lang")
        if read:
            assert len(named) == len(at.toast) == 1 and markdown_literal(raw) in named[0], (where, texts(at.toast))
        else:
            assert not at.toast, (where, texts(at.toast))
        assert at.title[0].value == translate("common.app_title", lang), where
        assert_shown_literally(at, value_id, where)


# ------------------------------------------------------------------ text boxes


def check_box(at: AppTest, box: Box, lang: str, shown: str, where: str) -> None:
    widget = getattr(at, box.kind)(key=box.key)
    assert widget.value == shown, (where, widget.value[:80])
    assert query(at, box.param.name) == shown, where
    warnings = texts(at.warning)
    for notice in expected_notices(box, shown, lang):
        assert notice in warnings, (where, notice, warnings)
    sentences = prepared_text(box, shown).sentences if box.max_chars is not None else []
    if box.id == "attention" and sentences:  # the copy task's answer is the sentence: shown escaped
        expected = translate("attention.expected", lang, expected=markdown_literal(sentences[0], limit=60))
        assert expected in warnings or translate("attention.correct", lang) in texts(at.success), (where, warnings)
    if box.id == "tokens" and any("<" in s for s in sentences):  # the tables: HTML-escaped cells
        batch_tokens = at.get("html")[0].proto.body
        assert "&lt;" in batch_tokens and not live_markup(batch_tokens), where


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("box", BOXES, ids=lambda b: b.id)
def test_every_text_box_survives_the_nasty_table(app, box, lang):
    """Each value arrives once per language: by link in one language, typed in the other."""
    at = open_page(app, box.page, {"lang": lang, **box.context})
    shown = box.param.default
    check_box(at, box, lang, shown, f"{box.id}/{lang}/start")
    for n, (value_id, raw) in enumerate(NASTY.items()):
        if (n + LANGS.index(lang)) % 2 == 0:
            where = f"{box.id}/{lang}/{value_id}/link"
            at.query_params[box.param.name] = raw
            read = link_is_read(at)
            rerun(at, where)
            named = notices_naming(at, box.param.name)
            if not read:
                assert not at.toast, (where, texts(at.toast))
            elif accepts(box.param, raw)[0]:
                shown = raw
                assert not named, (where, texts(at.toast))
            else:
                assert len(named) == len(at.toast) == 1 and markdown_literal(raw) in named[0], (where, texts(at.toast))
        else:
            where = f"{box.id}/{lang}/{value_id}/typed"
            getattr(at, box.kind)(key=box.key).set_value(raw)
            rerun(at, where)
            typed = raw[: box.param.max_len]  # the box's max_chars: Streamlit cuts what a client sends
            shown = box.param.clean(typed)  # control characters (pasted from a word processor) become spaces
            assert accepts(box.param, shown)[0], (where, shown)
            assert not at.toast, (where, texts(at.toast))  # typing is not a link: no link notice
        check_box(at, box, lang, shown, where)
        assert_shown_literally(at, value_id, where)
