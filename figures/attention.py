"""The attention page's pictures, from numpy arrays and already-translated labels.

Attention arrays are ``(L, H, T_q, T_k)`` (layers, heads, query positions, key positions) or one
head's ``(T_q, T_k)``; tokens are raw (escaped here, by :func:`figures.labels.axis_labels`).
Rows are queries, top to bottom; columns are keys. A hover's ``%{x}``/``%{y}`` on an axis of tokens
shows the token: plotly writes a tick's text for its position, so no cell sends its own labels.
"""
from __future__ import annotations

import html
import math
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.heatmap import CELL_TEXT_MAX_SIDE, cell_marks, heatmap
from figures.labels import axis_labels
from figures.style import DIVERGING, MASKED_EDGE, MASKED_FILL, PALETTE, SEQUENTIAL, figure

GRID_TICK_LIMIT = 16  # the overview grid writes token labels only for sentences up to this many tokens
GRID_GAP_X, GRID_GAP_Y = 0.13, 0.3  # between two maps of the grid, in map widths and heights (room for a title)
ZOOM_TEXT_MAX_SIDE = 14  # the zoomed head writes its values in the cells up to this many rows and columns
MARGIN = dict(l=10, r=10, t=40, b=10)
ALIGNMENT_EDGE = PALETTE[1]  # red: the outline of the gold alignment over a map of blues
PHONE_PLOT_PX = 290  # width of a grid's plot area on a 390-px phone (the page's padding and tick labels taken off)


def _height(n_rows: int) -> int:
    """Pixels of a one-head picture with ``n_rows`` queries: sized to the sentence."""
    return max(320, 30 * n_rows + 140)


def _float32(z: np.ndarray) -> np.ndarray:
    """Values as sent to the browser: float32 has more digits than a colour or a hover shows."""
    return np.asarray(z, dtype=np.float32)


# ------------------------------------------------------------------ every head at once


def grid_figure(maps: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                titles: Sequence[str], hover: str, per_row: int | None = None) -> go.Figure:
    """Layers × heads small maps of ``maps`` (L, H, T_q, T_k) in one chart, on one colour scale.

    The maps are laid out on one pair of axes, layer by layer (rows) and head by head (columns),
    with a gap between them; the keys' tokens stand under the bottom row and the queries' left of
    the first column (short sentences only: long ones would be unreadable there).
    ``titles``: L·H map titles, row by row. ``hover``: a template for one cell with ``%{y}``
    (query token), ``%{x}`` (key token) and ``%{z}`` (weight); the map's title goes above it.
    A click selects markers, not heatmap cells, so each map also holds an invisible marker on every
    cell (:func:`picked_head` reads the layer and head of a selected one). The markers carry the
    hover (the weight is their colour), and only one of them is drawn: thousands of invisible SVG
    markers would slow the browser down.
    ``per_row``: the phone's layout, that many maps a row (a layer takes several rows), cells about
    square on a 390-px screen, the keys' tokens left to the hover and the colour bar under the maps.
    """
    L, H, tq, tk = maps.shape
    per_row = min(per_row or H, H)
    phone = per_row < H
    rows_per_layer = math.ceil(H / per_row)
    x_step = tk + max(1, round(GRID_GAP_X * tk))  # from one map to the next, in cells
    y_step = tq + max(1, round(GRID_GAP_Y * tq))
    n_rows = L * rows_per_layer
    rows, cols = np.meshgrid(np.arange(tq, dtype=np.int16), np.arange(tk, dtype=np.int16), indexing="ij")
    cell_hover = hover.replace("%{z", "%{marker.color")
    traces, annotations = [], []
    for layer in range(L):
        for head in range(H):
            x0, y0 = (head % per_row) * x_step, (layer * rows_per_layer + head // per_row) * y_step
            z = _float32(maps[layer, head])
            title = titles[layer * H + head]
            traces.append(go.Heatmap(z=z, x0=x0, y0=y0, coloraxis="coloraxis", hoverinfo="skip"))
            traces.append(go.Scatter(
                x=cols.ravel() + x0, y=rows.ravel() + y0, mode="markers", showlegend=False,
                legendgroup=f"{layer + 1}-{head + 1}",
                marker=dict(size=10, opacity=0, color=z.ravel(), colorscale=SEQUENTIAL, maxdisplayed=1),
                selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
                hovertemplate=f"{title}<br>{cell_hover}<extra></extra>",
            ))
            annotations.append(dict(text=title, x=x0 + (tk - 1) / 2, y=y0 - 0.5, xref="x", yref="y",
                                    yanchor="bottom", showarrow=False, font=dict(size=12)))
    labelled = max(tq, tk) <= GRID_TICK_LIMIT
    x_ticks, y_ticks = axis_labels(key_tokens), axis_labels(query_tokens)
    axis = dict(showgrid=False, zeroline=False, tickfont=dict(size=9), tickmode="array")
    cmax = max(float(maps.max()) if maps.size else 1.0, 1e-6)
    colorbar = dict(thickness=12)
    if phone:  # a colour bar beside the maps would take a fifth of a phone's width
        colorbar = dict(thickness=10, orientation="h", x=0.5, xanchor="center", y=0, yanchor="top", len=0.9)
        map_px = PHONE_PLOT_PX / (per_row * x_step - (x_step - tk)) * tq  # a map's height with square cells
        height = int(n_rows * map_px * y_step / tq + MARGIN["t"] + 60)
    else:
        height = max(220, int(L * (150 if H > 4 else 190) + 60))
    return go.Figure(traces, layout=dict(
        xaxis=dict(axis, tickvals=[head * x_step + j for head in range(per_row) for j in x_ticks["tickvals"]],
                   ticktext=x_ticks["ticktext"] * per_row, showticklabels=labelled and not phone, tickangle=0,
                   range=[-0.5, (per_row - 1) * x_step + tk - 0.5]),
        yaxis=dict(axis, tickvals=[row * y_step + i for row in range(n_rows) for i in y_ticks["tickvals"]],
                   ticktext=y_ticks["ticktext"] * n_rows, showticklabels=labelled,
                   range=[(n_rows - 1) * y_step + tq - 0.5, -0.5]),
        annotations=annotations,
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=round(cmax, 4), colorbar=colorbar),
        height=height, margin=dict(MARGIN, b=50) if phone else MARGIN, clickmode="event+select", dragmode=False,
    ))


