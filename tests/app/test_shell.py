"""The app shell under AppTest: every page, both languages, URL values good and bad, the tour."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_
from streamlit.testing.v1 import AppTest

from tests.app.apptest_helpers import clean, open_script, texts
from ui import models
from ui.i18n import LANGS, translate
from ui.tour import TOUR, by_url_path, neighbours, stop
from ui.url_state import BoolParam, ChoiceParam, FloatParam, IntParam, TextParam, read

ROOT = Path(__file__).resolve().parents[2]


def open_page(app, key: str, **kwargs) -> AppTest:
    """Open page ``key`` in a fresh session, as a deep link would where AppTest can do that.

    Before its first run AppTest finds a page by its file name, so a page whose URL path differs
    from its file name (``positional-encoding``) is reached by running the default page first
    and then switching, as a click in the sidebar would. The browser tests open every page by
    its real deep link.
    """
    s = stop(key)
    if s.is_default:
        return clean(app(**kwargs).run())
    return open_script(app, s.script, kwargs.get("query"), locale=kwargs.get("locale"),
                       home_first=Path(s.script).stem != s.url_path)


def titles(at: AppTest) -> list[str]:
    return [e.value for e in at.title]


def heading(key: str, lang: str) -> str:
    """The h1 of page ``key``: its title, except on home, which shows the app's name."""
    return translate("common.app_title" if key == "home" else f"{key}.title", lang)


def toasts(at: AppTest) -> list[str]:
    return texts(at.toast)


def page_links(at: AppTest) -> list[tuple[str, str, str]]:
    """``(label, url path, query string)`` of every page link on the page."""
    return [(p.proto.label, p.proto.page, p.proto.query_string) for p in at.get("page_link")]


# ------------------------------------------------------------------ every page, both languages


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("key", [s.key for s in TOUR])
def test_every_page_runs_in_both_languages(app, key, lang):
    at = open_page(app, key, query={"lang": lang})
    assert titles(at)[0] == heading(key, lang)
    assert at.query_params["lang"] in (lang, [lang])
    assert at.radio(key="lang").value == lang
    assert not toasts(at)


@pytest.mark.parametrize("key", [s.key for s in TOUR])
def test_every_page_runs_with_no_query_at_all(app, key):
    at = open_page(app, key)
    assert titles(at)[0] == heading(key, "en")


@pytest.mark.parametrize(
    ("locale", "expected"), [("zh-CN", "zh"), ("zh-Hant-TW", "zh"), ("en-GB", "en"), ("fr-FR", "en")]
)
def test_language_defaults_from_the_browser_locale(app, locale, expected):
    at = clean(app(locale=locale).run())
    assert at.radio(key="lang").value == expected
    assert titles(at)[0] == heading("home", expected)


def test_url_language_beats_browser_locale(app):
    at = clean(app(query={"lang": "en"}, locale="zh-CN").run())
    assert at.radio(key="lang").value == "en"


# ------------------------------------------------------------------ malformed URL values


@pytest.mark.parametrize("bad", ["fr", "", "ZH", "en<script>", "x" * 500])
@pytest.mark.parametrize("key", ["home", "attention"])
def test_bad_language_falls_back_with_a_notice(app, key, bad):
    at = open_page(app, key, query={"lang": bad}, locale="zh-CN")
    assert at.radio(key="lang").value == "zh"
    assert at.query_params["lang"] in ("zh", ["zh"])
    notices = toasts(at)
    assert len(notices) == 1 and "lang" in notices[0]


def test_bad_model_falls_back_with_a_notice(app):
    at = clean(app(query={"model": "no-such-model", "lang": "en"}).run())
    names = models.available_models()
    notices = toasts(at)
    assert len(notices) == 1 and "no-such-model" in notices[0].replace("\\", "")
    if names:
        assert at.selectbox(key="model").value == names[0]
        assert at.query_params["model"] in (names[0], [names[0]])
    else:
        assert "model" not in at.query_params


@pytest.mark.parametrize("name", models.shipped_models() or ["copy"])
def test_model_from_the_url(app, name):
    at = clean(app(query={"model": name}).run())
    if name in models.available_models():
        assert at.selectbox(key="model").value == name
        assert not toasts(at)
    else:  # no shipped checkpoint yet: a notice, not a crash
        assert len(toasts(at)) == 1


def test_unknown_query_keys_are_ignored(app):
    at = clean(app(query={"utm_source": "mail", "lang": "en"}).run())
    assert titles(at)[0] == heading("home", "en")


# ------------------------------------------------------------------ state across pages


