"""The output-and-loss page's pictures: the decoder's last vector, one position's logits and
probabilities, the temperature curve, the sentence's per-position loss, the right token's probability
against 1 − ε, the one-hot and smoothed targets, and the loss of a model as a function of p(right).

Every builder takes numbers and already-translated texts. The right token is red everywhere.
"""
from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.decoding import bar_value
from figures.heatmap import heatmap
from figures.labels import axis_labels, token_label
from figures.style import DIVERGING, PALETTE, figure

TARGET_COLOR = "#d62728"  # the right token
OTHER_COLOR = "#1f77b4"
RIGHT_COLOR = "#2ca02c"  # a position the model gets right
WRONG_COLOR = "#d62728"
CHOSEN_EDGE = "#111111"  # the outline of the chosen position's bar
ROW_PX = 24  # per listed token in the bar charts
# Legends sit inside the plot, at the right and half way down, where the curves leave room: above the
# plot they would meet the Chinese axis titles that figures.style.upright_axis_titles writes there.
INSIDE_LEGEND = dict(x=0.98, xanchor="right", y=0.5, yanchor="middle")
LOG_FLOOR = 1e-6  # the targets' log axis starts no lower than this


def _mark_target(labels: list[str], target_index: int) -> list[str]:
    """Tick labels with the target's in bold red."""
    return [f'<span style="color:{TARGET_COLOR}"><b>{text}</b></span>' if n == target_index else text
            for n, text in enumerate(labels)]


def last_vector(hidden: np.ndarray, *, title: str, x_title: str, hover: str) -> go.Figure:
    """The decoder's last vector at one position: ``d_model`` values as one strip, red positive."""
    h = np.asarray(hidden, dtype=np.float64).reshape(1, -1)
    bound = float(np.abs(h).max()) or 1.0
    fig = heatmap(h, title=title, x_title=x_title, zmin=-bound, zmax=bound, colorscale=DIVERGING, hover=hover,
                  height=150)
    # The bar is ~60 px tall: plotly's five or more numbers on it overlap, three do not
    mark = _round_down(bound)
    fig.update_traces(colorbar=dict(tickmode="array", tickvals=[-mark, 0, mark],
                                    ticktext=[f"{-mark:g}".replace("-", "−"), "0", f"{mark:g}"]))
    fig.update_yaxes(showticklabels=False)
    return fig


def _round_down(value: float) -> float:
    """``value`` (> 0) rounded down to one significant digit, so that it lies on a scale reaching ``value``."""
    step = 10.0 ** math.floor(math.log10(value))
    return math.floor(value / step + 1e-9) * step


def logits_and_probs(tokens: Sequence[str], logits: Sequence[float], probs: Sequence[float], target_index: int, *,
                     titles: tuple[str, str], hover: tuple[str, str]) -> go.Figure:
    """One position's listed tokens (most likely on top) with their logit (left) and probability (right).

    The target's bars and label are red; a logit can be negative, so its axis is centred on zero.
    """
    k = len(tokens)
    labels = [token_label(tok) for tok in tokens]
    colors = [TARGET_COLOR if n == target_index else OTHER_COLOR for n in range(k)]
    rows = list(range(k))
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06, subplot_titles=list(titles))
    fig.add_trace(go.Bar(x=np.round(logits, 4), y=rows, orientation="h", marker_color=colors, customdata=labels,
                         hovertemplate=hover[0] + "<extra></extra>", text=[f"{z:.2f}" for z in logits],
                         textposition="outside", cliponaxis=False, showlegend=False), row=1, col=1)
    fig.add_trace(go.Bar(x=np.round(probs, 4), y=rows, orientation="h", marker_color=colors, customdata=labels,
                         hovertemplate=hover[1] + "<extra></extra>", text=[bar_value(p) for p in probs],
                         textposition="outside", cliponaxis=False, showlegend=False), row=1, col=2)
    ticks = axis_labels(tokens)
    ticks["ticktext"] = _mark_target(list(ticks["ticktext"]), target_index)
    fig.update_yaxes(**ticks, autorange="reversed", tickfont=dict(size=13), row=1, col=1)
    spread = max((abs(float(z)) for z in logits), default=1.0) or 1.0
    fig.update_xaxes(range=[-spread * 1.35, spread * 1.35], zeroline=True, row=1, col=1)
    fig.update_xaxes(range=[0, 1.3], row=1, col=2)
    fig.update_layout(height=max(260, ROW_PX * k + 90), margin=dict(l=10, r=10, t=40, b=10))
    fig.update_annotations(font=dict(size=14))
    return fig


