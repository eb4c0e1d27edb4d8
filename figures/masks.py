"""The masks page's pictures: a self-attention map with what its mask hid and let through, and one
query row from scores to weights as three bar charts. (The mask matrices themselves are
:func:`figures.heatmap.bool_matrix`.)

Tokens are plotted at integer positions (:func:`figures.labels.axis_labels`); the marks on a map's
cells are an outline of their region (:func:`figures.heatmap.cell_marks`), however many cells they mark.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.heatmap import cell_marks, heatmap
from figures.labels import axis_labels, token_label
from figures.style import MASKED_COLOR, PALETTE, figure

LEAK_COLOR = PALETTE[3]  # orange: attention the full mask would have hidden
HIDDEN_BAR_COLOR = "#b8bcc6"  # a score the mask replaces by −∞
FEW_LABELS = 8  # up to this many hidden keys, each ✕ says "−∞"; beyond, the labels would overlap


def map_height(n_tokens: int) -> int:
    """Pixels for an attention map of ``n_tokens`` a side: sized to the sentence, within limits."""
    return max(280, min(560, 22 * n_tokens + 140))


def attention_map(weights: np.ndarray, mask: np.ndarray, leaks: np.ndarray, tokens: Sequence[str], *,
                  title: str, x_title: str, y_title: str) -> go.Figure:
    """One self-attention map (weights (T, T), rows = queries): the cells the used ``mask`` hid
    greyed out (they are exactly 0), an orange outline around the ``leaks`` (cells the full mask
    would hide but this pass let through; their colour stays visible). mask, leaks: (T, T) bool."""
    fig = heatmap(weights, x_tokens=tokens, y_tokens=tokens, title=title, x_title=x_title, y_title=y_title,
                  masked=~np.asarray(mask, bool), height=map_height(len(tokens)))
    if leaks.any():
        fig.add_traces(cell_marks(np.asarray(leaks, bool), LEAK_COLOR))
    return fig


def _bars(values: np.ndarray, colors, tokens: Sequence[str], title: str, x_title: str) -> go.Figure:
    hover = [f"{token_label(tok)}: %{{y:.3f}}<extra></extra>" for tok in tokens]
    fig = figure(go.Bar(x=np.arange(len(tokens)), y=values, marker_color=colors, hovertemplate=hover),
                 title=title, height=300, showlegend=False, bargap=0.2)
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    return fig


def _hidden_markers(cols: np.ndarray, minus_inf: str | None) -> go.Scatter:
    """A ✕ at the foot of each hidden key's bar, labelled ``minus_inf`` when given."""
    return go.Scatter(x=cols, y=np.zeros(len(cols)), mode="markers+text" if minus_inf else "markers",
                      text=[minus_inf] * len(cols) if minus_inf else None, textposition="bottom center",
                      hoverinfo="skip", showlegend=False, textfont=dict(color=MASKED_COLOR),
                      marker=dict(symbol="x-thin", size=10, line=dict(width=2, color=MASKED_COLOR)))


def row_bars(raw: np.ndarray, weights: np.ndarray, allowed: np.ndarray, tokens: Sequence[str], *,
             titles: tuple[str, str, str], x_title: str, minus_inf: str) -> tuple[go.Figure, go.Figure, go.Figure]:
    """One query row in three steps, each (T_k,): raw scores (hidden keys grey), the scores with the
    mask (no bar where hidden, a ✕ marked ``minus_inf`` instead) and the softmax weights (a ✕ on the
    hidden keys, which get exactly 0). Returns (raw, masked, weights) figures."""
    allowed = np.asarray(allowed, bool)
    colors = np.where(allowed, PALETTE[0], HIDDEN_BAR_COLOR).tolist()
    title_raw, title_masked, title_weights = titles
    raw_fig = _bars(raw, colors, tokens, title_raw, x_title)
    masked_fig = _bars(np.where(allowed, raw, np.nan), PALETTE[0], tokens, title_masked, x_title)
    weights_fig = _bars(weights, PALETTE[2], tokens, title_weights, x_title)
    hidden = np.flatnonzero(~allowed)
    if len(hidden):
        masked_fig.add_trace(_hidden_markers(hidden, minus_inf if len(hidden) <= FEW_LABELS else None))
        weights_fig.add_trace(_hidden_markers(hidden, None))
    weights_fig.update_yaxes(range=[0, max(1.0, float(np.max(weights)) * 1.05)])
    return raw_fig, masked_fig, weights_fig
