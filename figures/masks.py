"""The masks page's pictures: the mask matrices (square, or not: the families' cross-attention), a
self-attention map with what its mask hid and let through, and one query row from scores to weights as
three bar charts.

Tokens are plotted at integer positions (:func:`figures.labels.axis_labels`); the marks on a map's
cells are an outline of their region (:func:`figures.heatmap.cell_marks`), however many cells they mark.
Every picture here is about 320 px wide (a third of a wide page, or a phone's width), so titles are
wrapped at :data:`TITLE_WIDTH`; every token of an axis is labelled, in a smaller font the more there are,
up to :data:`MAX_TICK_LABELS`, beyond which it labels every k-th one (:func:`fit_to_narrow`).
"""
from __future__ import annotations

import html
import math
import re
import unicodedata
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

import figures.heatmap
from figures.heatmap import cell_marks, heatmap
from figures.labels import CJK, axis_labels, token_label
from figures.style import MASKED_COLOR, PALETTE, figure

LEAK_COLOR = PALETTE[3]  # orange: attention the full mask would have hidden
HIDDEN_BAR_COLOR = "#b8bcc6"  # a score the mask replaces by −∞
FEW_LABELS = 8  # up to this many hidden keys, each ✕ says "−∞"; beyond, the labels would overlap
TITLE_WIDTH = 30  # a title line holds this many Latin letters (a CJK character counts two): ~220 px at 14 px
TITLE_LINE_PX = 18  # the top margin grows by this for each further title line
RIGHT_MARGIN = 28  # px: room for the last tick label, which plotly slants and would otherwise hide
MAX_TICK_LABELS = 20  # an axis of more tokens labels every k-th only (the hover names every one)
TICK_AXIS_PX = 160  # the narrowest plot a token axis gets (a third of a 1280 px page, less its margins)
TICK_FONT_MAX, TICK_FONT_MIN = 12, 8  # px: a tick label's size, from few tokens to many
STAGGER_ROWS = 3  # lines a token axis's labels may take when they are written across
LABEL_GAP_PX = 1  # between two labels on one line
_BRACKETS = re.compile(r"([(（][^)）]*[)）]?\s*)")  # a bracketed group: kept on one line
_BREAK = re.compile(r"(?<=\s)|(?<=[，：、；])")  # where a title may break: after a space or CJK punctuation


