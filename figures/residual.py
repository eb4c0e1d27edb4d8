"""The residual-stream page's pictures, from numpy arrays and already-translated labels.

Columns are sublayer connections in the order the model runs them; rows are tokens (top to bottom).
"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.labels import axis_labels
from figures.style import PALETTE, SEQUENTIAL

MARGIN = dict(l=10, r=10, t=40, b=10)
TURN_SCALE = "RdYlGn"  # cos 1 (no turn) green, 0 (a right angle) yellow, −1 (turned round) red


def stream_figure(x_norm: np.ndarray, update_norm: np.ndarray, turn: np.ndarray, tokens: Sequence[str],
                  columns: Sequence[str], *, titles: Sequence[str], hovers: Sequence[str]) -> go.Figure:
    """Three heatmaps (T, n) stacked: ‖x‖ entering, ‖update‖ (one colour scale for both sizes) and cos(x, x + update).

    ``columns``: the n sublayer connections' names; ``hovers``: one template per panel, with ``%{y}``
    (the token), ``%{x}`` (the connection) and ``%{z}``.
    """
    sizes = [np.asarray(a, np.float32) for a in (x_norm, update_norm)]
    top = max(float(np.nanmax(a)) if a.size else 1.0 for a in sizes) or 1.0
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.08, subplot_titles=list(titles))
    ticks = dict(tickmode="array", tickvals=list(range(len(columns))), ticktext=[html.escape(c) for c in columns])
    for row, (z, hover) in enumerate(zip(sizes, hovers), start=1):
        fig.add_trace(go.Heatmap(z=z, zmin=0.0, zmax=top, colorscale=SEQUENTIAL, hovertemplate=hover + "<extra></extra>",
                                 colorbar=dict(thickness=12, len=0.6, y=0.68)), row=row, col=1)
    fig.add_trace(go.Heatmap(z=np.asarray(turn, np.float32), zmin=-1.0, zmax=1.0, colorscale=TURN_SCALE,
                             hovertemplate=hovers[2] + "<extra></extra>",
                             colorbar=dict(thickness=12, len=0.3, y=0.14)), row=3, col=1)
    for row in (1, 2, 3):
        fig.update_yaxes(**axis_labels(tokens), autorange="reversed", row=row, col=1)
        fig.update_xaxes(**ticks, row=row, col=1)
    fig.update_traces(showscale=False, selector=dict(type="heatmap"), row=2, col=1)
    n = len(tokens)
    fig.update_layout(height=max(420, 3 * (16 * n + 50) + 90), margin=MARGIN)
    return fig


def token_path_figure(columns: Sequence[str], x_norm: np.ndarray, update_norm: np.ndarray, turn: np.ndarray, *,
                      names: Sequence[str], titles: Sequence[str], size_title: str, cos_title: str) -> go.Figure:
    """One token through its stack: ‖x‖ and ‖update‖ per connection (top), cos(x, x + update) (bottom)."""
    xs = [html.escape(c) for c in columns]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14, row_heights=[0.6, 0.4],
                        subplot_titles=list(titles))
    for values, name, colour in zip((x_norm, update_norm), names[:2], PALETTE):
        fig.add_trace(go.Scatter(x=xs, y=np.round(np.asarray(values, float), 4), mode="lines+markers",
                                 name=html.escape(name), line=dict(color=colour),
                                 hovertemplate="%{x}: %{y:.2f}<extra>" + html.escape(name) + "</extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=xs, y=np.round(np.asarray(turn, float), 4), mode="lines+markers", name=html.escape(names[2]),
                             line=dict(color=PALETTE[2]), hovertemplate="%{x}: %{y:.3f}<extra></extra>"), row=2, col=1)
    fig.update_yaxes(title=size_title, rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title=cos_title, range=[-1.05, 1.05], row=2, col=1)
    fig.update_layout(height=420, margin=MARGIN, legend=dict(orientation="h", y=-0.12))
    return fig


def dropout_figure(update: np.ndarray, train: np.ndarray, kept: np.ndarray, *, names: Sequence[str], title: str,
                   x_title: str, y_title: str, dropped_name: str) -> go.Figure:
    """One update's numbers, eval mode (grey) beside train mode (colour: zeros where dropped, the rest
    rescaled by 1/(1 − p)), with a cross on each dropped dimension. ``names``: (eval, train)."""
    dims = np.arange(len(update))
    fig = go.Figure()
    fig.add_trace(go.Bar(x=dims, y=update, name=names[0], marker_color="#b0b0b0",
                         hovertemplate="%{x}: %{y:.3f}<extra>" + html.escape(names[0]) + "</extra>"))
    fig.add_trace(go.Bar(x=dims, y=train, name=names[1], marker_color=PALETTE[0],
                         hovertemplate="%{x}: %{y:.3f}<extra>" + html.escape(names[1]) + "</extra>"))
    gone = dims[kept == 0]
    fig.add_trace(go.Scatter(x=gone, y=np.zeros(len(gone)), mode="markers", name=dropped_name,
                             marker=dict(symbol="x", size=9, color="#222"), hoverinfo="skip"))
    fig.update_layout(title=title, barmode="group", bargap=0.15, margin=MARGIN, height=380,
                      legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
                      xaxis=dict(title=x_title), yaxis=dict(title=y_title, zeroline=True))
    return fig