def test_language_choice_survives_page_switches(app):
    at = clean(app(query={"lang": "en"}).run())
    clean(at.radio(key="lang").set_value("zh").run())
    assert titles(at)[0] == heading("home", "zh")
    assert at.query_params["lang"] in ("zh", ["zh"])
    for s in TOUR[1:]:
        clean(at.switch_page(s.script).run())
        assert titles(at)[0] == heading(s.key, "zh")
        assert at.radio(key="lang").value == "zh"


def test_switch_page_walks_the_whole_tour_with_next_links(app):
    at = clean(app(query={"lang": "zh"}).run())
    for s in TOUR:
        if not s.is_default:
            clean(at.switch_page(s.script).run())
        assert titles(at)[0] == heading(s.key, "zh")
        previous, following = neighbours(s.key)
        links = page_links(at)[-2:] if previous and following else page_links(at)[-1:]
        expected = [x for x in (previous, following) if x is not None]
        assert [path for _, path, _ in links] == [x.url_path for x in expected]
        assert all(query == "lang=zh" or query.startswith("lang=zh&") for _, _, query in links)
        if following is not None:
            assert links[-1][0] == translate("common.nav.next", "zh", title=translate(following.title_key, "zh"))


@pytest.mark.parametrize("lang", LANGS)
def test_home_lists_the_tour_in_order(app, lang):
    at = clean(app(query={"lang": lang}).run())
    (element,) = at.get("bidi_component")  # the diagram and the tour: one element
    markup = json.loads(element.proto.json)["html"]
    tour = markup[markup.index('<ol class="tp-tour">'):]
    assert re.findall(r'<a href="\./([^"]*)" data-page="([^"]+)">', tour) == [(s.url_path, s.key) for s in TOUR[1:]]
    for n, s in enumerate(TOUR[1:], start=1):
        assert f"{n}. {html.escape(translate(s.title_key, lang))}" in tour
        assert html.escape(translate(f"home.tour.{s.key}", lang)) in tour
    assert f"<h3>{html.escape(translate('home.diagram.heading', lang))}</h3>" in markup
    assert (ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8") in markup
    assert at.info[0].value.startswith(f"**{translate('home.prereq.heading', lang)}**")


# ------------------------------------------------------------------ the tour table


def test_tour_is_consistent_with_the_files():
    assert TOUR[0].key == "home" and TOUR[0].is_default
    assert [s.url_path for s in TOUR] == [
        "", "tokens", "masks", "positional-encoding", "attention", "decoding", "training",
    ]
    assert len({s.key for s in TOUR}) == len(TOUR)
    for s in TOUR:
        assert (ROOT / s.script).is_file(), s.script
        assert s.script.startswith("app_pages/")
        assert by_url_path(s.url_path) == s
    assert not (ROOT / "pages").exists(), "a pages/ folder puts Streamlit in legacy discovery mode"


def test_pages_do_not_import_torch():
    for path in (ROOT / "app_pages").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+torch\b", source, re.M), path.name


# ------------------------------------------------------------------ the architecture diagram

LINK = re.compile(r'<a href="\./([^"]*)" data-page="([^"]+)">')


@pytest.mark.parametrize("lang", LANGS)
def test_diagram_links_point_at_their_pages(lang):
    svg = (ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8")
    links = LINK.findall(svg)
    assert links
    for url_path, key in links:
        assert stop(key).url_path == url_path
    assert {key for _, key in links} == {s.key for s in TOUR[1:]}


def test_both_diagrams_have_the_same_links_and_labels():
    en, zh = ((ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8") for lang in LANGS)
    assert LINK.findall(en) == LINK.findall(zh)
    for label in ["Input Embedding", "Positional", "Multi-Head", "Self-Attention", "Add &amp; Norm",
                  "Feed Forward", "Masked Multi-Head", "Cross-Attention", "Encoder–Decoder Attention",
                  "Linear", "Softmax", "N×"]:
        assert label in en, label
    for label in ["输入嵌入", "位置编码", "多头自注意力", "残差相加与层归一化", "前馈网络", "带掩码的",
                  "交叉注意力", "编码器-解码器注意力", "线性层", "Softmax", "N×"]:
        assert label in zh, label


# ------------------------------------------------------------------ URL state: pure parsing


def test_params_parse_and_reject():
    assert IntParam("n", 2, lo=1, hi=8).parse("8") == 8
    for bad in ["9", "0", "2.5", "", "two", "0x3"]:
        assert read(IntParam("n", 2, lo=1, hi=8), {"n": bad}) == (2, bad)
    f = FloatParam("t", 1.0, lo=0.1, hi=2.0, step=0.1)
    assert f.parse("0.3") == pytest.approx(0.3) and f.parse("0.34") == pytest.approx(0.3)
    for bad in ["nan", "inf", "-1", "3", "1,5"]:
        assert read(f, {"t": bad}) == (1.0, bad)
    b = BoolParam("on", False)
    assert [b.parse(x) for x in ["1", "true", "YES", "off"]] == [True, True, True, False]
    assert read(b, {"on": "maybe"}) == (False, "maybe")
    c = ChoiceParam("layer", "enc", choices=["enc", "dec"])
    assert c.parse("dec") == "dec" and read(c, {"layer": "DEC"}) == ("enc", "DEC")
    with pytest.raises(ValueError):
        ChoiceParam("layer", "x", choices=["enc"])
    text = TextParam("s", "hello", max_len=5)
    assert text.parse("héllo") == "héllo"
    assert read(text, {"s": "toolong"}) == ("hello", "toolong")
    assert read(text, {"s": "a\x00b"}) == ("hello", "a\x00b")
    assert read(text, {}) == ("hello", None)


@settings(max_examples=200, deadline=None)
@given(st_.integers(-10, 10), st_.floats(-5, 5, allow_nan=False), st_.booleans(), st_.text(max_size=20))
def test_params_round_trip(i, x, flag, text):
    ip, fp = IntParam("i", 0, lo=-10, hi=10), FloatParam("x", 0.0, lo=-5, hi=5)
    assert ip.parse(ip.format(i)) == i
    assert fp.parse(fp.format(x)) == x
    assert BoolParam("b", False).parse(BoolParam("b", False).format(flag)) is flag
    tp = TextParam("t", "", max_len=20)
    if tp.accepts(text):
        assert tp.parse(tp.format(text)) == text


@given(st_.text(max_size=60))
def test_any_query_text_is_read_without_raising(raw):
    for param in (IntParam("p", 1, lo=0, hi=3), FloatParam("p", 0.5), BoolParam("p", True),
                  ChoiceParam("p", "a", choices=["a", "b"]), TextParam("p", "", max_len=10)):
        value, rejected = read(param, {"p": raw})
        assert param.accepts(value)
        assert rejected in (None, raw)


# ------------------------------------------------------------------ URL state: bound widgets

BOUND_SCRIPT = '''
import streamlit as st
from ui.url_state import IntParam, BoolParam, bind

HEADS = IntParam("heads", default=4, lo=1, hi=8)
SHOW = BoolParam("show", default=False)
st.slider("heads", 1, 8, key=bind(HEADS, key="demo.heads"))
st.checkbox("show", key=bind(SHOW, key="demo.show"))
'''


def bound_app(query: dict[str, str]) -> AppTest:
    at = AppTest.from_string(BOUND_SCRIPT, default_timeout=30)
    at.query_params.update(query)
    return at


def test_bound_widget_reads_the_url():
    at = clean(bound_app({"heads": "2", "show": "true"}).run())
    assert at.slider(key="demo.heads").value == 2
    assert at.checkbox(key="demo.show").value is True
    assert not toasts(at)


def test_bound_widget_writes_the_url_on_change():
    at = clean(bound_app({}).run())
    assert at.query_params["heads"] in ("4", ["4"])
    clean(at.slider(key="demo.heads").set_value(6).run())
    assert at.query_params["heads"] in ("6", ["6"])
    clean(at.checkbox(key="demo.show").check().run())
    assert at.query_params["show"] in ("true", ["true"])
    assert not toasts(at)


@pytest.mark.parametrize("bad", ["99", "-1", "four", "4.5", ""])
def test_bound_widget_rejects_bad_values_with_one_notice(bad):
    at = clean(bound_app({"heads": bad, "lang": "en"}).run())
    assert at.slider(key="demo.heads").value == 4
    assert at.query_params["heads"] in ("4", ["4"])
    assert len(toasts(at)) == 1
    clean(at.run())  # the bad value is gone from the URL: no second notice
    assert not toasts(at)


STREAMLIT_BOUND_SCRIPT = '''
import streamlit as st
from ui.url_state import SliderIntParam, bound_widget

STEP = SliderIntParam("step", default=1, lo=1, hi=8)
st.slider("step", 1, 8, value=STEP.default, key=bound_widget(STEP), bind="query-params")
'''


def streamlit_bound_app(query: dict[str, str]) -> AppTest:
    at = AppTest.from_string(STREAMLIT_BOUND_SCRIPT, default_timeout=30)
    at.query_params.update(query)
    return at


def test_streamlit_bound_widget_reads_the_url_and_leaves_out_the_default():
    at = clean(streamlit_bound_app({"step": "3"}).run())
    assert at.slider(key="step").value == 3 and at.query_params["step"] in ("3", ["3"])
    assert not toasts(at)
    fresh = clean(streamlit_bound_app({}).run())
    assert fresh.slider(key="step").value == 1 and "step" not in fresh.query_params


def test_streamlit_bound_widget_reads_a_number_as_streamlit_does():
    at = clean(streamlit_bound_app({"step": "2.5"}).run())  # Streamlit's slider takes 2: so does the page
    assert at.slider(key="step").value == 2 and at.query_params["step"] in ("2", ["2"])
    assert not toasts(at)


def test_streamlit_bound_widget_puts_back_a_value_the_url_lost():
    at = clean(streamlit_bound_app({"step": "4"}).run())
    del at.query_params["step"]  # e.g. a link too long for Streamlit, which then reads none of it
    clean(at.run())
    assert at.slider(key="step").value == 4 and at.query_params["step"] in ("4", ["4"])


@pytest.mark.parametrize("bad", ["99", "0", "three", "1e999", ""])
def test_streamlit_bound_widget_rejects_bad_values_with_one_notice(bad):
    at = clean(streamlit_bound_app({"step": bad, "lang": "en"}).run())
    assert at.slider(key="step").value == 1
    assert "step" not in at.query_params, "Streamlit drops the bad value; the default is left out"
    assert len(toasts(at)) == 1
    clean(at.run())
    assert not toasts(at)


def test_streamlit_bound_widget_treats_a_repeated_value_as_streamlit_does():
    """``?step=2&step=3``: Streamlit's slider reads neither and drops both, so the page must not show
    3 either (it would show a step its link has lost): one notice, the default, and a clean link."""
    at = clean(streamlit_bound_app({"step": ["2", "3"], "lang": "en"}).run())
    assert at.slider(key="step").value == 1 and "step" not in at.query_params
    assert len(toasts(at)) == 1 and "2, 3" in toasts(at)[0]
    clean(at.run())
    assert not toasts(at)


def test_streamlit_bound_widget_keeps_its_value_over_a_repeated_one():
    at = clean(streamlit_bound_app({"step": "4"}).run())
    at.query_params["step"] = ["6", "7"]  # the visitor edits the link into two values
    clean(at.run())
    assert at.slider(key="step").value == 4, "the value shown before is kept, as for any bad value"
    assert at.query_params["step"] in ("4", ["4"]), "and put back in the link"
    assert len(toasts(at)) == 1


def test_streamlit_bound_widget_writes_a_value_set_in_code():
    at = clean(streamlit_bound_app({}).run())
    at.session_state["step"] = 5  # as a callback (decoding's next button) does
    clean(at.run())
    assert at.slider(key="step").value == 5 and at.query_params["step"] in ("5", ["5"])


# ------------------------------------------------------------------ with checkpoints on disk


@pytest.fixture
def tiny_checkpoints(tmp_path, monkeypatch):
    """Two small untrained checkpoints (``copy``, ``reverse``) in a temporary checkpoint folder."""
    checkpoint = pytest.importorskip("model.checkpoint")
    from model.config import TransformerConfig
    from model.tokenizer import CharTokenizer
    from model.transformer import Transformer

    tokenizer = CharTokenizer("abc")
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                               d_model=8, n_heads=2, n_layers=1, d_ff=16, max_len=16, pad_id=tokenizer.pad_id)
    for task in ("copy", "reverse"):
        checkpoint.save_checkpoint(tmp_path / f"{task}.pt", Transformer(config), tokenizer, {"name": task})
    (tmp_path / "sort.pt").write_bytes(b"not a checkpoint")
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    return tmp_path


def test_model_choice_from_url_and_sidebar(app, tiny_checkpoints):
    assert models.available_models() == ["copy", "reverse", "sort"]
    at = clean(app(query={"model": "reverse", "lang": "en"}).run())
    assert at.selectbox(key="model").value == "reverse" and not toasts(at)
    clean(at.selectbox(key="model").set_value("copy").run())
    assert at.query_params["model"] in ("copy", ["copy"])
    clean(at.switch_page("app_pages/attention.py").run())
    assert at.selectbox(key="model").value == "copy"
    assert at.query_params["model"] in ("copy", ["copy"])


def test_models_load_once_and_bad_files_are_reported(tiny_checkpoints):
    first = models.get_model("copy")
    assert models.get_model("copy") is first
    assert not first.model.training
    with pytest.raises(models.ModelUnavailable) as broken:
        models.get_model("sort")
    assert broken.value.kind == "broken"
    with pytest.raises(models.ModelUnavailable) as unknown:
        models.get_model("dates")
    assert unknown.value.kind == "unknown"


def test_warmup_loads_the_shipped_models(tiny_checkpoints):
    from ui.warmup import WarmUp, run_warmup

    report = WarmUp()
    run_warmup(report)
    assert report.wait(0) and report.loaded == ["copy", "reverse"]
    assert set(report.skipped) == {"sort"}
    assert report.optimizer_seconds is not None
