"""The feed-forward page's pictures, from numpy arrays and already-translated labels.

Rows are positions (tokens, top to bottom); hidden units and dimensions run along x. Values on a
diverging scale are centred on 0 (red positive, blue negative), so the zeros a ReLU leaves are white.
"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.heatmap import heatmap
from figures.labels import axis_labels
from figures.style import DIVERGING, PALETTE, figure

MARGIN = dict(l=10, r=10, t=40, b=10)


def _bound(*arrays: np.ndarray) -> float:
    """The largest |value| of ``arrays`` (1 when they are empty or all zero): a symmetric colour range."""
    finite = [np.abs(a[np.isfinite(a)]).max() for a in arrays if np.isfinite(a).any()]
    return float(max(finite)) if finite and max(finite) > 0 else 1.0


def _rows_height(n_rows: int, panels: int = 1) -> int:
    """Pixels for ``panels`` heatmaps of ``n_rows`` tokens each, sized to the sentence."""
    return max(260, panels * (18 * n_rows + 60) + 60)


def activations_figure(pre: np.ndarray, post: np.ndarray, tokens: Sequence[str], *, titles: Sequence[str],
                       x_title: str, hover: str) -> go.Figure:
    """The hidden activations (T, hidden) before (top) and after (bottom) the non-linearity, one colour scale.

    ``hover`` may use ``%{y}`` (the token), ``%{x}`` (the unit) and ``%{z}``.
    """
    pre, post = np.asarray(pre, np.float32), np.asarray(post, np.float32)
    bound = _bound(pre, post)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=list(titles))
    for row, z in enumerate((pre, post), start=1):
        fig.add_trace(go.Heatmap(z=z, coloraxis="coloraxis", hovertemplate=hover + "<extra></extra>"), row=row, col=1)
        fig.update_yaxes(**axis_labels(tokens), autorange="reversed", row=row, col=1)
    fig.update_xaxes(title=x_title, row=2, col=1)
    fig.update_layout(coloraxis=dict(colorscale=DIVERGING, cmid=0.0, cmin=-bound, cmax=bound,
                                     colorbar=dict(thickness=12)),
                      height=_rows_height(len(tokens), 2), margin=MARGIN)
    return fig


def off_share_figure(share: np.ndarray, tokens: Sequence[str], *, x_title: str, hover: str) -> go.Figure:
    """One bar per token: the share (0..1) of its hidden units that the non-linearity switched off."""
    share = np.asarray(share, float)
    bar = go.Bar(x=np.round(share, 4), y=np.arange(len(tokens)), orientation="h", marker_color=PALETTE[0],
                 text=[f"{v:.0%}" for v in share], textposition="outside", cliponaxis=False,
                 hovertemplate=hover + "<extra></extra>")
    fig = figure(bar, height=max(200, 22 * len(tokens) + 80))
    fig.update_xaxes(title=x_title, range=[0, 1.15], tickformat=".0%")
    fig.update_yaxes(**axis_labels(tokens), autorange="reversed")
    return fig


def output_figure(output: np.ndarray, tokens: Sequence[str], *, title: str, x_title: str, hover: str) -> go.Figure:
    """FFN(x) (T, d_model): what the block writes for each position, diverging around 0."""
    bound = _bound(np.asarray(output, float))
    return heatmap(output, y_tokens=tokens, title=title, x_title=x_title, zmin=-bound, zmax=bound,
                   colorscale=DIVERGING, hover=hover, height=_rows_height(len(tokens)))


def position_wise_figure(tokens: Sequence[str], ffn_change: np.ndarray, attention_change: np.ndarray, *,
                         names: Sequence[str], changed: int, x_title: str, y_title: str, hover: str) -> go.Figure:
    """Per position, how much the FFN's output (top) and the self-attention's output (bottom) moved.

    Each panel has its own scale, so attention's smaller changes at the other positions stay visible
    next to the FFN's exact zeros. The position whose vector was replaced (``changed``) is outlined.
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.16,
                        subplot_titles=[html.escape(name) for name in names])
    for row, (values, colour) in enumerate(zip((ffn_change, attention_change), PALETTE[2:4]), start=1):
        fig.add_trace(go.Bar(x=np.arange(len(tokens)), y=np.asarray(values, np.float32), name=html.escape(names[row - 1]),
                             marker_color=colour, showlegend=False,
                             marker_line=dict(width=[2 if i == changed else 0 for i in range(len(tokens))],
                                              color="#31333f"),
                             hovertemplate=hover + "<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title=y_title if row == 1 else "", rangemode="tozero", row=row, col=1)
        fig.update_xaxes(**axis_labels(tokens), row=row, col=1)
    fig.update_xaxes(title=x_title, row=2, col=1)
    fig.update_layout(height=380, margin=MARGIN)
    return fig


def parameter_figure(labels: Sequence[str], ffn: Sequence[float], attention: Sequence[float],
                     norm: Sequence[float], *, names: Sequence[str], x_title: str) -> go.Figure:
    """One horizontal bar per layer kind, split into the shares (0..1) of the FFN, the attention(s) and the norms."""
    y = [html.escape(label) for label in labels]
    bars = [go.Bar(x=np.asarray(values, float), y=y, orientation="h", name=html.escape(name), marker_color=colour,
                   text=[f"{v:.0%}" if v >= 0.05 else "" for v in values], textposition="inside",
                   hovertemplate="%{y}: %{x:.1%}<extra>" + html.escape(name) + "</extra>")
            for name, values, colour in zip(names, (ffn, attention, norm), (PALETTE[2], PALETTE[0], PALETTE[5]))]
    fig = figure(*bars, barmode="stack", height=max(200, 44 * len(labels) + 90),
                 legend=dict(orientation="h", y=1.2))
    fig.update_layout(margin=dict(l=10, r=10, t=30, b=10))
    fig.update_xaxes(title=x_title, range=[0, 1], tickformat=".0%")
    fig.update_yaxes(autorange="reversed")
    return fig