def picked_head(point: dict[str, Any]) -> tuple[int, int] | None:
    """(layer, head), 1-based, of a marker of :func:`grid_figure` that a click selected; None otherwise."""
    layer, _, head = str(point.get("legendgroup") or "").partition("-")
    return (int(layer), int(head)) if layer.isdigit() and head.isdigit() else None


# ------------------------------------------------------------------ one head


def zoom_figure(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                blocked: np.ndarray | None, title: str, x_title: str, y_title: str, hover: str,
                aligned: np.ndarray | None = None) -> go.Figure:
    """One head's (T_q, T_k) weights, large, tokens on both axes, values in the cells of a small
    map; ``blocked`` cells are greyed out; ``aligned`` (T_q, T_k) bool cells (the gold alignment)
    are outlined in :data:`ALIGNMENT_EDGE`, their values left visible."""
    fig = heatmap(weights, x_tokens=key_tokens, y_tokens=query_tokens, title=title, x_title=x_title,
                  y_title=y_title, zmin=0.0, zmax=1.0, masked=blocked, hover=hover, height=_height(len(query_tokens)))
    if max(np.shape(weights)) <= ZOOM_TEXT_MAX_SIDE:
        fig.update_traces(texttemplate="%{z:.2f}", selector=dict(type="heatmap"))
    if aligned is not None and np.asarray(aligned).any():
        fig.add_traces(cell_marks(np.asarray(aligned, bool), ALIGNMENT_EDGE))
    return fig


def vectors_figure(q: np.ndarray, k: np.ndarray, v: np.ndarray, query_tokens: Sequence[str],
                   key_tokens: Sequence[str], *, titles: Sequence[str], x_title: str, hover: str) -> go.Figure:
    """Q (T_q, d_k), K and V (T_k, d_k) side by side on one diverging scale centred on 0.

    ``hover`` may use ``%{y}`` (the row's token: plotly writes an axis's tick text), ``%{x}`` (the
    dimension) and ``%{z}``.
    """
    mats = [_float32(m) for m in (q, k, v)]
    bound = max(float(np.abs(m).max()) if m.size else 1.0 for m in mats) or 1.0
    fig = make_subplots(rows=1, cols=3, subplot_titles=list(titles), horizontal_spacing=0.08)
    for col, (m, tokens) in enumerate(zip(mats, (query_tokens, key_tokens, key_tokens)), start=1):
        fig.add_trace(go.Heatmap(z=m, coloraxis="coloraxis", hovertemplate=hover + "<extra></extra>"),
                      row=1, col=col)
        fig.update_yaxes(**axis_labels(tokens), autorange="reversed", row=1, col=col)
        fig.update_xaxes(title=x_title, row=1, col=col)
    fig.update_layout(coloraxis=dict(colorscale=DIVERGING, cmid=0.0, cmin=-bound, cmax=bound,
                                     colorbar=dict(thickness=12)),
                      height=max(260, 24 * max(len(query_tokens), len(key_tokens)) + 120), margin=MARGIN)
    return fig


