"""The measured cost of attention: time of one encoder forward and attention memory against sequence length.

One figure, two panels stacked (they stay readable on a phone): time on top, memory below, one
line per path (the explicit one that returns the maps, the fused SDPA one), both axes logarithmic
by default, where a power law n^p is a straight line of slope p. A dashed guide ∝ n² runs through
the explicit path's longest point, so the eye can compare the measured slope with 2. The same figure
draws full against latent attention, with a guide ∝ n beside the one ∝ n².

Latent attention's maps (:func:`latent_maps_figure`): four heatmaps on one colour scale.
"""
from __future__ import annotations

import html
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.labels import axis_labels, token_label
from figures.style import PALETTE, SEQUENTIAL

MEBIBYTE = 2 ** 20
COLOURS = {"explicit": PALETTE[1], "sdpa": PALETTE[0], "full": PALETTE[1], "latent": PALETTE[2]}
GUIDE_COLOUR = "#9aa0ab"


def n_squared_guide(lengths: np.ndarray, seconds: np.ndarray, power: int = 2) -> np.ndarray:
    """A curve ∝ nᵖ (p = ``power``) over ``lengths`` that meets ``seconds`` at the longest length."""
    lengths, seconds = np.asarray(lengths, dtype=float), np.asarray(seconds, dtype=float)
    return seconds[-1] * (lengths / lengths[-1]) ** power


def cost_figure(series: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], names: Mapping[str, str], *,
                log_axes: bool, titles: Sequence[str], x_title: str, time_title: str, memory_title: str,
                guide_name: str, time_hover: str, memory_hover: str, guide_path: str = "explicit",
                linear_guide: tuple[str, str] | None = None) -> go.Figure:
    """``series``: path → (lengths, seconds, memory bytes), each (n,), sorted by length; a path whose
    memory is all NaN draws no memory line. ``names``: path → legend name (already translated).
    ``titles``: the two panels' titles. Memory is drawn in MiB. ``time_hover`` may use ``%{x}`` (tokens)
    and ``%{y}`` (seconds); ``memory_hover`` ``%{x}`` and ``%{y}`` (MiB). The ∝ n² guide (``guide_name``)
    runs through ``guide_path``'s longest point; ``linear_guide`` = (path, name) adds one ∝ n through that
    path's."""
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
    guides = [(guide_path, guide_name, 2, "dash")] + ([(*linear_guide, 1, "dot")] if linear_guide else [])
    for path, name, power, dash in guides:
        along = series.get(path)
        if along is not None and len(along[0]) >= 2:
            fig.add_trace(go.Scatter(x=along[0], y=n_squared_guide(along[0], along[1], power), mode="lines",
                                     name=html.escape(name), line=dict(color=GUIDE_COLOUR, dash=dash, width=1),
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


LATENT_TICKS_MAX = 24  # tokens named on the maps' axes up to this many (beyond, the hover names them)


def latent_maps_figure(read: np.ndarray, write: np.ndarray, implied: np.ndarray, full: np.ndarray,
                       tokens: Sequence[str], latents: Sequence[str], *, titles: Sequence[str], hover: str,
                       narrow: bool) -> go.Figure:
    """Four attention maps: the latents reading the tokens (k × n), the tokens reading the latents (n × k),
    their product (n × n) and the head's real map (n × n). The two upper maps each run from 0 to their own
    largest weight (a row over k latents holds far larger weights than one over n tokens); the two lower
    ones share one scale with a colour bar, so that they can be compared cell by cell.
    Rows are the readers, columns what they read. Two by two on a wide screen, one under another on a phone.
    ``titles``: the four titles, in that order; ``hover`` may use ``%{y}`` (reader), ``%{x}`` (read) and ``%{z}``."""
    maps = [(read, latents, tokens), (write, tokens, latents), (implied, tokens, tokens), (full, tokens, tokens)]
    rows, cols = (4, 1) if narrow else (2, 2)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[html.escape(t) for t in titles],
                        vertical_spacing=0.08 if narrow else 0.14, horizontal_spacing=0.12)
    top = max(1e-6, float(np.max(implied)), float(np.max(full)))
    named = len(tokens) <= LATENT_TICKS_MAX
    for i, (z, y_labels, x_labels) in enumerate(maps):
        row, col = (i + 1, 1) if narrow else (i // 2 + 1, i % 2 + 1)
        z = np.asarray(z, dtype=np.float32)
        custom = [[[token_label(y_labels[r]), token_label(x_labels[c])] for c in range(z.shape[1])]
                  for r in range(z.shape[0])]
        scale = (dict(coloraxis="coloraxis") if i >= 2 else
                 dict(colorscale=SEQUENTIAL, zmin=0.0, zmax=max(1e-6, float(z.max())), showscale=False))
        fig.add_trace(go.Heatmap(z=z, customdata=custom, **scale,
                                 hovertemplate=hover.replace("%{y}", "%{customdata[0]}")
                                 .replace("%{x}", "%{customdata[1]}") + "<extra></extra>"), row=row, col=col)
        fig.update_xaxes(**(axis_labels(x_labels) if named else {}), showticklabels=named, tickfont=dict(size=9),
                         row=row, col=col)
        fig.update_yaxes(**(axis_labels(y_labels) if named else {}), showticklabels=named, tickfont=dict(size=9),
                         autorange="reversed", row=row, col=col)
    colorbar = (dict(thickness=10, orientation="h", x=0.5, xanchor="center", y=-0.04, yanchor="top", len=0.9)
                if narrow else dict(thickness=12))
    fig.update_layout(coloraxis=dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=round(top, 4), colorbar=colorbar),
                      height=1150 if narrow else 720, margin=dict(l=10, r=10, t=40, b=50 if narrow else 10))
    fig.update_annotations(font_size=13)
    return fig
