"""Widgets mirrored in the URL: parsing and checking values (pure), and bind() in a tiny script."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_
from streamlit.testing.v1 import AppTest

from tests.app.apptest_helpers import clean, texts
from ui.url_state import BoolParam, ChoiceParam, FloatParam, IntParam, TextParam, read


def toasts(at: AppTest) -> list[str]:
    return texts(at.toast)


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


# ------------------------------------------------------------------ URL state: values that follow a default

FOLLOW_SCRIPT = '''
import streamlit as st
from ui.url_state import ChoiceParam, TextParam, bind, pick

example = st.session_state.get("demo.example", "apple")
st.text_input("text", key=bind(TextParam("feed_forward_text", example), key="demo.text", follows="demo.text"))
default = st.session_state.get("demo.default", "a")
st.selectbox("model", ["a", "b", "c"], on_change=pick, args=("demo.model",),
             key=bind(ChoiceParam("model", default, choices=("a", "b", "c")), key="demo.model", follows="demo.model"))
'''


def follow_app(query: dict[str, str]) -> AppTest:
    at = AppTest.from_string(FOLLOW_SCRIPT, default_timeout=30)
    at.query_params.update(query)
    return at


def shown(at: AppTest) -> tuple[str, str]:
    return at.text_input(key="demo.text").value, at.selectbox(key="demo.model").value


def test_a_value_follows_its_default_until_the_visitor_picks_one():
    at = clean(follow_app({}).run())
    assert shown(at) == ("apple", "a")
    at.session_state["demo.example"], at.session_state["demo.default"] = "pear", "b"  # another model
    clean(at.run())
    assert shown(at) == ("pear", "b")
    clean(at.text_input(key="demo.text").input("my own").run())
    clean(at.selectbox(key="demo.model").set_value("c").run())
    at.session_state["demo.example"], at.session_state["demo.default"] = "plum", "a"
    clean(at.run())
    assert shown(at) == ("my own", "c")  # picked: the defaults no longer move them
    clean(at.text_input(key="demo.text").input("plum").run())  # typed text equal to the default follows it again
    at.session_state["demo.example"] = "fig"
    clean(at.run())
    assert shown(at) == ("fig", "c")


def test_a_link_keeps_the_choice_it_names_and_text_other_than_the_default():
    at = clean(follow_app({"model": "c", "feed_forward_text": "linked"}).run())
    assert shown(at) == ("linked", "c")
    at.session_state["demo.example"], at.session_state["demo.default"] = "pear", "b"
    clean(at.run())
    assert shown(at) == ("linked", "c")


def test_a_link_with_an_old_name_opens_the_same_value_under_the_new_one():
    at = clean(follow_app({"ff_text": "old link"}).run())
    assert shown(at)[0] == "old link"
    assert at.query_params["feed_forward_text"] in ("old link", ["old link"])
    assert "ff_text" not in at.query_params