def _cell_text(values: np.ndarray, blocked: np.ndarray | None) -> list[list[str]]:
    """(T_q, T_k) values written with two decimals, blank where the mask hides the cell (it is greyed out)."""
    return [["" if blocked is not None and blocked[i, j] else f"{float(x):.2f}" for j, x in enumerate(row)]
            for i, row in enumerate(np.asarray(values))]


def scores_figure(scores: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                  blocked: np.ndarray | None, title: str, x_title: str, y_title: str, hover: str) -> go.Figure:
    """Scores before the softmax (T_q, T_k), on a diverging scale centred on 0.

    Cells the mask hides are greyed out: the softmax never sees their score.
    """
    shown = np.asarray(scores, dtype=float) if blocked is None else np.where(blocked, np.nan, scores)
    visible = shown[~np.isnan(shown)]
    bound = float(np.abs(visible).max()) if visible.size else 1.0
    fig = heatmap(shown, x_tokens=key_tokens, y_tokens=query_tokens, title=title, x_title=x_title,
                  y_title=y_title, zmin=-bound, zmax=bound, colorscale=DIVERGING, hover=hover, masked=blocked,
                  height=_height(len(query_tokens)))
    small = max(shown.shape) <= CELL_TEXT_MAX_SIDE
    fig.update_traces(hoverongaps=False, text=_cell_text(scores, blocked) if small else None,
                      texttemplate="%{text}" if small else None, selector=dict(type="heatmap"))
    fig.update_layout(plot_bgcolor="#f4f4f7")  # where the mask hid a score
    return fig


def weights_entropy_figure(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str],
                           entropy: np.ndarray, *, blocked: np.ndarray | None, titles: Sequence[str], x_title: str,
                           y_title: str, entropy_title: str, hover: str, entropy_hover: str) -> go.Figure:
    """Softmax weights (T_q, T_k) with each row's ``entropy`` (T_q,) in bits as a bar beside the row.

    ``hover`` uses ``%{y}``/``%{x}`` (the query and key tokens: plotly writes an axis's tick text)
    and ``%{z}``; ``entropy_hover`` uses ``%{y}`` (the query token) and ``%{x}`` (the bits).
    """
    weights = _float32(weights)
    tq, tk = weights.shape
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.8, 0.2], horizontal_spacing=0.02,
                        subplot_titles=list(titles))
    small = max(tq, tk) <= CELL_TEXT_MAX_SIDE
    fig.add_trace(go.Heatmap(
        z=weights, zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL, colorbar=dict(thickness=12, x=1.01),
        hovertemplate=hover + "<extra></extra>",
        text=_cell_text(weights, blocked) if small else None, texttemplate="%{text}" if small else None,
    ), row=1, col=1)
    if blocked is not None and blocked.any():
        fig.add_traces(cell_marks(blocked, MASKED_EDGE, fill=MASKED_FILL), rows=1, cols=1)
    fig.add_trace(go.Bar(x=np.round(entropy, 3), y=np.arange(tq), orientation="h", marker_color=PALETTE[3],
                         hovertemplate=entropy_hover + "<extra></extra>", showlegend=False),
                  row=1, col=2)
    max_bits = math.log2(tk) if tk > 1 else 1.0
    fig.update_xaxes(title=x_title, **axis_labels(key_tokens), row=1, col=1)
    fig.update_xaxes(title=entropy_title, range=[0, max_bits * 1.05], row=1, col=2)
    fig.update_yaxes(**axis_labels(query_tokens))  # both columns: the bars' hover names the query too
    fig.update_yaxes(title=y_title, autorange="reversed", row=1, col=1)
    fig.update_layout(height=_height(tq), margin=MARGIN)
    return fig


# ------------------------------------------------------------------ statistics and switching heads off


