"""The "head view" (the bertviz idea): lines from every query token to the keys it attends to.

Queries stand in a column on the left, keys on the right; a line joins query i to key j with a
width and opacity that grow with the weight, one colour per head. Lines are grouped into a few
weight bands, one plotly trace per (head, band), so a sentence of 40 tokens and 8 heads is still
about 40 traces rather than thousands of segments.
"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.labels import token_label

HEAD_COLOURS: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
)
# Lower edges of the weight bands; a weight below the first is not drawn.
BANDS: tuple[float, ...] = (0.02, 0.1, 0.25, 0.5, 0.75)
LEFT_X, RIGHT_X = 0.0, 1.0


def head_colour(head: int) -> str:
    """Colour of head ``head`` (1-based), the same in every chart of the page."""
    return HEAD_COLOURS[(head - 1) % len(HEAD_COLOURS)]


def band_of(weight: float) -> int:
    """Index of the band ``weight`` falls in, -1 when it is too small to draw."""
    return int(np.searchsorted(BANDS, weight, side="right")) - 1


def band_style(band: int) -> tuple[float, float]:
    """(line width in px, opacity) of band ``band``: heavier and darker for larger weights."""
    return 1.0 + 1.0 * band, 0.2 + 0.14 * band


def segments(weights: np.ndarray, band: int) -> tuple[list[float | None], list[float | None], int]:
    """x, y of the segments of one head whose weight lies in ``band`` (None-separated), and their count.

    weights: (T_q, T_k). Query i sits at (LEFT_X, i), key j at (RIGHT_X, j).
    """
    lo = BANDS[band]
    hi = BANDS[band + 1] if band + 1 < len(BANDS) else np.inf
    rows, cols = np.nonzero((weights >= lo) & (weights < hi))
    xs: list[float | None] = [LEFT_X, RIGHT_X, None] * len(rows)
    ys: list[float | None] = [v for i, j in zip(rows.tolist(), cols.tolist()) for v in (i, j, None)]
    return xs, ys, len(rows)


def head_view_figure(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    heads: Sequence[int],
    head_label: str,
    column_titles: tuple[str, str],
    query_hover: str,
) -> go.Figure:
    """Lines query -> key for ``heads`` (1-based) of one layer's ``weights`` (H, T_q, T_k).

    ``head_label`` is the legend's word for a head ("Head", "头"); ``column_titles`` name the two
    columns (queries, keys). ``query_hover`` is a template with ``%{customdata}`` (the token) for
    the token markers.
    """
    weights = np.asarray(weights, dtype=float)
    _, tq, tk = weights.shape
    fig = go.Figure()
    for head in heads:
        colour = head_colour(head)
        first = True
        for band in range(len(BANDS)):
            xs, ys, count = segments(weights[head - 1], band)
            if not count:
                continue
            width, opacity = band_style(band)
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", line=dict(color=colour, width=width), opacity=opacity,
                hoverinfo="skip", legendgroup=f"h{head}", showlegend=first,
                name=f"{html.escape(head_label)} {head}",
            ))
            first = False
        if first:  # no weight big enough to draw: keep the head in the legend anyway
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=colour),
                                     legendgroup=f"h{head}", name=f"{html.escape(head_label)} {head}"))
    q_labels = [token_label(t) for t in query_tokens]
    k_labels = [token_label(t) for t in key_tokens]
    fig.add_trace(go.Scatter(
        x=[LEFT_X] * tq, y=list(range(tq)), mode="markers+text", text=q_labels, textposition="middle left",
        marker=dict(size=7, color="#444"), customdata=q_labels, hovertemplate=query_hover + "<extra></extra>",
        showlegend=False, textfont=dict(size=14),
    ))
    fig.add_trace(go.Scatter(
        x=[RIGHT_X] * tk, y=list(range(tk)), mode="markers+text", text=k_labels, textposition="middle right",
        marker=dict(size=7, color="#444"), customdata=k_labels, hovertemplate=query_hover + "<extra></extra>",
        showlegend=False, textfont=dict(size=14),
    ))
    rows = max(tq, tk, 1)
    for x, text in ((LEFT_X, column_titles[0]), (RIGHT_X, column_titles[1])):
        fig.add_annotation(x=x, y=-1.2, text=f"<b>{html.escape(text)}</b>", showarrow=False, xref="x", yref="y")
    fig.update_xaxes(visible=False, range=[-0.45, 1.45], fixedrange=True)
    fig.update_yaxes(visible=False, range=[rows - 0.4, -1.8], fixedrange=True)
    fig.update_layout(height=max(320, 26 * rows + 110), margin=dict(l=10, r=10, t=10, b=10),
                      legend=dict(orientation="h", y=1.0, yanchor="bottom"), dragmode=False,
                      hovermode="closest")
    return fig
