"""Plotly figures that are built once and then only read, made cheap to draw on every rerun.

``st.plotly_chart`` does two things with a figure on every script run, and both are paid again for
a figure that has not changed:

* ``figure.to_dict()``: plotly answers with a deep copy of the whole figure, template included
  (a few milliseconds per chart). A frozen figure computes that dict once (a :class:`FrozenSpec`)
  and hands back the same one afterwards.
* ``plotly.io.to_json(that_dict, validate=False)``: 0.1–0.6 ms per chart with orjson installed and
  2–3x that without it (plotly's pure-``json`` engine, which a plain ``pip install -r
  requirements.txt`` gets). A :class:`FrozenSpec` keeps the text plotly wrote for it the first
  time, and :func:`install_json_cache` (run when this module is imported) makes ``plotly.io.to_json``
  hand that text back for it. Every other figure, dict or set of arguments goes to plotly as before.
"""
from __future__ import annotations

import functools

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio


class FrozenSpec(dict):
    """The plotly dict a frozen figure draws as; ``json`` is plotly's text for it once written."""

    __slots__ = ("json",)


class FrozenFigure(go.Figure):
    """A ``go.Figure`` whose ``to_dict()`` is computed on first use and then reused.

    Only for figures that are finished: a change made after the first ``to_dict()`` would not show.
    """

    def to_dict(self) -> FrozenSpec:
        frozen = self.__dict__.get("_frozen_dict")
        if frozen is None:
            frozen = FrozenSpec(_plain_object_arrays(super().to_dict()))
            self.__dict__["_frozen_dict"] = frozen
        return frozen


def _plain_object_arrays(value):
    """``value`` with every numpy object array (e.g. per-cell hover text) turned into nested lists.

    Plotly validates a numpy ``customdata`` far faster than nested lists, but serialises it far
    slower; a frozen dict is serialised once, so it keeps the lists.
    """
    if isinstance(value, dict):
        return {key: _plain_object_arrays(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_object_arrays(item) for item in value]
    if isinstance(value, np.ndarray) and value.dtype == object:
        return value.tolist()
    return value


def freeze(fig: go.Figure) -> go.Figure:
    """Turn the finished ``fig`` into a :class:`FrozenFigure` (in place, no copy) and return it."""
    fig.__class__ = FrozenFigure
    fig.to_dict()
    return fig


def frozen_from_dict(spec: dict) -> FrozenFigure:
    """A frozen figure that draws as the plotly figure dict ``spec``, built without validating it
    (e.g. :func:`ui.figure_grid.combine`'s cells). For drawing only (``st.plotly_chart`` reads
    ``to_dict()``); its plotly attributes (``.data``, ``.layout``) are empty.
    """
    figure = FrozenFigure()
    figure.__dict__["_frozen_dict"] = spec if isinstance(spec, FrozenSpec) else FrozenSpec(spec)
    return figure


def install_json_cache() -> None:
    """Make ``plotly.io.to_json`` reuse a :class:`FrozenSpec`'s text (idempotent).

    Only the call ``st.plotly_chart`` makes is served from the cache: a ``FrozenSpec`` with
    ``validate=False`` and every other argument at plotly's default. The first such call writes
    the text with plotly's own ``to_json`` (so it is exactly what plotly would send) and keeps it.
    """
    if getattr(pio.to_json, "_frozen_json_cache", False):
        return
    plotly_to_json = pio.to_json

    @functools.wraps(plotly_to_json)
    def to_json(fig, validate=True, pretty=False, remove_uids=True, engine=None):
        if type(fig) is not FrozenSpec or validate or pretty or not remove_uids or engine is not None:
            return plotly_to_json(fig, validate=validate, pretty=pretty, remove_uids=remove_uids, engine=engine)
        try:
            return fig.json
        except AttributeError:
            fig.json = plotly_to_json(fig, validate=False)
            return fig.json

    to_json._frozen_json_cache = True
    pio.to_json = to_json


install_json_cache()