def stats_figure(stats: pd.DataFrame, *, x_title: str, y_title: str, layer_label: str, head_label: str,
                 hover: str) -> go.Figure:
    """Each head's focus (mean of each row's largest weight) as a bar, heads along x, one colour and
    one bar per layer side by side, the value written above each bar.

    Bars side by side never cover one another's labels, whereas dots of heads that behave alike
    land on the same spot. ``stats``: :func:`explain.attention.head_statistics`. ``hover`` may use
    ``%{customdata[0]}`` (layer), ``[1]`` (head), ``[2]`` (entropy), ``[3]`` (mean distance),
    ``[4]`` (diagonal share) and ``%{y}`` (focus).
    """
    heads = sorted(int(h) for h in stats["head"].unique())
    traces = [
        go.Bar(
            x=group["head"], y=group["focus"], name=f"{html.escape(layer_label)} {layer}",
            text=[f"{v:.2f}" for v in group["focus"]], textposition="outside", cliponaxis=False,
            customdata=np.stack([group["layer"], group["head"], group["entropy"], group["distance"],
                                 group["diagonal"]], axis=1),
            hovertemplate=hover + "<extra></extra>",
        )
        for layer, group in stats.groupby("layer")
    ]
    fig = figure(*traces, height=340, barmode="group", legend=dict(orientation="h", y=1.02, yanchor="bottom"))
    fig.update_layout(margin=dict(l=10, r=10, t=30, b=10))
    fig.update_xaxes(title=x_title, tickmode="array", tickvals=heads,
                     ticktext=[f"{html.escape(head_label)} {h}" for h in heads])
    fig.update_yaxes(title=y_title, range=[0, 1.12])
    return fig


def ablation_figure(tokens: Sequence[str], before: np.ndarray, after: np.ndarray, *, names: Sequence[str],
                    x_title: str, y_title: str, hover: str) -> go.Figure:
    """Per-position probability (len(tokens),) of the same answer tokens: all heads on vs the chosen heads off."""
    bars = [go.Bar(x=np.arange(len(tokens)), y=_float32(values), name=html.escape(name), marker_color=colour,
                   hovertemplate=hover + "<extra></extra>")
            for name, values, colour in zip(names, (before, after), PALETTE)]
    fig = figure(*bars, barmode="group", legend=dict(orientation="h", y=1.15))
    fig.update_layout(margin=dict(l=10, r=10, t=20, b=10))
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    fig.update_yaxes(title=y_title, range=[0, 1.02])
    return fig


def alignment_figure(scores: np.ndarray, chance: float, *, y_title: str, layer_label: str, head_label: str,
                     chance_label: str, hover: str, narrow: bool = False) -> go.Figure:
    """Each head's alignment score (``scores`` (L, H)) as a bar, heads along x, one colour and one bar
    per layer side by side, and a dashed line at ``chance`` (the score of a head that spreads its
    weight evenly), named in the legend under the chart. The value stands above each bar, except on
    a ``narrow`` screen, where the numbers of neighbouring bars would run into one another (a tap
    shows it). ``hover`` may use ``%{customdata[0]}`` (layer), ``%{customdata[1]}`` (head) and ``%{y}``."""
    L, H = np.shape(scores)
    heads = np.arange(1, H + 1)
    traces = [go.Bar(x=heads, y=np.round(np.asarray(scores[layer], dtype=float), 4),
                     name=f"{html.escape(layer_label)} {layer + 1}",
                     text=None if narrow else [f"{v:.2f}" for v in scores[layer]], textposition="outside",
                     cliponaxis=False, customdata=np.stack([np.full(H, layer + 1), heads], axis=1),
                     hovertemplate=hover + "<extra></extra>")
              for layer in range(L)]
    traces.append(go.Scatter(x=[0.5, H + 0.5], y=[chance, chance], mode="lines", name=html.escape(chance_label),
                             line=dict(color=MASKED_EDGE, dash="dash", width=1.5), hoverinfo="skip"))
    fig = figure(*traces, height=360, barmode="group", legend=dict(orientation="h", y=-0.12, yanchor="top"))
    fig.update_layout(margin=dict(l=10, r=10, t=30, b=10))
    fig.update_xaxes(tickmode="array", tickvals=heads, ticktext=[f"{html.escape(head_label)} {h}" for h in heads],
                     range=[0.5, H + 0.5])
    fig.update_yaxes(title=y_title, range=[0, 1.12])
    return fig
