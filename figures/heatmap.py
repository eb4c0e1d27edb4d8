"""The two matrix pictures every page uses: a heatmap of numbers and a True/False matrix.

Rows run top to bottom. An axis given tokens shows them (escaped) at integer positions; an axis
without tokens shows indices. Values are sent as float32: half the bytes of float64 and more
digits than a colour or a hover shows.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.labels import axis_labels, token_label
from figures.style import FALSE_COLOR, MASKED_EDGE, MASKED_FILL, SEQUENTIAL, TRUE_COLOR, figure

HOVER_TOKENS_MAX_CELLS = 4096  # above this, the hover names positions (the axes name the tokens)
CELL_TEXT_MAX_SIDE = 12  # values written in the cells up to this many rows and columns
CELL_TEXT_SIZE = 12  # px: True/False in a cell, as large as the tick labels
CELL_WORD_MAX_SIDE = 7  # True/False written whole up to this many a side (a cell of a ~320 px chart holds "False")
CELL_MARK_MAX_SIDE = 16  # T/F written up to this many a side; beyond, the colour and the hover say it


def heatmap(
    z: np.ndarray,
    *,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    zmin: float | None = None,
    zmax: float | None = None,
    colorscale: str | list = SEQUENTIAL,
    hover: str = "%{y} → %{x}: %{z:.3f}",
    masked: np.ndarray | None = None,
    text_values: bool = False,
    show_scale: bool = True,
    height: int | None = None,
) -> go.Figure:
    """A ``(rows, cols)`` heatmap of ``z``.

    ``hover`` may use ``%{x}``/``%{y}``: the tokens of that axis when given (else the position) and
    ``%{z}``. ``masked`` (same shape, bool) greys out the cells a mask hides, with a darker grey outline; ``text_values`` writes
    each value in its cell (small matrices only: at most :data:`CELL_TEXT_MAX_SIDE` a side).
    """
    z = np.asarray(z, dtype=np.float32)
    rows, cols = z.shape
    custom = None
    template = hover
    if (x_tokens is not None or y_tokens is not None) and rows * cols <= HOVER_TOKENS_MAX_CELLS:
        xs = [token_label(t) for t in x_tokens] if x_tokens is not None else [str(j) for j in range(cols)]
        ys = [token_label(t) for t in y_tokens] if y_tokens is not None else [str(i) for i in range(rows)]
        custom = [[[ys[i], xs[j]] for j in range(cols)] for i in range(rows)]
        template = hover.replace("%{y}", "%{customdata[0]}").replace("%{x}", "%{customdata[1]}")
    write_values = text_values and max(rows, cols) <= CELL_TEXT_MAX_SIDE
    fig = figure(
        go.Heatmap(
            z=z, x=np.arange(cols), y=np.arange(rows), zmin=zmin, zmax=zmax, colorscale=colorscale,
            customdata=custom, hovertemplate=template + "<extra></extra>", showscale=show_scale,
            colorbar=dict(thickness=12), texttemplate="%{z:.2f}" if write_values else None,
        ),
        title=title,
        height=height or max(220, min(640, 24 * rows + 120)),
    )
    if masked is not None and np.asarray(masked).any():
        fig.add_traces(cell_marks(np.asarray(masked, bool), MASKED_EDGE, fill=MASKED_FILL))
    fig.update_xaxes(title=x_title, side="bottom", **_ticks(x_tokens, cols))
    fig.update_yaxes(title=y_title, autorange="reversed", **_ticks(y_tokens, rows))
    return fig


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of True in a 1-D bool array."""
    steps = np.diff(np.concatenate([[0], np.asarray(flags, np.int8), [0]]))
    return list(zip(np.flatnonzero(steps == 1).tolist(), np.flatnonzero(steps == -1).tolist()))


