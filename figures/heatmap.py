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
from figures.style import FALSE_COLOR, MASKED_COLOR, SEQUENTIAL, TRUE_COLOR, figure

HOVER_TOKENS_MAX_CELLS = 4096  # above this, the hover names positions (the axes name the tokens)
CELL_TEXT_MAX_SIDE = 12  # values or True/False written in the cells up to this many rows and columns


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
    ``%{z}``. ``masked`` (same shape, bool) puts a ✕ on cells a mask hides; ``text_values`` writes
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
        fig.add_trace(cell_marks(np.asarray(masked, bool), "cross", MASKED_COLOR))
    fig.update_xaxes(title=x_title, side="bottom", **_ticks(x_tokens, cols))
    fig.update_yaxes(title=y_title, autorange="reversed", **_ticks(y_tokens, rows))
    return fig


def cell_marks(cells: np.ndarray, shape: str, color: str) -> go.Scatter:
    """A ✕ (``shape="cross"``) or a frame (``"frame"``) in every True cell of ``cells`` (rows, cols),
    drawn as ONE line: the browser draws a single path, however many cells are marked (one marker
    per cell would be one SVG element each). ``meta`` lists the marked cells as ``[row, col]``."""
    rows, cols = np.nonzero(cells)
    if shape == "cross":  # two strokes per cell, a gap (None) after each
        dx = np.array([-0.3, 0.3, np.nan, -0.3, 0.3, np.nan])
        dy = np.array([-0.3, 0.3, np.nan, 0.3, -0.3, np.nan])
    elif shape == "frame":  # a closed square just inside the cell's edges
        dx = np.array([-0.42, 0.42, 0.42, -0.42, -0.42, np.nan])
        dy = np.array([-0.42, -0.42, 0.42, 0.42, -0.42, np.nan])
    else:
        raise ValueError(f"shape must be 'cross' or 'frame', not {shape!r}")
    xs = (cols[:, None] + dx).ravel()
    ys = (rows[:, None] + dy).ravel()
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=1.5), hoverinfo="skip",
                      showlegend=False, connectgaps=False, meta=np.stack([rows, cols], axis=1).tolist())


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
    x_title: str = "",
    y_title: str = "",
    hover: str = "%{y} → %{x}: %{text}",
) -> go.Figure:
    """A bool matrix (True = may attend) as two colours; small ones say True/False in every cell.

    mask: ``(len(y_tokens), len(x_tokens))`` bool. The hover names the tokens and the value.
    """
    mask = np.asarray(mask, dtype=bool)
    rows, cols = mask.shape
    text = np.where(mask, true_text, false_text)
    fig = heatmap(
        mask.astype(np.int8), x_tokens=x_tokens, y_tokens=y_tokens, title=title, x_title=x_title, y_title=y_title,
        zmin=0, zmax=1, colorscale=[[0, FALSE_COLOR], [0.5, FALSE_COLOR], [0.5, TRUE_COLOR], [1, TRUE_COLOR]],
        hover=hover, show_scale=False, height=max(200, min(560, 26 * rows + 110)),
    )
    small = max(rows, cols) <= CELL_TEXT_MAX_SIDE
    fig.update_traces(text=text, texttemplate="%{text}" if small else None, textfont=dict(size=13),
                      xgap=1, ygap=1, selector=dict(type="heatmap"))
    return fig
