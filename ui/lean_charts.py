"""Plotly pieces for figures that are re-sent to the browser on every rerun, kept cheap to send.

Streamlit serialises every figure on every rerun (``to_dict`` + ``to_json``). Two things dominate
that cost for the small figures of the tour: plotly's default template (Streamlit's, about 6 ms
per figure) and per-cell hover text (about 15 µs per cell). So the figures built here use
:data:`LEAN_TEMPLATE` (Streamlit's frontend still applies the app's fonts and colours) and only
put hover text on token-by-token matrices, which are small. Build a figure once in a cached
function, end with :func:`ui.frozen_figure.freeze`, and never change it afterwards.

Token axes use :func:`ui.charts.axis_labels` (escaped text at integer positions).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.labels import axis_labels, token_label

# Streamlit's category palette, so lines look the same as with Streamlit's own template.
PALETTE = ("#0068c9", "#ff2b2b", "#29b09d", "#ff8700", "#6d3fc0", "#83c9ff", "#ffabab", "#7defa1")
LEAN_TEMPLATE = go.layout.Template(layout=go.Layout(colorway=list(PALETTE), hovermode="closest"))
MASKED_COLOR = "#d62728"
TRUE_COLOR = "#2e7dd7"
FALSE_COLOR = "#e3e5ea"


def lean_figure(*traces, title: str = "", height: int = 320, **layout) -> go.Figure:
    """A figure with the lean template, a compact margin and ``title`` on top."""
    fig = go.Figure(list(traces))
    fig.update_layout(
        template=LEAN_TEMPLATE,
        title=dict(text=title, font=dict(size=14)) if title else None,
        margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        height=height,
        **layout,
    )
    return fig


def value_heatmap(
    z: np.ndarray,
    *,
    title: str = "",
    y_tokens: Sequence[str] | None = None,
    x_tokens: Sequence[str] | None = None,
    x_title: str = "",
    y_title: str = "",
    zmin: float | None = None,
    zmax: float | None = None,
    colorscale: str | list = "RdBu_r",
    hover: str = "%{y}, %{x}: %{z:.3f}",
    height: int | None = None,
    show_scale: bool = True,
) -> go.Figure:
    """A (rows, cols) heatmap of numbers without per-cell text, rows top to bottom.

    Axes given ``*_tokens`` show them as escaped tick labels at integer positions; the others
    are plain indices. ``hover`` sees %{x} and %{y} as those integer positions. Values are sent
    as float32: half the bytes of float64, and far more digits than a colour or a hover shows.
    """
    z = np.asarray(z, dtype=np.float32)
    rows, cols = z.shape
    fig = lean_figure(
        go.Heatmap(
            z=z, x=np.arange(cols), y=np.arange(rows), zmin=zmin, zmax=zmax, colorscale=colorscale,
            hovertemplate=hover + "<extra></extra>", showscale=show_scale,
            colorbar=dict(thickness=12),
        ),
        title=title,
        height=height or max(220, min(640, 18 * rows + 120)),
    )
    fig.update_xaxes(title=x_title, **(axis_labels(x_tokens) if x_tokens is not None else _index_ticks(cols)))
    fig.update_yaxes(title=y_title, autorange="reversed",
                     **(axis_labels(y_tokens) if y_tokens is not None else _index_ticks(rows)))
    return fig


def _index_ticks(n: int) -> dict:
    """Whole-number ticks for an index axis (plotly would put 0.5 steps on a short one)."""
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
    word_limit: int = 12,
    letter_limit: int = 32,
) -> go.Figure:
    """A bool matrix (True = may attend) as coloured cells with the value written in each cell.

    mask: (len(y_tokens), len(x_tokens)) bool. Up to ``word_limit`` tokens a side the cells say
    True/False, up to ``letter_limit`` T/F (as PyTorch's printout would, shortened), beyond that
    only the colour and the hover tell. Up to ``word_limit`` the hover names the escaped tokens;
    beyond it, their positions (the axes name the tokens), which keeps a large matrix small to send.
    """
    mask = np.asarray(mask, dtype=bool)
    rows, cols = mask.shape
    text = np.where(mask, true_text, false_text).astype(object)
    side = max(rows, cols)
    cell_text = text if side <= word_limit else np.where(mask, "T", "F").astype(object)
    if side <= word_limit:  # small: the hover names the tokens (query, key, True/False) per cell
        ys, xs = [token_label(t) for t in y_tokens], [token_label(t) for t in x_tokens]
        custom = np.empty((rows, cols, 3), dtype=object)
        for i in range(rows):
            custom[i, :, 0] = ys[i]
            custom[i, :, 1] = xs
        custom[:, :, 2] = text
        hovertemplate = (hover.replace("%{y}", "%{customdata[0]}").replace("%{x}", "%{customdata[1]}")
                         .replace("%{text}", "%{customdata[2]}"))
    else:  # large: positions in the hover (the axes name the tokens), and no per-cell payload to send
        custom = None
        hovertemplate = hover
    fig = lean_figure(
        go.Heatmap(
            z=mask.astype(np.int8), x=np.arange(cols), y=np.arange(rows), zmin=0, zmax=1,
            colorscale=[[0, FALSE_COLOR], [0.5, FALSE_COLOR], [0.5, TRUE_COLOR], [1, TRUE_COLOR]],
            showscale=False, text=cell_text, customdata=custom, xgap=1, ygap=1,
            texttemplate="%{text}" if side <= letter_limit else None,
            textfont=dict(size=10 if side <= word_limit else 8),
            hovertemplate=hovertemplate + "<extra></extra>",
        ),
        title=title,
        height=max(200, min(560, 26 * rows + 110)),
    )
    fig.update_xaxes(title=x_title, side="bottom", **axis_labels(x_tokens))
    fig.update_yaxes(title=y_title, autorange="reversed", **axis_labels(y_tokens))
    return fig


def lean(fig: go.Figure) -> go.Figure:
    """``fig`` (e.g. from :func:`ui.charts.heatmap`) switched to the lean template, in place."""
    fig.update_layout(template=LEAN_TEMPLATE)
    return fig
