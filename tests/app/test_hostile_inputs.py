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
from explain import paper_vs_code as pvc
from explain import positional as pv
from explain import residual as rv
from explain import tokens as tv
from ui.training import settings as trs
from ui import prefetch
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
              (("attention_layer", N_LAYERS), ("attention_head", N_HEADS), ("decoding_layer", N_LAYERS), ("decoding_head", N_HEADS))}
ATT_KIND = ChoiceParam("attention_kind", "encoder", choices=xa.KINDS)


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


STACK_LAYER = (ChoiceParam("feed_forward_stack", "encoder", choices=rv.STACKS), IntParam("feed_forward_layer", 1, lo=1, hi=N_LAYERS))
BLEU_SAMPLES = (IntParam("bleu_n", 50, lo=10, hi=200, step=10), IntParam("bleu_seed", 0, lo=0, hi=9999),
                ChoiceParam("bleu_noise", "none", choices=bv.NOISES))
BLEU_ORDER = IntParam("bleu_order", 1, lo=1, hi=bv.MAX_ORDER)
NORM_SITES = lnv.norm_sites(N_LAYERS, norm_first=False)  # this module's models are post-norm
COST_LOG = BoolParam("attention_cost_log", True)  # read once a measurement is shown
FEW_SAMPLES = {"bleu_n": "10"}  # one chunk of samples to decode: the lowest N the page offers