def region_outline(cells: np.ndarray) -> tuple[list, list]:
    """``(xs, ys)`` of the outline of the True cells of ``cells`` (rows, cols): every edge between a
    True cell and a False one (or the border), straight runs joined, a gap (None) after each run.
    Its length grows with the region's perimeter, not its area."""
    cells = np.asarray(cells, bool)
    rows, cols = cells.shape
    padded = np.pad(cells, 1)
    xs: list = []
    ys: list = []
    above = padded[1:, 1:-1] != padded[:-1, 1:-1]  # (rows + 1, cols): an edge along the top of row r
    for r in range(rows + 1):
        for a, b in _runs(above[r]):
            xs += [a - 0.5, b - 0.5, None]
            ys += [r - 0.5, r - 0.5, None]
    left = padded[1:-1, 1:] != padded[1:-1, :-1]  # (rows, cols + 1): an edge along the left of column c
    for c in range(cols + 1):
        for a, b in _runs(left[:, c]):
            xs += [c - 0.5, c - 0.5, None]
            ys += [a - 0.5, b - 0.5, None]
    return xs, ys


def cell_marks(cells: np.ndarray, color: str, fill: str | None = None) -> list:
    """Traces that mark the True cells of ``cells`` (rows, cols): an outline of their region in
    ``color`` and, with ``fill``, the cells painted in that colour (then the values under them are
    hidden; without it they stay visible inside the outline). Drawn as one line and one flat
    heatmap however many cells are marked. The line's ``meta`` lists the cells as ``[row, col]``."""
    cells = np.asarray(cells, bool)
    rows, cols = np.nonzero(cells)
    xs, ys = region_outline(cells)
    traces: list = [go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=2), hoverinfo="skip",
                               showlegend=False, connectgaps=False, meta=np.stack([rows, cols], axis=1).tolist())]
    if fill is not None:
        z = np.where(cells, np.float32(1), np.float32(np.nan))
        traces.append(go.Heatmap(z=z, x=np.arange(cells.shape[1]), y=np.arange(cells.shape[0]), zmin=0, zmax=1,
                                 colorscale=[[0, fill], [1, fill]], showscale=False, hoverinfo="skip"))
    return traces


def _ticks(tokens: Sequence[str] | None, n: int) -> dict:
    """Token tick labels, or whole-number ticks for an index axis (plotly would put 0.5 steps on a short one)."""
    if tokens is not None:
        return axis_labels(tokens)
    return dict(tick0=0, dtick=1) if n <= 12 else dict(tickformat="d")


def bool_matrix(
    mask: np.ndarray,
    x_tokens: Sequence[str],
    y_tokens: Sequence[str],
    *,
    title: str = "",
    true_text: str = "True",
    false_text: str = "False",
    true_short: str = "T",
    false_short: str = "F",
    x_title: str = "",
    y_title: str = "",
    hover: str = "%{y} → %{x}: %{text}",
) -> go.Figure:
    """A bool matrix (True = may attend) as two colours; small ones say it in every cell at a
    readable :data:`CELL_TEXT_SIZE`: the whole word up to :data:`CELL_WORD_MAX_SIDE` a side, the
    short mark (``true_short``/``false_short``) up to :data:`CELL_MARK_MAX_SIDE`, beyond that nothing.

    mask: ``(len(y_tokens), len(x_tokens))`` bool. The hover names the tokens and the whole word
    (``%{text}`` in ``hover``: read from ``customdata`` where the cells show the short mark).
    """
    mask = np.asarray(mask, dtype=bool)
    rows, cols = mask.shape
    words = np.where(mask, true_text, false_text)
    fig = heatmap(
        mask.astype(np.int8), x_tokens=x_tokens, y_tokens=y_tokens, title=title, x_title=x_title, y_title=y_title,
        zmin=0, zmax=1, colorscale=[[0, FALSE_COLOR], [0.5, FALSE_COLOR], [0.5, TRUE_COLOR], [1, TRUE_COLOR]],
        hover=hover, show_scale=False, height=max(200, min(560, 26 * rows + 110)),
    )
    side = max(rows, cols)
    written = side <= CELL_MARK_MAX_SIDE
    marks = np.where(mask, true_short, false_short) if side > CELL_WORD_MAX_SIDE else words
    trace = fig.data[0]
    if trace.customdata is not None:  # the hover names the tokens: it says the whole word beside them
        trace.customdata = [[[*cell, word] for cell, word in zip(cells, row)]
                            for cells, row in zip(trace.customdata, words.tolist())]
        trace.hovertemplate = trace.hovertemplate.replace("%{text}", "%{customdata[2]}")
    fig.update_traces(text=marks if written else words, texttemplate="%{text}" if written else None,
                      textfont=dict(size=CELL_TEXT_SIZE), xgap=1, ygap=1, selector=dict(type="heatmap"))
    return fig
