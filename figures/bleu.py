"""The BLEU page's pictures: the n-gram precisions p_1..p_4 as bars, each with its matches / total; one
head's attention map of the float32 model and of the int8 one, on one scale.

Numbers and already-translated texts in, a plotly figure out (no torch, no Streamlit).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.heatmap import cell_marks, heatmap
from figures.style import PALETTE, figure

BAR_COLOR = PALETTE[0]
EMPTY_COLOR = "#d62728"  # an order with no match: its p_n = 0 makes unsmoothed BLEU 0
MEAN_COLOR = "#7d828e"
MARK_COLOR = PALETTE[1]  # red: the cell where the two attention maps differ most


def precision_bars(precisions: Sequence[float], matches: Sequence[int], totals: Sequence[int], *,
                   names: Sequence[str], title: str, y_title: str, hover: str, mean: float | None = None) -> go.Figure:
    """``precisions`` (percent, one per order) as bars named ``names``, each labelled ``matches/total``.

    A bar of 0 is drawn as a short red stub so that a missing order stays visible. ``mean`` (percent),
    when given, is drawn as a dashed line (the page's caption names it): the geometric mean
    exp((1/N) Σ log p_n) that BLEU uses.
    ``hover`` is a plotly template; ``%{customdata[0]}`` is the bar's ``matches/total``,
    ``%{customdata[1]}`` its precision (the stub's height is not).
    """
    labels = [f"{m}/{t}" for m, t in zip(matches, totals)]
    shown = [p if p > 0 else 1.5 for p in precisions]
    colors = [BAR_COLOR if p > 0 else EMPTY_COLOR for p in precisions]
    bars = go.Bar(x=list(names), y=shown, text=labels, textposition="outside", marker_color=colors,
                  customdata=[[label, float(p)] for label, p in zip(labels, precisions)], hovertemplate=hover + "<extra></extra>", cliponaxis=False, showlegend=False)
    fig = figure(bars, title=title, height=300)
    fig.update_yaxes(range=[0, 115], title=y_title, tickvals=[0, 25, 50, 75, 100], fixedrange=True)
    fig.update_xaxes(fixedrange=True)
    if mean is not None:
        fig.add_hline(y=mean, line=dict(color=MEAN_COLOR, dash="dash", width=1.5))
    return fig


def attention_map(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], *, title: str,
                  x_title: str, y_title: str, hover: str, mark: tuple[int, int] | None = None) -> go.Figure:
    """One head's weights (T_q, T_k) on the fixed 0–1 scale, so that a map of the float32 model and one of
    the int8 model drawn side by side compare colour for colour. ``mark`` (query, key) outlines one cell in
    red: where the two maps differ most. No colour bar (two would crowd a phone); the hover gives each weight."""
    fig = heatmap(weights, x_tokens=key_tokens, y_tokens=query_tokens, title=title, x_title=x_title, y_title=y_title,
                  zmin=0.0, zmax=1.0, hover=hover, show_scale=False)
    if mark is not None and weights.size:
        cell = np.zeros(np.shape(weights), dtype=bool)
        cell[mark] = True
        fig.add_traces(cell_marks(cell, MARK_COLOR))
    return fig