def _width(text: str) -> int:
    """Display width of ``text``: wide (CJK) characters count two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_title(title: str, width: int = TITLE_WIDTH) -> list[str]:
    """``title`` as lines of at most ``width`` (a word or bracketed group longer than that stays
    whole), broken after a space or CJK punctuation, or before a bracketed group."""
    pieces = [piece for n, part in enumerate(_BRACKETS.split(title))
              for piece in ([part] if n % 2 else _BREAK.split(part))]
    lines: list[str] = []
    for piece in pieces:
        if lines and _width(lines[-1] + piece.rstrip()) <= width:
            lines[-1] += piece
        elif piece.strip():
            lines.append(piece.lstrip())
        elif lines:
            lines[-1] += piece
    return [line.rstrip() for line in lines] or [title]


def _tick_step(n: int) -> int:
    """Label every this many positions of an axis of ``n`` tokens."""
    return -(-n // MAX_TICK_LABELS)


def tick_font_size(labels: int) -> int:
    """Pixels for ``labels`` tick labels side by side on a :data:`TICK_AXIS_PX` axis: each CJK character
    (as wide as the font is tall) keeps a gap of a tenth of its slot, within 8 to 12 px."""
    return max(TICK_FONT_MIN, min(TICK_FONT_MAX, int(TICK_AXIS_PX * 0.9 / max(labels, 1))))


def stagger(labels: Sequence[str], slot_px: float, font_px: int) -> list[str]:
    """``labels`` (plotly tick texts, escaped) written across, each on the first of up to
    :data:`STAGGER_ROWS` lines where it clears the labels already there (a line break pushes it down):
    ``<bos>`` or ``<pad>`` beside one-character Chinese tokens would otherwise run into them.
    ``slot_px``: the distance between two labels; widths are estimated (a CJK character is as wide as
    the font is tall, a Latin one about 0.6 of that)."""
    ends = [-math.inf] * STAGGER_ROWS  # the right edge of the last label of each line
    placed = []
    for n, text in enumerate(labels):
        half = font_px * sum(1.0 if _width(ch) == 2 else 0.6 for ch in html.unescape(text)) / 2
        centre = n * slot_px
        row = next((r for r, end in enumerate(ends) if centre - half >= end + LABEL_GAP_PX),
                   min(range(STAGGER_ROWS), key=ends.__getitem__))
        ends[row] = centre + half
        placed.append("<br>" * row + text)
    return placed


def fit_to_narrow(fig: go.Figure, n_x: int, n_y: int | None = None, title_room: int = 1) -> go.Figure:
    """``fig`` made to fit a narrow chart: its title wrapped and pinned to the top, with room for at
    least ``title_room`` lines (so that charts side by side start their plots at the same height); a
    right margin for the last slanted tick label; each token axis labelling every token in a font sized
    to their number (:func:`tick_font_size`), or every k-th beyond :data:`MAX_TICK_LABELS`."""
    margin = fig.layout.margin
    if fig.layout.title.text:
        lines = wrap_title(fig.layout.title.text)
        fig.update_layout(title=dict(text="<br>".join(lines), y=1, yref="container", yanchor="top", pad_t=12),
                          margin_t=margin.t + TITLE_LINE_PX * (max(len(lines), title_room) - 1))
    fig.update_layout(margin_r=max(margin.r or 0, RIGHT_MARGIN))
    for axis, n in ((fig.layout.xaxis, n_x), (fig.layout.yaxis, n_y)):
        if n is None or axis.tickvals is None:
            continue
        step = _tick_step(n)
        texts, size = list(axis.ticktext[::step]), tick_font_size(-(-n // step))
        if axis is fig.layout.xaxis and axis.tickangle != 0 and any(CJK.search(text) for text in texts):
            # Chinese beside a special token: across, staggered (plotly would turn them all on their side)
            texts = stagger(texts, step * TICK_AXIS_PX / n, size)
            axis.update(tickangle=0)
        axis.update(tickvals=axis.tickvals[::step], ticktext=texts, tickfont_size=size)
    return fig


def title_lines(titles: Sequence[str]) -> int:
    """How many lines the longest of ``titles`` wraps to: the room to give each of them."""
    return max(len(wrap_title(title)) for title in titles)


def mask_matrix(mask: np.ndarray, tokens: Sequence[str], *, title: str, **labels) -> go.Figure:
    """One (n, n) mask of ``tokens`` as a True/False matrix (:func:`figures.heatmap.bool_matrix`, ``labels``
    its texts) that fits a narrow chart."""
    matrix = figures.heatmap.bool_matrix(mask, tokens, tokens, title=title, **labels)  # looked up at call time
    return fit_to_narrow(matrix, len(tokens), len(tokens))


def labelled_mask(mask: np.ndarray, x_tokens: Sequence[str], y_tokens: Sequence[str], *, title: str,
                  title_room: int = 1, **labels) -> go.Figure:
    """A (len(y_tokens), len(x_tokens)) mask, not necessarily square (cross-attention: decoder queries over
    source keys), as a True/False matrix that fits a narrow chart; ``title_room`` as in :func:`fit_to_narrow`."""
    matrix = figures.heatmap.bool_matrix(mask, x_tokens, y_tokens, title=title, **labels)
    return fit_to_narrow(matrix, len(x_tokens), len(y_tokens), title_room)


def map_height(n_tokens: int) -> int:
    """Pixels for an attention map of ``n_tokens`` a side: sized to the sentence, within limits."""
    return max(280, min(560, 22 * n_tokens + 140))


def attention_map(weights: np.ndarray, mask: np.ndarray, leaks: np.ndarray, tokens: Sequence[str], *,
                  title: str, x_title: str, y_title: str, title_room: int = 1) -> go.Figure:
    """One self-attention map (weights (T, T), rows = queries): the cells the used ``mask`` hid
    greyed out (they are exactly 0), an orange outline around the ``leaks`` (cells the full mask
    would hide but this pass let through; their colour stays visible). mask, leaks: (T, T) bool.
    ``title_room``: title lines to make room for (see :func:`title_lines`)."""
    fig = heatmap(weights, x_tokens=tokens, y_tokens=tokens, title=title, x_title=x_title, y_title=y_title,
                  masked=~np.asarray(mask, bool), height=map_height(len(tokens)))
    if leaks.any():
        fig.add_traces(cell_marks(np.asarray(leaks, bool), LEAK_COLOR))
    return fit_to_narrow(fig, len(tokens), len(tokens), title_room)


def _bars(values: np.ndarray, colors, tokens: Sequence[str], title: str, x_title: str, title_room: int) -> go.Figure:
    hover = [f"{token_label(tok)}: %{{y:.3f}}<extra></extra>" for tok in tokens]
    fig = figure(go.Bar(x=np.arange(len(tokens)), y=values, marker_color=colors, hovertemplate=hover),
                 title=title, height=300, showlegend=False, bargap=0.2)
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    return fit_to_narrow(fig, len(tokens), title_room=title_room)


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
    room = title_lines(titles)
    raw_fig = _bars(raw, colors, tokens, title_raw, x_title, room)
    masked_fig = _bars(np.where(allowed, raw, np.nan), PALETTE[0], tokens, title_masked, x_title, room)
    weights_fig = _bars(weights, PALETTE[2], tokens, title_weights, x_title, room)
    hidden = np.flatnonzero(~allowed)
    if len(hidden):
        masked_fig.add_trace(_hidden_markers(hidden, minus_inf if len(hidden) <= FEW_LABELS else None))
        weights_fig.add_trace(_hidden_markers(hidden, None))
    weights_fig.update_yaxes(range=[0, max(1.0, float(np.max(weights)) * 1.05)])
    return raw_fig, masked_fig, weights_fig
