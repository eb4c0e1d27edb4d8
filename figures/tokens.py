"""The tokens page's pictures: the batch tables (HTML), the embedding heatmaps, and what a table's rows
mean (a word's nearest neighbours, the cosines of chosen words, the table's PCA map), and byte-pair
encoding (a sentence cut into coloured pieces, the vocabulary and the sentence length against the merges).

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
from figures.labels import axis_labels, display_token, token_label
from figures.style import DIVERGING, PALETTE

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


# ------------------------------------------------------------------ what an embedding means: cosine, neighbours, PCA

NEIGHBOUR_BAR_PX = 30  # the height of one neighbour's bar and its gap
NEIGHBOUR_NUMBERS_AT = 1.22  # the x where the column of cosines ends (the axis runs on to it, ticks up to 1)
MAP_LABELS_MAX = ROW_LABELS_MAX  # a map of up to this many points writes every token beside its point
MAP_OTHER_COLOR = "#b8bcc6"  # the points nobody picked: grey, so the picked ones stand out
MAP_OTHER_INK, MAP_INK = "#7d828e", "#31333f"  # their labels (a small table's), and the picked points' labels


def neighbours_figure(tokens: Sequence[str], cosines: Sequence[float], *, x_title: str, hover: str,
                      chance: float, chance_name: str) -> go.Figure:
    """A word's nearest tokens by cosine as bars, nearest on top, each with its cosine written at its end;
    a dotted line at ``chance`` (where a random table's rows typically find their nearest), named
    ``chance_name``. ``hover`` may use ``%{customdata}`` (the token) and ``%{x}`` (the cosine)."""
    values = [float(c) for c in cosines]
    labels = [token_label(t) for t in tokens]
    rows = list(range(len(values)))
    fig = go.Figure(go.Bar(x=values, y=rows, orientation="h", marker_color=PALETTE[0], customdata=labels,
                           hovertemplate=hover + "<extra></extra>"))
    # The numbers in a column of their own, right of cosine 1: beside the bars the dotted line ran through them.
    fig.add_trace(go.Scatter(x=[NEIGHBOUR_NUMBERS_AT] * len(values), y=rows, mode="text",
                             text=[f"{c:.3f}" for c in values], textposition="middle left", hoverinfo="skip"))
    low = min([0.0, *values])
    fig.add_vline(x=chance, line=dict(color="#5c6070", width=1.5, dash="dot"), annotation_text=chance_name,
                  annotation_position="top", annotation_font=dict(size=11, color="#5c6070"))
    fig.update_yaxes(**axis_labels(tokens), autorange="reversed")
    fig.update_xaxes(title=x_title, range=[low - 0.05 if low < 0 else 0, NEIGHBOUR_NUMBERS_AT], zeroline=True,
                     zerolinecolor="#444", tickvals=[-1.0, -0.5, 0.0, 0.5, 1.0])
    fig.update_layout(height=max(220, NEIGHBOUR_BAR_PX * len(values) + 110), margin=dict(l=10, r=10, t=30, b=10),
                      showlegend=False)
    return fig


def similarity_figure(tokens: Sequence[str], cosines: np.ndarray, *, hover: str) -> go.Figure:
    """The cosine of every pair of ``tokens`` ((n, n), 1 on the diagonal) on a fixed −1 … 1 scale, each cell
    with its number, so that two pictures of different words compare."""
    fig = heatmap(cosines, x_tokens=tokens, y_tokens=tokens, zmin=-1.0, zmax=1.0, colorscale=DIVERGING, hover=hover,
                  text_values=True, height=max(280, min(560, 38 * len(tokens) + 140)))
    return fig


def pca_figure(tokens: Sequence[str], points: np.ndarray, groups: Sequence[tuple[str, Sequence[int], str]], *,
               other_name: str, axis: tuple[str, str], hover: str, narrow: bool = False) -> go.Figure:
    """Every row of an embedding table as a point on the table's two principal axes (``points``, (n, 2)).

    ``groups`` are (name, row numbers, colour) drawn over the grey rest with their tokens written beside
    them (the picked word, its neighbours, the compared words; a row in two groups is drawn by the last).
    A map of up to :data:`MAP_LABELS_MAX` points writes every token; a larger one only the groups' (a
    word model's hundreds of labels would cover each other), and every point says its token on hover.
    Both axes have the same scale: a distance on the picture is a distance in the plane.
    """
    points = np.asarray(points, dtype=np.float32)
    labels = [token_label(t) for t in tokens]
    write_all = len(tokens) <= MAP_LABELS_MAX
    size = 10 if narrow else 11

    def trace(rows: Sequence[int], name: str, color: str, marker: int, text: bool, ink: str) -> go.Scatter:
        rows = list(rows)
        return go.Scatter(x=points[rows, 0], y=points[rows, 1], mode="markers+text" if text else "markers",
                          name=name, marker=dict(color=color, size=marker), text=[labels[i] for i in rows],
                          textposition="top center", textfont=dict(size=size, color=ink),
                          customdata=[labels[i] for i in rows], hovertemplate=hover + "<extra></extra>")

    owner = {row: g for g, (_, rows, _) in enumerate(groups) for row in rows}  # the last group wins a shared row
    rest = [i for i in range(len(tokens)) if i not in owner]
    fig = go.Figure(trace(rest, other_name, MAP_OTHER_COLOR, 6, write_all, MAP_OTHER_INK))
    for g, (name, rows, color) in enumerate(groups):
        fig.add_trace(trace([row for row in rows if owner[row] == g], name, color, 10, True, MAP_INK))
    x_title, y_title = axis
    fig.update_xaxes(title=x_title, zeroline=False)
    fig.update_yaxes(title=y_title, zeroline=False, scaleanchor="x", scaleratio=1)
    fig.update_layout(height=420 if narrow else 560, margin=dict(l=10, r=10, t=10, b=10),
                      legend=dict(orientation="h", y=-0.18 if narrow else -0.12, x=0))
    return fig


# ------------------------------------------------------------------ byte-pair encoding: pieces, merges and their cost

# Neighbouring pieces alternate through these light fills, so where one piece ends shows; <unk> is the tables' red.
PIECE_FILLS = ("#dbe9fb", "#fdebd3", "#d8f3ec", "#ece3fa", "#fbe3ee")
PIECE_STYLE = ("display: inline-block; margin: 0 2px 4px 0; padding: 1px 5px; border-radius: 4px; "
               "font-family: 'Source Code Pro', monospace; font-size: 0.9rem; white-space: pre")
UNK_STYLE = "background: #fde0df; color: #a1131c; font-weight: 600"


def pieces_html(rows: Sequence[tuple[str, Sequence[str], Sequence[str], Sequence[bool]]]) -> str:
    """One sentence cut in several ways, a line each: (label, tokens, what each stands for, unknown?).

    Every token is a coloured chip (neighbours in different colours), made visible and escaped; an
    unknown one is red and says on hover what it stood for. A long line wraps inside the page."""
    lines = []
    for label, tokens, surfaces, unknown in rows:
        chips = []
        for n, (token, surface, unk) in enumerate(zip(tokens, surfaces, unknown)):
            style = UNK_STYLE if unk else f"background: {PIECE_FILLS[n % len(PIECE_FILLS)]}"
            tip = f' title="{html.escape(display_token(surface.strip() or surface))}"' if unk else ""
            chips.append(f'<span style="{PIECE_STYLE}; {style}"{tip}>{token_label(token)}</span>')
        lines.append(f'<div style="margin-bottom: 0.4rem"><div style="font-size: 0.85rem; color: #5c6070">'
                     f'{html.escape(label)}</div><div style="line-height: 1.9">{"".join(chips)}</div></div>')
    return f'<div class="tp-bpe-pieces">{"".join(lines)}</div>'


def bpe_curve_figure(vocab_sizes: Sequence[int], mean_pieces: Sequence[float], k: int, *,
                     titles: tuple[str, str], x_title: str, hovers: tuple[str, str],
                     words: tuple[int, float] | None, words_name: str, narrow: bool = False) -> go.Figure:
    """Vocabulary size (top) and mean pieces per sentence (bottom) against the number of merges k = 0 …,
    one x axis for both, the chosen ``k`` marked on each; ``words`` (vocabulary, mean length) as dotted
    lines named ``words_name`` where a word vocabulary exists."""
    ks = list(range(len(vocab_sizes)))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14,
                        subplot_titles=[html.escape(title) for title in titles])
    for row, values, hover in ((1, list(vocab_sizes), hovers[0]), (2, [float(v) for v in mean_pieces], hovers[1])):
        fig.add_trace(go.Scatter(x=ks, y=values, mode="lines", line=dict(color=PALETTE[0], width=2),
                                 hovertemplate=hover + "<extra></extra>"), row=row, col=1)
        fig.add_trace(go.Scatter(x=[k], y=[values[k]], mode="markers+text", marker=dict(color=PALETTE[1], size=10),
                                 text=[f"{values[k]:,.0f}" if row == 1 else f"{values[k]:.1f}"],
                                 textposition="top right" if k < len(ks) / 2 else "top left",
                                 hoverinfo="skip"), row=row, col=1)
        top = max(values)
        if words is not None:
            top = max(top, words[row - 1])
            # at the left, where the curves start far from it (k = 0 is characters)
            fig.add_hline(y=words[row - 1], line=dict(color="#5c6070", width=1.5, dash="dot"), row=row, col=1,
                          annotation_text=words_name, annotation_position="bottom left",
                          annotation_font=dict(size=11, color="#5c6070"))
        fig.update_yaxes(range=[0, 1.18 * top or 1], row=row, col=1)  # room above for the marked value
    fig.add_vline(x=k, line=dict(color=PALETTE[1], width=1, dash="dash"))
    fig.update_xaxes(title=x_title, row=2, col=1)
    fig.update_xaxes(range=[-0.02 * max(1, len(ks) - 1), 1.02 * max(1, len(ks) - 1)])
    for note in fig.layout.annotations[:2]:  # the subplot titles
        note.font = dict(size=13)
    fig.update_layout(height=420 if narrow else 460, margin=dict(l=10, r=10, t=30, b=10), showlegend=False)
    return fig
