"""The positional-encoding page's pictures, from the numbers of :mod:`explain.positional`.

Tables and score matrices use the diverging scale (red = positive, blue = negative); attention
maps the sequential one. Lines share :data:`figures.style.PALETTE`.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.heatmap import heatmap
from figures.masks import TITLE_LINE_PX, wrap_title
from figures.style import DIVERGING, PALETTE, figure

COLORBAR_ROOM = 36  # px under the table for its colour bar, laid across
DASHES, WIDTHS = ("solid", "dash", "dot"), (6, 3.5, 2)  # overlaid lines stay visible under each other
EXAMPLE_STYLES = [
    {"selector": "", "props": "border-collapse: collapse; font-size: 0.9rem; margin-bottom: 0.5rem"},
    {"selector": "th, td", "props": "border: 1px solid #dfe1e6; padding: 3px 10px; text-align: right"},
    {"selector": "th", "props": "background: #f4f4f7; color: #5c6070; font-weight: 500"},
    {"selector": "td", "props": "font-family: 'Source Code Pro', monospace"},
]


def frequency_figure(table: np.ndarray, pair: int, wavelength: float, table_labels: tuple[str, str, str],
                     wave_labels: tuple[str, str, str, str]) -> go.Figure:
    """The (positions, d_model) table with pair ``pair``'s columns framed, and their sine and cosine
    beside it, dotted at every whole ``wavelength``: one figure of two panels.

    ``table_labels``: (x title, y title, hover); ``wave_labels``: (sin name, cos name, x title,
    one-wavelength label).
    """
    x_title, y_title, hover = table_labels
    sin_name, cos_name, wave_x_title, wave_label = wave_labels
    positions = table.shape[0]
    a, b = 2 * pair, 2 * pair + 1
    fig = make_subplots(rows=1, cols=2, column_widths=[5, 4], horizontal_spacing=0.11)
    picture = heatmap(table, x_title=x_title, y_title=y_title, zmin=-1, zmax=1, colorscale=DIVERGING, hover=hover)
    fig.add_trace(picture.data[0], row=1, col=1)
    fig.update_xaxes(picture.layout.xaxis, row=1, col=1)
    fig.update_yaxes(picture.layout.yaxis, row=1, col=1)
    left, right = fig.layout.xaxis.domain
    # Across, under the table: between the panels it met the sine chart's numbers on a narrow screen
    fig.update_traces(colorbar=dict(orientation="h", x=(left + right) / 2, xanchor="center", len=right - left,
                                    lenmode="fraction", yref="container", y=0, yanchor="bottom", thickness=10,
                                    ypad=6),
                      selector=dict(type="heatmap"))
    fig.add_shape(type="rect", x0=a - 0.5, x1=a + 1.5, y0=-0.5, y1=positions - 0.5,
                  line=dict(color="#111111", width=2), row=1, col=1)

    x = np.arange(positions)
    mode = "lines+markers" if positions <= 80 else "lines"
    for column, name in ((a, sin_name), (b, cos_name)):
        fig.add_trace(go.Scatter(x=x, y=table[:, column], name=name, mode=mode, marker=dict(size=5)), row=1, col=2)
    for n in range(1, int((positions - 1) // wavelength) + 1):
        fig.add_vline(x=n * wavelength, line=dict(color="#888888", dash="dot", width=1), row=1, col=2)
    if wavelength < positions:
        fig.add_annotation(x=wavelength, y=1.05, text=wave_label, showarrow=False, yanchor="bottom",
                           font=dict(size=11), row=1, col=2)
    fig.update_xaxes(title=wave_x_title, row=1, col=2)
    fig.update_yaxes(range=[-1.15, 1.3], row=1, col=2)
    fig.update_layout(height=min(520, max(300, 4 * positions + 140)) + 30 + COLORBAR_ROOM,
                      margin=dict(l=10, r=10, t=40, b=10 + COLORBAR_ROOM),
                      colorway=list(PALETTE),
                      legend=dict(orientation="h", x=1, xanchor="right", y=1, yanchor="bottom"))
    return fig


def similarity_figure(similarity: np.ndarray, half: float, labels: tuple[str, str, str]) -> go.Figure:
    """PE(p) · PE(q) for every pair of positions ((P, P)), on a scale of ±``half`` (= d_model / 2)."""
    x_title, y_title, hover = labels
    positions = similarity.shape[0]
    return heatmap(similarity, x_title=x_title, y_title=y_title, zmin=-half, zmax=half, colorscale=DIVERGING,
                   hover=hover, height=min(460, max(300, 3 * positions + 140)))


def offset_figure(values: np.ndarray, names: Sequence[str], labels: tuple[str, str]) -> go.Figure:
    """PE(p) · PE(p+k) against k, one line per start p (``values``: (starts, offsets)): they coincide."""
    x_title, y_title = labels
    k = np.arange(values.shape[1])
    fig = figure(
        *[go.Scatter(x=k, y=row, mode="lines", name=name,
                     line=dict(dash=DASHES[n % 3], width=WIDTHS[n % 3], color=PALETTE[n]))
          for n, (row, name) in enumerate(zip(values, names))],
        height=300, legend=dict(orientation="h", y=1.12, x=0),
    )
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    return fig


def example_table_html(frame: pd.DataFrame) -> str:
    """The worked example (columns: dimension, pair, function, angle, value, already named) as an
    HTML table: angles to 4 decimals, values to 6, everything escaped; it scrolls sideways in its
    own box on a narrow screen instead of widening the page."""
    angle, value = frame.columns[3], frame.columns[4]
    styler = (frame.style.hide(axis="index").set_uuid("pe_example").set_table_styles(EXAMPLE_STYLES)
              .format({angle: "{:.4f}", value: "{:.6f}"}, escape="html").format_index(escape="html", axis=1))
    return f'<div style="overflow-x: auto">{styler.to_html()}</div>'


def attention_maps(maps: Sequence[tuple[np.ndarray, Sequence[str], str]], axis: tuple[str, str]) -> list[go.Figure]:
    """One attention heatmap per ``(weights (S, S), tokens, title)``, all on one colour scale."""
    x_title, y_title = axis
    top = max(max(float(weights.max()) for weights, _, _ in maps), 1e-9)
    return [heatmap(weights, x_tokens=tokens, y_tokens=tokens, title=title, x_title=x_title, y_title=y_title,
                    zmin=0, zmax=top, height=min(400, max(240, 16 * len(tokens) + 130)))
            for weights, tokens, title in maps]


def rope_circle_figure(points: np.ndarray, title: str) -> go.Figure:
    """A query pair turned by RoPE at positions 0..n-1 (``points``: (n, 2)), as spokes of a circle."""
    radius = float(np.hypot(*points[0]))
    theta = np.linspace(0, 2 * math.pi, 121)
    spokes_x = [v for px in points[:, 0] for v in (0.0, float(px), None)]
    spokes_y = [v for py in points[:, 1] for v in (0.0, float(py), None)]
    labels = [str(p) for p in range(len(points))]
    fig = figure(
        go.Scatter(x=radius * np.cos(theta), y=radius * np.sin(theta), mode="lines", hoverinfo="skip",
                   line=dict(color="#bbbbbb", width=1), showlegend=False),
        go.Scatter(x=spokes_x, y=spokes_y, mode="lines", hoverinfo="skip", line=dict(color=PALETTE[0], width=1),
                   showlegend=False),
        go.Scatter(x=points[:, 0], y=points[:, 1], mode="markers+text", text=labels, textposition="top center",
                   marker=dict(size=8, color=PALETTE[0]), hovertemplate="p = %{text}<extra></extra>",
                   showlegend=False),
        title=title, height=340,
    )
    fig.update_xaxes(scaleanchor="y", scaleratio=1, zeroline=True, showticklabels=False)
    fig.update_yaxes(zeroline=True, showticklabels=False)
    return fig


def rope_matrix_figure(scores: np.ndarray, title: str, labels: tuple[str, str, str]) -> go.Figure:
    """RoPE scores (P, P): query position down, key position across, centred on zero."""
    x_title, y_title, hover = labels
    lim = float(max(np.abs(scores).max(), 1e-9))
    return heatmap(scores, title=title, x_title=x_title, y_title=y_title, zmin=-lim, zmax=lim, colorscale=DIVERGING,
                   hover=hover, height=340)


def rope_lines_figure(rope: np.ndarray, additive: np.ndarray, starts: Sequence[int], rope_names: Sequence[str],
                      additive_names: Sequence[str], title: str, labels: tuple[str, str]) -> go.Figure:
    """Score against offset k for query positions ``starts`` (one name each): RoPE's lines (blue)
    coincide, the added table's (orange) do not. ``rope``/``additive``: (P, P) scores."""
    x_title, y_title = labels
    offsets = np.arange(rope.shape[0] - max(starts))
    traces = [go.Scatter(x=offsets, y=rope[p, p + offsets], mode="lines", name=rope_names[n],
                         line=dict(color=PALETTE[0], dash=DASHES[n], width=WIDTHS[n]))
              for n, p in enumerate(starts)]
    traces += [go.Scatter(x=offsets, y=additive[p, p + offsets], mode="lines", name=additive_names[n],
                          line=dict(color=PALETTE[3], dash=DASHES[n], width=WIDTHS[n] / 2))
               for n, p in enumerate(starts)]
    lines = wrap_title(title)  # a third of a wide page holds ~30 letters of a 14 px title: plotly would cut it
    fig = figure(*traces, title="<br>".join(lines), height=400 + TITLE_LINE_PX * (len(lines) - 1),
                 legend=dict(font=dict(size=10), orientation="h", y=-0.25, x=0))
    fig.update_layout(margin_t=fig.layout.margin.t + TITLE_LINE_PX * (len(lines) - 1))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    return fig