def temperature_curve(temperatures: np.ndarray, top: np.ndarray, target: np.ndarray, entropy: np.ndarray,
                      current: float, max_entropy: float, *, names: tuple[str, str, str], x_title: str,
                      y_title: str, y2_title: str) -> go.Figure:
    """The top probability, the target's probability (left axis) and the entropy (right axis, up to
    log V) against the temperature, with the chosen temperature as a vertical line."""
    fig = figure(
        go.Scatter(x=temperatures, y=np.round(top, 4), name=html.escape(names[0]), line=dict(color=OTHER_COLOR)),
        go.Scatter(x=temperatures, y=np.round(target, 4), name=html.escape(names[1]),
                   line=dict(color=TARGET_COLOR, dash="dot")),
        go.Scatter(x=temperatures, y=np.round(entropy, 4), name=html.escape(names[2]), yaxis="y2",
                   line=dict(color=PALETTE[2])),
        height=300,
        legend=INSIDE_LEGEND,
        yaxis2=dict(overlaying="y", side="right", range=[0, max_entropy * 1.05], title=y2_title, showgrid=False),
    )
    fig.add_vline(x=current, line=dict(color="#555", dash="dash", width=1))
    fig.update_xaxes(title=x_title)
    fig.update_layout(yaxis=dict(title=y_title, range=[0, 1.05]), margin=dict(l=10, r=10, t=40, b=10),
                      hovermode="x unified")
    return fig


def position_losses(tokens: Sequence[str], losses: Sequence[float], correct: Sequence[bool], mean: float,
                    chosen: int | None, *, mean_label: str, x_title: str, y_title: str, hover: str) -> go.Figure:
    """The loss at each position (green where the model's top token is right, red where not), the
    mean as a dashed line, and the chosen position outlined."""
    n = len(tokens)
    widths = [2.5 if i == chosen else 0 for i in range(n)]
    bars = go.Bar(x=list(range(n)), y=np.round(losses, 4), customdata=[token_label(tok) for tok in tokens],
                  marker=dict(color=[RIGHT_COLOR if ok else WRONG_COLOR for ok in correct],
                              line=dict(color=CHOSEN_EDGE, width=widths)),
                  hovertemplate=hover + "<extra></extra>", showlegend=False)
    fig = figure(bars, height=300)
    fig.add_hline(y=mean, line=dict(color="#555", dash="dash", width=1.5), annotation_text=html.escape(mean_label),
                  annotation_position="top left")
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    top = max([float(np.max(losses)) if n else 0.0, mean, 0.1])
    fig.update_yaxes(title=y_title, range=[0, top * 1.15])
    return fig


def right_token_probs(tokens: Sequence[str], probs: Sequence[float], ceiling: float | None, chosen: int | None, *,
                      ceiling_label: str, x_title: str, y_title: str, hover: str) -> go.Figure:
    """p(right token) at each position as bars, with the 1 − ε a label-smoothed model tops out at as a line."""
    n = len(tokens)
    widths = [2.5 if i == chosen else 0 for i in range(n)]
    bars = go.Bar(x=list(range(n)), y=np.round(probs, 4), customdata=[token_label(tok) for tok in tokens],
                  marker=dict(color=TARGET_COLOR, line=dict(color=CHOSEN_EDGE, width=widths)),
                  hovertemplate=hover + "<extra></extra>", showlegend=False)
    fig = figure(bars, height=300)
    if ceiling is not None:
        fig.add_hline(y=ceiling, line=dict(color="#555", dash="dash", width=1.5),
                      annotation_text=html.escape(ceiling_label), annotation_position="top left")
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    fig.update_yaxes(title=y_title, range=[0, 1.05])
    return fig


