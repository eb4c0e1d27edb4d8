"""The LayerNorm page's pictures, from the numbers of :mod:`explain.layernorm` and
:mod:`explain.norm_placement`: γ and β, normalised vectors, BatchNorm's feature means, the two
wirings of a sublayer (post-norm and pre-norm) and the gradient norms at initialisation (those two
wirings and post-norm without residual connections, on a log axis).

Every text comes in translated; vectors of d numbers are drawn against the feature index.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from figures.heatmap import heatmap
from figures.style import DIVERGING, PALETTE, figure

NORM_FILL, SUBLAYER_FILL, EDGE = "#fff2cc", "#dbe9f9", "#5c6070"  # the paper's yellow Add & Norm, blue sublayers
GUIDE = dict(color="#888888", dash="dot", width=1)
NORMALISED_BOUND = 3.0  # colour range of normalised vectors: ±3 standard deviations
TEXT = "#31333f"  # the diagram's labels: Streamlit's text colour
LEGEND_ON_TOP = dict(legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1),
                     title_y=0.97, title_yanchor="top", title_yref="container")  # the title above the legend


def _legend_on_top(fig: go.Figure) -> go.Figure:
    """The legend in a row between the title and the plot, on the right (a Chinese y-axis title goes on the left)."""
    fig.update_layout(**LEGEND_ON_TOP, margin_t=72 if fig.layout.title.text else 36)
    return fig


def _lines(series: Sequence[tuple[str, np.ndarray]], *, title: str, x_title: str, y_title: str,
           height: int = 300) -> go.Figure:
    """One line with markers per ``(name, values)`` against the index 0..d-1, legend on top."""
    traces = [go.Scatter(x=np.arange(len(values)), y=np.asarray(values, np.float32), name=name,
                         mode="lines+markers", marker=dict(size=4), line=dict(width=1.5, color=PALETTE[n]))
              for n, (name, values) in enumerate(series)]
    fig = _legend_on_top(figure(*traces, title=title, height=height))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    return fig


def gamma_beta_figure(gamma: np.ndarray, beta: np.ndarray | None, *, names: tuple[str, str], title: str,
                      x_title: str) -> go.Figure:
    """The learned gain γ (and bias β, when the norm has one) of every feature, with dotted lines at
    their starting values 1 and 0."""
    series = [(names[0], gamma)] + ([(names[1], beta)] if beta is not None else [])
    fig = _lines(series, title=title, x_title=x_title, y_title="")
    for start in (1.0, 0.0) if beta is not None else (1.0,):
        fig.add_hline(y=start, line=GUIDE)
    return fig


def normalised_heatmap(values: np.ndarray, tokens: Sequence[str], *, title: str, x_title: str, y_title: str,
                       hover: str) -> go.Figure:
    """(n, d) normalised vectors, one row per token, on the diverging scale clipped at ±3."""
    return heatmap(values, y_tokens=tokens, title=title, x_title=x_title, y_title=y_title, hover=hover,
                   zmin=-NORMALISED_BOUND, zmax=NORMALISED_BOUND, colorscale=DIVERGING)


def feature_means_figure(with_pads: np.ndarray, real_only: np.ndarray, *, names: tuple[str, str], title: str,
                         x_title: str, y_title: str) -> go.Figure:
    """Each feature's mean over the batch, ``<pad>`` positions counted and not: the gap is what the
    pads pull BatchNorm's statistics by."""
    return _lines([(names[0], with_pads), (names[1], real_only)], title=title, x_title=x_title, y_title=y_title)


def rms_layer_figure(layer: np.ndarray, rms: np.ndarray, *, names: tuple[str, str], title: str, x_title: str,
                     y_title: str) -> go.Figure:
    """One token's vector normalised by LayerNorm and by RMSNorm, feature by feature."""
    fig = _lines([(names[0], layer), (names[1], rms)], title=title, x_title=x_title, y_title=y_title)
    fig.add_hline(y=0.0, line=GUIDE)
    return fig


# ------------------------------------------------------------------ the two wirings

_BOX_HALF_WIDTH = 2.2
_STEPS = {  # placement: (bottom to top) the boxes of one sublayer connection and where ⊕ sits
    "post": (("sublayer", 3.0), ("add", 5.6), ("norm", 7.4)),
    "pre": (("norm", 2.8), ("sublayer", 4.9), ("add", 7.4)),
}
_BOX_HEIGHT, _ADD_RADIUS, _SPLIT_Y, _SIDE_X, _TOP_Y = 1.3, 0.45, 1.4, 1.2, 10.4


def _arrow(fig: go.Figure, x0: float, y0: float, x1: float, y1: float) -> None:
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                       showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.5, arrowcolor=EDGE)


def _box(fig: go.Figure, y: float, text: str, fill: str, dashed: bool = False) -> None:
    fig.add_shape(type="rect", x0=5 - _BOX_HALF_WIDTH, x1=5 + _BOX_HALF_WIDTH, y0=y, y1=y + _BOX_HEIGHT,
                  fillcolor=fill, line=dict(color=EDGE, width=1.5, dash="dash" if dashed else "solid"), layer="below")
    fig.add_annotation(x=5, y=y + _BOX_HEIGHT / 2, text=text, showarrow=False, font=dict(size=13, color=TEXT))


