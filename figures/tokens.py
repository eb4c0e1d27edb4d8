"""The tokens page's pictures: the batch tables (HTML) and the embedding heatmaps.

Tables are pandas Stylers: every cell is made visible and escaped (:func:`figures.labels.token_label`)
and carries its kind as a CSS class, so padding is grey, ``<bos>``/``<eos>`` blue and ``<unk>`` red.
"""
from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from pandas.io.formats.style import Styler
from plotly.subplots import make_subplots

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


def matrix_table_html(values: np.ndarray, rows: Sequence[str], columns: Sequence[str], marked: np.ndarray,
                      uuid: str) -> str:
    """A small matrix as a table (:func:`kind_table_html`): four decimals, or whole numbers when all are
    (a one-hot matrix's 1 and 0), the ``marked`` cells (same shape, bool) blue."""
    values = np.asarray(values, dtype=float)
    whole = bool(np.all(values == np.round(values)))
    frame = pd.DataFrame([[f"{v:.0f}" if whole else f"{v:.4f}" for v in row] for row in values], index=list(rows),
                         columns=list(columns))
    return kind_table_html(frame, np.where(np.asarray(marked, bool), "special", "char"), uuid)


STAGE_SPACING_PX = 84  # between two rows of steps: the upper row's tick numbers and the lower row's two-line titles


def stage_figure(tokens: Sequence[str], stages: Sequence[np.ndarray], titles: Sequence[str],
                 notes: Sequence[str], axis: tuple[str, str, str], *, columns: int = 2) -> go.Figure:
    """The steps from ids to the encoder's input ((T, d) each: lookup, × √d, PE, sum) as ONE figure of
    subplots, ``columns`` across (2 on a wide screen, 1 on a phone), on one colour scale with one bar.

    One chart rather than four: chromium redraws four subplots in about two thirds of the time of four
    charts (bench/RESULTS.md, the floor app: 336 ms vs 219 ms; a tab's first draw did not measurably
    change). Tokens run down each subplot's side; ``notes`` is a smaller second line under each title
    (the step's typical size); ``axis`` is (x title, y title, hover).
    """
    x_title, y_title, hover = axis
    mats = [np.asarray(values, dtype=np.float32) for values in stages]
    lim = max(float(np.abs(m).max()) if m.size else 0.0 for m in mats) or 1.0
    rows = math.ceil(len(mats) / columns)
    each = max(240, min(560, 16 * len(tokens) + 130)) - 50  # a subplot's plot area, as the charts' were
    height = rows * each + (rows - 1) * STAGE_SPACING_PX + 110
    labelled = [f"{html.escape(title)}<br><span style='font-size:11px'>{html.escape(note)}</span>"
                for title, note in zip(titles, notes)]
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=labelled, horizontal_spacing=0.12 if columns > 1 else 0,
                        vertical_spacing=STAGE_SPACING_PX / height if rows > 1 else 0)
    for n, values in enumerate(mats):
        row, col = n // columns + 1, n % columns + 1
        fig.add_trace(go.Heatmap(z=values, x=np.arange(values.shape[1]), y=np.arange(values.shape[0]),
                                 coloraxis="coloraxis", hovertemplate=hover + "<extra></extra>"), row=row, col=col)
        # One title per axis for the whole grid (the first subplot's y, the bottom row's x): between two
        # rows an x title would run into the titles below it.
        fig.update_yaxes(**axis_labels(tokens), autorange="reversed", title=y_title if n == 0 else None,
                         row=row, col=col)
        fig.update_xaxes(title=x_title if row == rows else None, row=row, col=col)
    for note in fig.layout.annotations:  # the subplot titles
        note.font = dict(size=13)
    fig.update_layout(coloraxis=dict(colorscale=DIVERGING, cmin=-lim, cmax=lim, colorbar=dict(thickness=12)),
                      height=height, margin=dict(l=10, r=10, t=60, b=10))
    return fig


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
