"""Cached, frozen figures: built once for the same builder and arguments, their dict and JSON text written once."""
from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from streamlit.testing.v1 import AppTest

from ui.figure_cache import cached_figure, figure_digest
from ui.frozen_figure import FrozenFigure, FrozenSpec, freeze, frozen_from_dict, install_json_cache

BUILDS: list[tuple] = []


def bars(values, *, title: str = "") -> go.Figure:
    BUILDS.append((tuple(np.asarray(values).tolist()), title))
    return go.Figure(go.Bar(y=values), layout=dict(title=title))


def lines(values, *, title: str = "") -> go.Figure:
    return go.Figure(go.Scatter(y=values), layout=dict(title=title))


def test_freeze_keeps_the_figure_and_computes_its_dict_once():
    fig = go.Figure(go.Bar(y=[1, 2]))
    frozen = freeze(fig)
    assert frozen is fig and isinstance(fig, FrozenFigure) and isinstance(fig, go.Figure)
    assert fig.to_dict() is fig.to_dict()
    assert fig.to_dict()["data"][0]["type"] == "bar"


def test_same_arguments_same_figure_other_arguments_other_figure():
    BUILDS.clear()
    values = np.array([1.0, 2.0, 3.0])
    first = cached_figure(bars, values, title="a")
    assert cached_figure(bars, values.copy(), title="a") is first
    assert len(BUILDS) == 1
    assert cached_figure(bars, values, title="b") is not first
    assert cached_figure(bars, values + 1, title="a") is not first
    assert isinstance(first, FrozenFigure)


def test_the_digest_tells_builders_and_arguments_apart():
    values = (1, 2)
    assert figure_digest(bars, (values,), {}) == figure_digest(bars, (values,), {})
    assert figure_digest(bars, (values,), {}) != figure_digest(lines, (values,), {})
    assert figure_digest(bars, (values,), {"title": "x"}) != figure_digest(bars, (values,), {"title": "y"})
    assert figure_digest(bars, (np.zeros(2, dtype=np.float32),), {}) != figure_digest(bars, (np.zeros(2),), {})


def test_object_arrays_become_lists_in_the_frozen_dict():
    custom = np.array([["a", 1], ["b", 2]], dtype=object)
    fig = freeze(go.Figure(go.Scatter(x=[0, 1], y=[0, 1], customdata=custom)))
    assert fig.to_dict()["data"][0]["customdata"] == [["a", 1], ["b", 2]]


def test_a_figure_frozen_from_a_dict_draws_that_dict():
    spec = {"data": [{"type": "bar", "y": [1, 2]}], "layout": {"shapes": [dict(type="rect", x0=0, x1=1)]}}
    fig = frozen_from_dict(spec)
    assert isinstance(fig, FrozenFigure) and fig.to_dict() == spec
    assert isinstance(fig.to_dict(), FrozenSpec)
    assert frozen_from_dict(fig.to_dict()).to_dict() is fig.to_dict()  # a FrozenSpec is kept as it is


def _plotly_text(spec: dict) -> str:
    """What plotly itself writes for ``spec``, the way ``st.plotly_chart`` asks (bypassing the cache)."""
    return pio.to_json.__wrapped__(dict(spec), validate=False)


def test_plotly_chart_sends_plotly_s_own_text_for_a_frozen_figure_and_writes_it_once():
    fig = freeze(go.Figure(go.Heatmap(z=np.arange(12.0).reshape(3, 4), text=[["<s>", "a", "b", "c"]] * 3)))
    spec = fig.to_dict()
    first = pio.to_json(spec, validate=False)  # the call st.plotly_chart makes
    assert first == _plotly_text(spec)
    assert pio.to_json(spec, validate=False) is first  # kept, not written again
    assert spec.json is first


def test_other_figures_and_other_arguments_go_to_plotly_unchanged():
    fig = freeze(go.Figure(go.Bar(y=[1, 2])))
    spec = fig.to_dict()
    pio.to_json(spec, validate=False)
    pretty = pio.to_json(spec, validate=False, pretty=True)
    assert "\n" in pretty and pretty != spec.json  # pretty is asked for: plotly writes it
    plain = {"data": [{"type": "bar", "y": [3, 4]}], "layout": {}}
    assert pio.to_json(plain, validate=False) == _plotly_text(plain)
    assert pio.to_json(go.Figure(go.Bar(y=[5]))).startswith("{")  # a live figure is validated and written anew


def test_installing_the_cache_twice_wraps_plotly_once():
    before = pio.to_json
    install_json_cache()
    assert pio.to_json is before and not hasattr(pio.to_json.__wrapped__, "_frozen_json_cache")


def test_a_frozen_chart_in_a_script_run_sends_the_same_spec_as_plotly_would():
    def script():
        import numpy as np
        import plotly.graph_objects as go
        import streamlit as st

        from ui.frozen_figure import freeze

        fig = freeze(go.Figure(go.Heatmap(z=np.eye(3), x=["<b>", "a", "a"])))
        st.plotly_chart(fig, key="one")
        st.plotly_chart(fig, key="two")  # the second draw is served from the kept text

    at = AppTest.from_function(script).run()
    assert not at.exception
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert specs[0] == specs[1]
    same = freeze(go.Figure(go.Heatmap(z=np.eye(3), x=["<b>", "a", "a"])))
    assert specs[0] == json.loads(_plotly_text(same.to_dict()))
    assert specs[0]["data"][0]["x"] == ["<b>", "a", "a"]


def test_the_cache_keeps_the_most_recently_used_figures(monkeypatch):
    import ui.figure_cache as fc

    monkeypatch.setattr(fc, "CACHE_ENTRIES", 2)
    fc.clear()
    BUILDS.clear()
    a = cached_figure(bars, (1,), title="lru")
    cached_figure(bars, (2,), title="lru")
    assert cached_figure(bars, (1,), title="lru") is a  # a hit, and now the most recent
    cached_figure(bars, (3,), title="lru")  # evicts (2,), the least recently used
    assert cached_figure(bars, (1,), title="lru") is a
    cached_figure(bars, (2,), title="lru")
    assert [b[0] for b in BUILDS] == [(1,), (2,), (3,), (2,)]


def test_a_cached_figure_expires_after_its_time(monkeypatch):
    import ui.figure_cache as fc

    fc.clear()
    first = cached_figure(bars, (7,), title="ttl")
    monkeypatch.setattr(fc, "CACHE_TTL_S", -1.0)
    assert cached_figure(bars, (7,), title="ttl") is not first