def wiring_figure(placement: str, labels: Mapping[str, str]) -> go.Figure:
    """One sublayer connection drawn bottom to top, as the paper draws its layers: post-norm
    ``LayerNorm(x + Sublayer(x))`` or pre-norm ``x + Sublayer(LayerNorm(x))`` (which also ends the
    stack with a final norm, drawn dashed).

    ``labels``: "title", "x" (the input), "sublayer", "norm", "out" (where the result goes) and, for
    pre-norm, "final" (the stack's last norm).
    """
    fig = figure(title=labels["title"], height=380)
    fig.add_annotation(x=5, y=0.35, text=labels["x"], showarrow=False, font=dict(size=13, color=TEXT))
    y = _SPLIT_Y
    add_y = 0.0
    for step, bottom in _STEPS[placement]:
        if step == "add":
            add_y = bottom
            _arrow(fig, 5, y, 5, add_y - _ADD_RADIUS)
            fig.add_trace(go.Scatter(x=[5], y=[add_y], mode="markers", hoverinfo="skip", marker=dict(
                symbol="circle-cross", size=24, color="white", line=dict(color=EDGE, width=1.5))))
            y = add_y + _ADD_RADIUS
            continue
        _arrow(fig, 5, y, 5, bottom)
        _box(fig, bottom, labels[step], NORM_FILL if step == "norm" else SUBLAYER_FILL)
        y = bottom + _BOX_HEIGHT
    fig.add_shape(type="line", x0=5, x1=5, y0=0.7, y1=_SPLIT_Y, line=dict(color=EDGE, width=1.5))
    fig.add_shape(type="path", path=f"M 5 {_SPLIT_Y} L {_SIDE_X} {_SPLIT_Y} L {_SIDE_X} {add_y}",
                  line=dict(color=EDGE, width=1.5))
    _arrow(fig, _SIDE_X, add_y, 5 - 0.7 * _ADD_RADIUS, add_y)
    _arrow(fig, 5, y, 5, _TOP_Y - 0.2)
    fig.add_annotation(x=5, y=_TOP_Y, text=labels["out"], showarrow=False, font=dict(size=12, color=TEXT),
                       yanchor="bottom")
    if placement == "pre":
        _box(fig, _TOP_Y + 0.9, labels["final"], NORM_FILL, dashed=True)
    fig.update_xaxes(visible=False, range=[0, 10], fixedrange=True)
    fig.update_yaxes(visible=False, range=[0, 12.8], fixedrange=True)
    fig.update_layout(showlegend=False, plot_bgcolor="rgba(0,0,0,0)")
    return fig


# ------------------------------------------------------------------ gradients at initialisation


def gradient_figure(norms: Mapping[str, np.ndarray], tick_labels: Sequence[str], *, names: Mapping[str, str],
                    title: str, x_title: str, y_title: str, split: int, floor: float | None = None,
                    floor_label: str = "") -> go.Figure:
    """Each layer's gradient norm on a log axis, one line per wiring (``norms``: wiring → (2·L,)), layers
    in forward order; a dotted line between the encoder's ``split`` layers and the decoder's.

    With ``floor`` (the smallest norm the computation resolves), a layer below it is drawn on the floor
    as an open down-triangle, its true value in the hover, and a dotted line labelled ``floor_label``
    marks the floor: a log axis would otherwise spend dozens of decades on rounding noise.
    """
    x = np.arange(len(tick_labels))
    gap_x = np.insert(x.astype(float), split, split - 0.5)  # a gap: no line from encoder to decoder
    gap_ticks = np.insert(np.asarray(tick_labels, object), split, "")
    traces = []
    for n, (wiring, values) in enumerate(norms.items()):
        values = np.insert(np.asarray(values, np.float64), split, np.nan)
        below = values < floor if floor is not None else np.zeros(len(values), bool)
        traces.append(go.Scatter(
            x=gap_x, y=np.where(below, floor or 0.0, values), name=names[wiring], mode="lines+markers",
            marker=dict(size=np.where(below, 9, 7), symbol=np.where(below, "triangle-down-open", "circle")),
            line=dict(width=2, color=PALETTE[n]), connectgaps=False, customdata=values, text=gap_ticks,
            hovertemplate="%{text}: %{customdata:.3g}<extra>%{fullData.name}</extra>"))
    fig = _legend_on_top(figure(*traces, title=title, height=360))
    fig.add_vline(x=split - 0.5, line=GUIDE)
    if floor is not None:
        fig.add_hline(y=floor, line=GUIDE)
        fig.add_annotation(x=0, xref="paper", xanchor="left", y=np.log10(floor), yref="y", yanchor="bottom",
                           text=floor_label, showarrow=False, font=dict(size=11, color=TEXT))  # log axis: log10(y)
    fig.update_xaxes(title=x_title, tickmode="array", tickvals=list(x), ticktext=list(tick_labels))
    fig.update_yaxes(title=y_title, type="log", exponentformat="power")
    return fig