def binary_figure(bits: np.ndarray, sines: np.ndarray, *, titles: tuple[str, str], x_titles: tuple[str, str],
                  y_title: str, hovers: tuple[str, str]) -> go.Figure:
    """The positions' binary digits (0 blue, 1 red) beside the table's sine columns on the same scale:
    the fast columns flip like the low bits, the slow ones change like the high bits."""
    positions = bits.shape[0]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06, subplot_titles=list(titles),
                        column_widths=[0.24, 0.76])  # the bits readable on a phone too
    fig.add_trace(go.Heatmap(z=bits.astype(np.float32) * 2 - 1, customdata=bits, coloraxis="coloraxis",
                             hovertemplate=hovers[0] + "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Heatmap(z=sines.astype(np.float32), coloraxis="coloraxis",
                             hovertemplate=hovers[1] + "<extra></extra>"), row=1, col=2)
    fig.update_yaxes(title=y_title, autorange="reversed", row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_xaxes(title=x_titles[0], dtick=1, row=1, col=1)
    fig.update_xaxes(title=x_titles[1], row=1, col=2)
    fig.update_layout(coloraxis=dict(colorscale=DIVERGING, cmin=-1, cmax=1, showscale=False),
                      height=max(300, min(620, 8 * positions + 140)), margin=dict(l=10, r=10, t=50, b=10))
    return fig