SETTINGS = [
    Settings("home", "app_pages/home.py", (MODEL,)),
    Settings("tokens", "app_pages/tokens.py", (MODEL, SENT, ChoiceParam("tokens_side", "source", choices=tv.SIDES))),
    Settings("masks", "app_pages/masks.py", (
        MODEL, SENT, BoolParam("masks_pad", True), BoolParam("masks_ahead", True),
        ChoiceParam("masks_kind", "decoder", choices=em.SELF_ATTENTION_KINDS), IntParam("masks_layer", 0, lo=0, hi=N_LAYERS - 1),
        IntParam("masks_head", 0, lo=0, hi=N_HEADS - 1),
        Live("masks_query", lambda at: IntParam("masks_query", 0, lo=0,
                                               hi=len(at.select_slider(key="masks.query").options) - 1)),
    ), context={"masks_view": "row"}),  # the section that reads every one of them
    Settings("masks_view", "app_pages/masks.py", (
        MODEL, SENT, BoolParam("masks_pad", True), BoolParam("masks_ahead", True),
        ChoiceParam("masks_view", "matrices", choices=("matrices", "printout", "effect", "row", "sparse", "families")),
    )),
    Settings("masks_sparse", "app_pages/masks.py", (
        MODEL, SENT, ChoiceParam("masks_pattern", "window", choices=em.PATTERNS), IntParam("masks_radius", 1, lo=0, hi=16),
        BoolParam("masks_sparse_decoder", False),
    ), context={"masks_view": "sparse"}),
    Settings("positional_encoding", "app_pages/positional_encoding.py", (
        MODEL, IntParam("positional_encoding_d", 64, lo=2, hi=256, step=2), IntParam("positional_encoding_len", 50, lo=2, hi=128),
        ChoiceParam("positional_encoding_base", "10000", choices=pv.BASES), IntParam("positional_encoding_pair", 0, lo=0, hi=31),
        BoolParam("positional_encoding_on", False), IntParam("positional_encoding_shuffle", 0, lo=0, hi=999),
    )),
    Settings("attention", "app_pages/attention.py", (
        MODEL, ChoiceParam("attention_view", "overview", choices=("overview", "heads", "inside", "stats", "ablation")),
        ATT_KIND, LAYER_HEAD["attention_layer"], LAYER_HEAD["attention_head"],
    )),
    Settings("attention_alignment", "app_pages/attention.py", (BoolParam("attention_alignment", True),),
             {"attention_kind": "cross"}),
    Settings("attention_heads", "app_pages/attention.py",
             (BoolParam("attention_all", True), ATT_KIND, LAYER_HEAD["attention_layer"], LAYER_HEAD["attention_head"]),
             {"attention_view": "heads"}),
    Settings("attention_inside", "app_pages/attention.py",
             (BoolParam("attention_scale", True), ATT_KIND, LAYER_HEAD["attention_layer"], LAYER_HEAD["attention_head"],
              ChoiceParam("attention_compat", "dot", choices=("dot", "additive"))),
             {"attention_view": "inside"}),
    Settings("attention_ablation", "app_pages/attention.py",
             (HeadSetParam("attention_off", default=[], choices=tuple(xa.all_heads(N_LAYERS, N_HEADS))),),
             {"attention_view": "ablation"}),
    Settings("decoding", "app_pages/decoding.py", (
        MODEL, ChoiceParam("decoding_view", "steps", choices=("steps", "compare", "forcing", "parallel")),
        ChoiceParam("decoding_strategy", "greedy", choices=dv.STRATEGIES), LAYER_HEAD["decoding_layer"], LAYER_HEAD["decoding_head"],
        Live("decoding_step", lambda at: IntParam("decoding_step", 1, lo=1, hi=int(at.slider(key="decoding.step").max))),
    )),
    Settings("decoding_compare", "app_pages/decoding.py", (
        IntParam("decoding_beam", 3, lo=1, hi=8), FloatParam("decoding_temp", 1.0, lo=0.0, hi=2.0, step=0.1),
        FloatParam("decoding_length_penalty", 0.0, lo=0.0, hi=2.0, step=0.1),
        ChoiceParam("decoding_topk", "all", choices=dv.TOP_K_CHOICES), IntParam("decoding_seed", 0, lo=0, hi=9999),
    ), {"decoding_view": "compare"}),
    Settings("decoding_parallel", "app_pages/decoding.py",
             (ChoiceParam("decoding_placeholder", "unk", choices=dv.PLACEHOLDERS),), {"decoding_view": "parallel"}),
    Settings("training", "app_pages/training.py", (
        MODEL, *(trs.PARAMS[name] for name in ("task", "preset", "heads", "head_dim", "batch_size", "warmup")), trs.COMPARE,
        trs.PAPER_LR, *(trs.PARAMS[name] for name in ("factor", "label_smoothing", "dropout", "seed", "max_steps",
                                                      "use_padding_mask", "use_look_ahead_mask")),
    )),
    # The tokens setting is drawn for a translation task only.
    Settings("training_mt", "app_pages/training.py", (trs.PARAMS["tokens"],), {"training_task": "en-zh"}),
    # The pages below define their params in the page file (a script, not importable): their choices come
    # from explain/ where it has them.
    Settings("feed_forward", "app_pages/feed_forward.py", (
        MODEL, ChoiceParam("feed_forward_view", "inside", choices=("inside", "position", "params")), *STACK_LAYER,
    )),
    Settings("ffn_position", "app_pages/feed_forward.py", (
        *STACK_LAYER, picked_index("feed_forward_from", "selectbox", "feed_forward.copy_from"),
        picked_index("feed_forward_to", "selectbox", "feed_forward.copy_to"),
    ), {"feed_forward_view": "position"}),
    Settings("residual_stream", "app_pages/residual_stream.py", (
        MODEL, ChoiceParam("residual_stream_view", "sizes", choices=("sizes", "off", "dropout")),
        ChoiceParam("residual_stream_stack", "encoder", choices=rv.STACKS), picked_index("residual_stream_tok", "selectbox", "residual_stream.token"),
    )),
    Settings("residual_off", "app_pages/residual_stream.py",
             (HeadSetParam("residual_stream_off", default=[], choices=tuple(rv.all_connections(N_LAYERS))),), {"residual_stream_view": "off"}),
    Settings("residual_dropout", "app_pages/residual_stream.py", (
        ChoiceParam("residual_stream_drop_at", rv.all_connections(N_LAYERS)[0], choices=tuple(rv.all_connections(N_LAYERS))),
        picked_index("residual_stream_drop_tok", "selectbox", "residual_stream.drop_tok"),
        FloatParam("residual_stream_drop_p", 0.1, lo=0.0, hi=0.9, step=0.05), IntParam("residual_stream_drop_seed", 0, lo=0, hi=9999),
    ), {"residual_stream_view": "dropout"}),
    Settings("layer_norm", "app_pages/layer_norm.py", (
        MODEL, SENT, ChoiceParam("layer_norm_at", NORM_SITES[0], choices=NORM_SITES),
        picked_index("layer_norm_tok", "select_slider", "layer_norm.token"), BoolParam("layer_norm_pads", True),
        IntParam("layer_norm_seed", npl.SEEDS[0], lo=npl.SEEDS[0], hi=npl.SEEDS[-1]),
        ChoiceParam("layer_norm_skip_at", f"decoder.{npl.N_LAYERS - 1}.cross_attn",
                    choices=tuple(f"{s}.{l}.{sub}" for s, l, sub in npl.connections(npl.N_LAYERS))),
    )),
    Settings("output_and_loss", "app_pages/output_and_loss.py", (
        MODEL, ChoiceParam("output_and_loss_view", "logits", choices=("logits", "seed", "loss", "smoothing")),
        picked_index("output_and_loss_pos", "select_slider", "output_and_loss.position"),
        FloatParam("output_and_loss_temp", 1.0, lo=0.0, hi=5.0, step=0.1),
    )),
    Settings("output_smoothing", "app_pages/output_and_loss.py", (
        FloatParam("output_and_loss_eps", 0.1, lo=0.0, hi=0.5, step=0.05),
        picked_index("output_and_loss_pos", "select_slider", "output_and_loss.position"),
    ), {"output_and_loss_view": "smoothing"}),
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
    Settings("attention_cost", "app_pages/attention_cost.py", (  # nothing measured: the model and latent attention
        MODEL, IntParam("attention_cost_latents", 4, lo=1, hi=32), IntParam("attention_cost_latent_head", 1, lo=1, hi=N_HEADS),
    )),
    Settings("cost_measured", "app_pages/attention_cost.py", (MODEL, COST_LOG), press="attention_cost.measure"),
    Settings("paper_vs_code", "app_pages/paper_vs_code.py", (MODEL, ChoiceParam("paper_vs_code_row", pvc.ROW_KEYS[0],
                                                                                 choices=pvc.ROW_KEYS))),
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
    Box("positional_encoding", "app_pages/positional_encoding.py", "text_input", "positional_encoding.sentence",
        TextParam("positional_encoding_text", "the cat sat on the mat", max_len=200), MAX_LEN - 1),
    Box("attention", "app_pages/attention.py", "text_input", "attention.text",
        TextParam("attention_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("decoding", "app_pages/decoding.py", "text_input", "decoding.text",
        TextParam("decoding_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("decoding_target", "app_pages/decoding.py", "text_input", "decoding.target",
        TextParam("decoding_target", "", max_len=200), MAX_LEN - 1, task="dates",
        context={"model": "dates", "decoding_view": "forcing", "decoding_text": "31 feb 2026"}),
    Box("feed_forward", "app_pages/feed_forward.py", "text_input", "feed_forward.text", TextParam("feed_forward_text", EXAMPLE, max_len=200),
        MAX_LEN),
    Box("residual_stream", "app_pages/residual_stream.py", "text_input", "residual_stream.text",
        TextParam("residual_stream_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("layer_norm", "app_pages/layer_norm.py", "text_area", "batch.text", BATCH_PARAM, MAX_LEN - 1, max_lines=8),
    Box("output_and_loss", "app_pages/output_and_loss.py", "text_input", "output_and_loss.text",
        TextParam("output_and_loss_text", EXAMPLE, max_len=200), MAX_LEN),
    Box("output_target", "app_pages/output_and_loss.py", "text_input", "output_and_loss.target",
        TextParam("output_and_loss_target", EXAMPLE, max_len=200), MAX_LEN - 1),  # the copy task's answer is its sentence
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
    for body in allowing_html + [h.proto.body for h in at.get("html") if h.proto.body != prefetch.script()]:
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
                                              f"{Path(settings.page).stem}.title", lang), where
        assert_shown_literally(at, value_id, where)


@pytest.mark.parametrize("lang", LANGS)
def test_a_nasty_link_value_waiting_for_the_cost_button_is_named_when_it_is_pressed(app, lang):
    """A link may carry ``?attention_cost_log=`` before anything is measured: the page reads it (and names a bad one)
    when the button shows the result."""
    for value_id, raw in NASTY.items():
        where = f"cost_button/{lang}/{value_id}"
        cost.forget_measurements()
        link = {"lang": lang, COST_LOG.name: raw}
        read = len(urlencode(link)) <= CLIENT_STATE_QUERY_STRING_MAX_LENGTH  # else Streamlit drops the whole link
        at = open_page(app, "app_pages/attention_cost.py", link)
        assert not at.toast, (where, texts(at.toast))  # nothing shown reads it yet
        at.button(key="attention_cost.measure").click()
        rerun(at, where)
        ok, parsed = accepts(COST_LOG, raw)
        assert at.toggle(key="attention_cost.log").value == (parsed if ok and read else COST_LOG.default), where
        assert query(at, COST_LOG.name) == COST_LOG.format(at.toggle(key="attention_cost.log").value), where
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
