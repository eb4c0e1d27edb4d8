"""The tokens page's pictures: the batch tables (HTML) and the embedding heatmaps.

Tables are pandas Stylers: every cell is made visible and escaped (:func:`figures.labels.token_label`)
and carries its kind as a CSS class, so padding is grey, ``<bos>``/``<eos>`` blue and ``<unk>`` red.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from pandas.io.formats.style import Styler

from figures.heatmap import heatmap
from figures.labels import axis_labels, token_label
from figures.style import DIVERGING

ROW_LABELS_MAX = 70  # the most embedding-table rows labelled one by one (11 px a row at the figure's 900 px cap)
LABEL_PX = 14  # the height a row label needs (10 px text and a gap) before the next one
PLOT_MARGIN_PX = 60  # of a figure's height, what its margins and the x axis take from the plot

# How the tables show each kind of cell: padding greyed out, <bos>/<eos> blue, <unk> red.
TABLE_STYLES = [
    {"selector": "", "props": "border-collapse: collapse; font-size: 0.85rem; margin-bottom: 0.5rem"},
    {"selector": "th, td", "props": "border: 1px solid #dfe1e6; padding: 3px 7px; text-align: center; "
                                    "white-space: pre; min-width: 1.6em"},
    {"selector": "td", "props": "font-family: 'Source Code Pro', monospace"},
    {"selector": "th", "props": "background: #f4f4f7; color: #5c6070; font-weight: 500"},
    {"selector": "td.special", "props": "background: #dbe9fb; color: #0b4a8b; font-weight: 600"},
    {"selector": "td.unk", "props": "background: #fde0df; color: #a1131c; font-weight: 600"},
    {"selector": "td.pad", "props": "background: #e4e5e9; color: #8a8d96; font-style: italic"},
]


def _cell(value: object) -> str:
    """A cell or header of a table: visible and HTML-escaped, like a plotly label."""
    return token_label(str(value))


def kind_table_html(frame: pd.DataFrame, kinds: np.ndarray, uuid: str) -> str:
    """``frame`` as an HTML table whose cells carry their kind (``kinds``, same shape) as a CSS class.

    Cells, row labels and column labels are made visible and HTML-escaped, so ``<pad>`` and a
    typed ``<b>`` show literally; ``uuid`` scopes the table's CSS (one per table on a page). The
    table scrolls sideways inside its own box when it is wider than the page.
    """
    classes = pd.DataFrame(np.where(kinds == "char", "", kinds), index=frame.index, columns=frame.columns)
    styler = (Styler(frame, cell_ids=False).set_uuid(uuid).set_td_classes(classes).set_table_styles(TABLE_STYLES)
              .format(_cell).format_index(_cell, axis=0).format_index(_cell, axis=1))
    return f'<div style="overflow-x: auto">{styler.to_html()}</div>'


def _token_rows(fig: go.Figure, tokens: Sequence[str]) -> go.Figure:
    """``fig``'s rows labelled with ``tokens``; the hover keeps naming positions (``%{y}``)."""
    fig.update_yaxes(**axis_labels(tokens))
    return fig


def stage_figures(tokens: Sequence[str], stages: Sequence[np.ndarray], titles: Sequence[str],
                  axis: tuple[str, str, str]) -> list[go.Figure]:
    """One heatmap per stage ((T, d) each: lookup, × √d, PE, sum), all on one colour scale.

    Tokens run down the side; only the last figure shows the colour bar. ``axis`` is
    (x title, y title, hover).
    """
    x_title, y_title, hover = axis
    lim = max(float(np.abs(s).max()) for s in stages) or 1.0
    height = max(240, min(560, 16 * len(tokens) + 130))
    return [
        _token_rows(heatmap(values, title=title, x_title=x_title, y_title=y_title, zmin=-lim, zmax=lim,
                            colorscale=DIVERGING, hover=hover, height=height, show_scale=n == len(stages) - 1),
                    tokens)
        for n, (values, title) in enumerate(zip(stages, titles))
    ]


def label_groups(rows: Sequence[int], gap: int) -> list[list[int]]:
    """``rows`` (sorted) in runs whose neighbours are fewer than ``gap`` rows apart: one label each, so
    that two labels never sit closer than ``gap`` rows (where they would overlap)."""
    groups: list[list[int]] = []
    for row in rows:
        if groups and row - groups[-1][-1] < gap:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def matrix_figure(matrix: np.ndarray, vocab: Sequence[str], used: Sequence[int],
                  axis: tuple[str, str, str]) -> go.Figure:
    """The whole embedding table (V, d), the rows in ``used`` framed and marked ▶.

    Every row is labelled with its token up to :data:`ROW_LABELS_MAX` rows; a larger vocabulary (a
    word model's hundreds) labels only the rows in ``used``: its rows are a few pixels high, so all
    labels would overlap unreadably, and drawing them cost chromium ~0.65 s per draw for 323 rows
    (30 ms with the used rows only). Used rows too close for a label each share one, ``▶ a · b``, at
    their middle (:func:`label_groups`).
    """
    x_title, y_title, hover = axis
    used = sorted(set(used))
    lim = float(np.abs(matrix).max()) or 1.0
    height = max(360, min(900, 11 * len(vocab) + 120))
    fig = heatmap(matrix, x_title=x_title, y_title=y_title, zmin=-lim, zmax=lim, colorscale=DIVERGING,
                  hover=hover, height=height)
    if len(vocab) <= ROW_LABELS_MAX:
        tickvals = list(range(len(vocab)))
        ticktext = [("▶ <b>" + token_label(vocab[i]) + "</b>") if i in used else token_label(vocab[i])
                    for i in tickvals]
    else:
        groups = label_groups(used, max(1, math.ceil(LABEL_PX * len(vocab) / (height - PLOT_MARGIN_PX))))
        tickvals = [sum(group) / len(group) for group in groups]
        ticktext = ["▶ <b>" + " · ".join(token_label(vocab[i]) for i in group) + "</b>" for group in groups]
    fig.update_yaxes(tickmode="array", tickvals=tickvals, ticktext=ticktext, tickfont=dict(size=10))
    width = matrix.shape[1]
    for i in used:
        fig.add_shape(type="rect", x0=-0.5, x1=width - 0.5, y0=i - 0.5, y1=i + 0.5,
                      line=dict(color="#111111", width=1.5))
    return fig
