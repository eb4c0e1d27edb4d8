"""The measured cost of attention: time of one encoder forward and attention memory against sequence length.

One figure, two panels stacked (they stay readable on a phone): time on top, memory below, one
line per path (the explicit one that returns the maps, the fused SDPA one), both axes logarithmic
by default, where a power law n^p is a straight line of slope p. A dashed guide ∝ n² runs through
the explicit path's longest point, so the eye can compare the measured slope with 2.
"""
from __future__ import annotations

import html
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.style import PALETTE

MEBIBYTE = 2 ** 20
COLOURS = {"explicit": PALETTE[1], "sdpa": PALETTE[0]}
GUIDE_COLOUR = "#9aa0ab"


def n_squared_guide(lengths: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """A curve ∝ n² over ``lengths`` that meets ``seconds`` at the longest length."""
    lengths, seconds = np.asarray(lengths, dtype=float), np.asarray(seconds, dtype=float)
    return seconds[-1] * (lengths / lengths[-1]) ** 2


def cost_figure(series: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], names: Mapping[str, str], *,
                log_axes: bool, titles: Sequence[str], x_title: str, time_title: str, memory_title: str,
                guide_name: str, time_hover: str, memory_hover: str) -> go.Figure:
    """``series``: path → (lengths, seconds, memory bytes), each (n,), sorted by length; a path whose
    memory is all NaN draws no memory line. ``names``: path → legend name (already translated).
    ``titles``: the two panels' titles. Memory is drawn in MiB. ``time_hover`` may use ``%{x}`` (tokens)
    and ``%{y}`` (seconds); ``memory_hover`` ``%{x}`` and ``%{y}`` (MiB)."""
    fig = make_subplots(rows=2, cols=1, subplot_titles=[html.escape(t) for t in titles], vertical_spacing=0.12)
    for path, (lengths, seconds, memory) in series.items():
        colour, name = COLOURS.get(path, PALETTE[2]), html.escape(names[path])
        fig.add_trace(go.Scatter(x=lengths, y=seconds, mode="lines+markers", name=name, legendgroup=path,
                                 line=dict(color=colour), hovertemplate=time_hover + "<extra></extra>"), row=1, col=1)
        memory = np.asarray(memory, dtype=float)
        if np.isfinite(memory).any():
            fig.add_trace(go.Scatter(x=lengths, y=memory / MEBIBYTE, mode="lines+markers", name=name,
                                     legendgroup=path, showlegend=False, line=dict(color=colour),
                                     hovertemplate=memory_hover + "<extra></extra>"), row=2, col=1)
    explicit = series.get("explicit")
    if explicit is not None and len(explicit[0]) >= 2:
        fig.add_trace(go.Scatter(x=explicit[0], y=n_squared_guide(explicit[0], explicit[1]), mode="lines",
                                 name=html.escape(guide_name), line=dict(color=GUIDE_COLOUR, dash="dash", width=1),
                                 hoverinfo="skip"), row=1, col=1)
    kind = "log" if log_axes else "linear"
    lengths = sorted({float(n) for lengths, _, _ in series.values() for n in lengths})
    ticks = dict(tickmode="array", tickvals=lengths, ticktext=[f"{n:g}" for n in lengths]) if log_axes else {}
    decades = dict(dtick=1) if log_axes else {}  # a label per power of ten, not on every minor tick
    fig.update_xaxes(type=kind, **ticks)
    fig.update_xaxes(title=x_title, row=2, col=1)
    fig.update_yaxes(type=kind, title=time_title, exponentformat="power", **decades, row=1, col=1)
    fig.update_yaxes(type=kind, title=memory_title, exponentformat="power", **decades, row=2, col=1)
    fig.update_layout(height=620, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.12, yanchor="top"))
    fig.update_annotations(font_size=13)
    return fig