def targets(tokens: Sequence[str], one_hot: Sequence[float], smoothed: Sequence[float], model: Sequence[float],
            target_index: int, *, names: tuple[str, str, str], x_title: str, hover: str) -> go.Figure:
    """For the listed tokens: the one-hot target, the smoothed target and the model's probability, as
    grouped horizontal bars on a log scale (ε / (V − 2) is hundreds of times smaller than 1 − ε; a
    0 has no bar), the target's label in red."""
    k = len(tokens)
    labels = [token_label(tok) for tok in tokens]
    rows = list(range(k))
    colors = ("#9aa0aa", PALETTE[3], OTHER_COLOR)
    traces = [go.Bar(x=np.round(values, 8), y=rows, orientation="h", name=html.escape(name), marker_color=color,
                     customdata=labels, hovertemplate=hover + "<extra></extra>")
              for values, name, color in zip((one_hot, smoothed, model), names, colors)]
    positive = [float(v) for values in (one_hot, smoothed, model) for v in values if v > 0]
    low = max(min(positive, default=1e-3) / 2, LOG_FLOOR)
    fig = figure(*traces, height=max(300, 3 * 9 * k + 110), barmode="group",
                 legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", yref="paper"))
    ticks = axis_labels(tokens)
    ticks["ticktext"] = _mark_target(list(ticks["ticktext"]), target_index)
    fig.update_yaxes(**ticks, autorange="reversed", tickfont=dict(size=13))
    fig.update_xaxes(title=x_title, type="log", range=[np.log10(low), 0.02], dtick=1, exponentformat="power")
    fig.update_layout(margin=dict(l=10, r=10, t=60, b=10))
    return fig


def loss_curve(p: np.ndarray, one_hot_loss: np.ndarray, smoothed_loss: np.ndarray, epsilon: float, floor: float, *,
               names: tuple[str, str], best_label: str, x_title: str, y_title: str) -> go.Figure:
    """The loss of a model that gives the right token ``p``, against the one-hot target (falls to 0 at
    p = 1) and against the smoothed one (lowest, ``floor``, at p = 1 − ε, then up again)."""
    finite_top = float(np.nanmax(np.where(np.isfinite(smoothed_loss), smoothed_loss, np.nan)))
    top = min(max(finite_top, 1.0), 6.0)
    fig = figure(
        go.Scatter(x=p, y=np.round(one_hot_loss, 4), name=html.escape(names[0]), line=dict(color="#9aa0aa")),
        go.Scatter(x=p, y=np.round(smoothed_loss, 4), name=html.escape(names[1]), line=dict(color=PALETTE[3])),
        go.Scatter(x=[1 - epsilon], y=[round(floor, 4)], mode="markers+text", text=[html.escape(best_label)],
                   textposition="top left", marker=dict(size=10, color=TARGET_COLOR), showlegend=False,
                   hoverinfo="skip", cliponaxis=False),
        height=320,
        legend={**INSIDE_LEGEND, "y": 0.98, "yanchor": "top"},
    )
    fig.add_vline(x=1 - epsilon, line=dict(color=TARGET_COLOR, dash="dot", width=1))
    fig.update_xaxes(title=x_title, range=[0, 1])
    fig.update_yaxes(title=y_title, range=[0, top])
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10), hovermode="x unified")
    return fig


def softmax_vs_ratio(shifted: Sequence[float], softmax: Sequence[float], ratio: Sequence[float] | None, *,
                     names: tuple[str, str], title: str, x_title: str, y_title: str, hover: str) -> go.Figure:
    """Each score's probability by softmax and by the plain ratio, side by side (no ratio bars where it
    divides by zero); a ratio below 0 goes below the axis, where no probability can be."""
    labels = [f"x{i + 1} + c = {value:g}" for i, value in enumerate(shifted)]
    fig = figure(title=title, height=340)
    fig.add_bar(x=labels, y=list(softmax), name=names[0], marker_color=PALETTE[0], hovertemplate=hover,
                text=[bar_value(p) for p in softmax], textposition="outside", cliponaxis=False)
    if ratio is not None:
        fig.add_bar(x=labels, y=list(ratio), name=names[1], marker_color=PALETTE[1], hovertemplate=hover,
                    text=[f"{r:.2f}" for r in ratio], textposition="outside", cliponaxis=False)
    low = min([0.0, *(ratio or ())])
    high = max([1.0, *softmax, *(ratio or ())])
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(title=y_title, range=[low - 0.1 * (high - low) if low < 0 else 0, high * 1.12], zeroline=True,
                     zerolinecolor="#444", zerolinewidth=1.5)
    fig.update_xaxes(title=x_title)
    return fig
