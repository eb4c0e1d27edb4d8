"""The "head view" (the bertviz idea): lines from every query token to the keys it attends to.

Queries stand in a column on the left, keys on the right; a line joins query i to key j with a
width and opacity that grow with the weight. Several heads are drawn as small multiples, one
panel per head in its own colour, side by side: overlaid, their translucent lines would blend into
one colour that matches no head. Lines are grouped into a few weight bands, one plotly trace per
(head, band), so a sentence of 40 tokens and 8 heads is still about 40 traces rather than
thousands of segments.
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
MARGIN_X = 1.0  # beside the outer token columns, in x units: room for their labels
PANEL_STEP = 2.6  # from one head's panel to the next, in x units (a panel is 1 wide; the rest holds its tokens)


def head_colour(head: int) -> str:
    """Colour of head ``head`` (1-based), the same in every chart of the page."""
    return HEAD_COLOURS[(head - 1) % len(HEAD_COLOURS)]


def band_of(weight: float) -> int:
    """Index of the band ``weight`` falls in, -1 when it is too small to draw."""
    return int(np.searchsorted(BANDS, weight, side="right")) - 1


def band_style(band: int) -> tuple[float, float]:
    """(line width in px, opacity) of band ``band``: heavier and darker for larger weights."""
    return 1.0 + 1.0 * band, 0.2 + 0.14 * band


def segments(weights: np.ndarray, band: int, offset: float = 0.0) -> tuple[list[float | None], list[float | None], int]:
    """x, y of the segments of one head whose weight lies in ``band`` (None-separated), and their count.

    weights: (T_q, T_k). Query i sits at (offset + LEFT_X, i), key j at (offset + RIGHT_X, j).
    """
    lo = BANDS[band]
    hi = BANDS[band + 1] if band + 1 < len(BANDS) else np.inf
    rows, cols = np.nonzero((weights >= lo) & (weights < hi))
    xs: list[float | None] = [offset + LEFT_X, offset + RIGHT_X, None] * len(rows)
    ys: list[float | None] = [v for i, j in zip(rows.tolist(), cols.tolist()) for v in (i, j, None)]
    return xs, ys, len(rows)


def _head_lines(weights: np.ndarray, head: int, offset: float, name: str) -> list[go.Scatter]:
    """One trace per weight band of head ``head`` (1-based) of ``weights`` (H, T_q, T_k), in its colour."""
    traces = []
    for band in range(len(BANDS)):
        xs, ys, count = segments(weights[head - 1], band, offset)
        if count:
            width, opacity = band_style(band)
            traces.append(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=head_colour(head), width=width),
                                     opacity=opacity, hoverinfo="skip", legendgroup=f"h{head}", showlegend=False,
                                     name=name))
    return traces


def _token_column(labels: list[str], x: float, side: str, hover: str, size: int) -> go.Scatter:
    """The tokens of one column of a panel: grey dots at ``x``, their text on ``side`` ("left"/"right")."""
    return go.Scatter(x=[x] * len(labels), y=list(range(len(labels))), mode="markers+text", text=labels,
                      textposition=f"middle {side}", marker=dict(size=7, color="#444"), customdata=labels,
                      hovertemplate=hover + "<extra></extra>", showlegend=False, textfont=dict(size=size))


def head_view_figure(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    heads: Sequence[int],
    head_label: str,
    column_titles: tuple[str, str],
    query_hover: str,
    chosen: int | None = None,
) -> go.Figure:
    """Lines query -> key for ``heads`` (1-based) of one layer's ``weights`` (H, T_q, T_k), one panel per head.

    Small multiples: each head gets its own pair of token columns side by side, so the heads' lines
    never blend into one tangle; a panel's title (``head_label`` and the number) is written in the
    head's colour, and the ``chosen`` head's panel is framed. ``column_titles`` name the two columns
    (queries, keys) of the first panel. ``query_hover`` is a template with ``%{customdata}`` (the
    token) for the token markers.
    """
    weights = np.asarray(weights, dtype=float)
    _, tq, tk = weights.shape
    heads = list(heads)
    several = len(heads) > 1
    font = 12 if several else 14
    q_labels = [token_label(t) for t in query_tokens]
    k_labels = [token_label(t) for t in key_tokens]
    rows = max(tq, tk, 1)
    fig = go.Figure()
    for panel, head in enumerate(heads):
        offset = panel * PANEL_STEP
        name = f"{html.escape(head_label)} {head}"
        fig.add_traces(_head_lines(weights, head, offset, name))
        fig.add_traces([_token_column(q_labels, offset + LEFT_X, "left", query_hover, font),
                        _token_column(k_labels, offset + RIGHT_X, "right", query_hover, font)])
        bold = head == chosen or not several
        fig.add_annotation(x=offset + (LEFT_X + RIGHT_X) / 2, y=-2.2, xref="x", yref="y", showarrow=False,
                           text=f"<b>{name}</b>" if bold else name, font=dict(color=head_colour(head), size=14))
        if several and head == chosen:
            fig.add_shape(type="rect", x0=offset - 0.42, x1=offset + 1.42, y0=-2.9, y1=rows - 0.4,
                          line=dict(color=head_colour(head), width=2), layer="below")
    for x, text, side in ((LEFT_X, column_titles[0], "right"), (RIGHT_X, column_titles[1], "left")):
        fig.add_annotation(x=x, y=-1.2, text=f"<b>{html.escape(text)}</b>", showarrow=False, xref="x", yref="y",
                           xanchor=side, font=dict(size=font))  # away from the other title: never on top of it
    fig.update_xaxes(visible=False, range=[LEFT_X - MARGIN_X, (len(heads) - 1) * PANEL_STEP + RIGHT_X + MARGIN_X],
                     fixedrange=True)
    fig.update_yaxes(visible=False, range=[rows - 0.3, -3.0], fixedrange=True)
    fig.update_layout(height=max(320, 26 * rows + 130), margin=dict(l=10, r=10, t=10, b=10), showlegend=False,
                      dragmode=False, hovermode="closest", plot_bgcolor="rgba(0,0,0,0)")
    return fig
