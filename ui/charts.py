"""Plotly figure builders shared by the pages.

Token labels are user text: every label is HTML-escaped (plotly reads ``<s>``, ``<b>``, ``<br>`` as
markup) and tokens are plotted at integer positions with ``tickvals``/``ticktext`` (a categorical
axis would merge two equal tokens into one tick).
"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

VISIBLE_SPACE = "␣"


def token_label(token: str) -> str:
    """A token as it should appear on an axis: escaped, with spaces and control chars visible."""
    if token == " ":
        token = VISIBLE_SPACE
    token = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in token)
    return html.escape(token)


def axis_labels(tokens: Sequence[str]) -> dict:
    """tickvals/ticktext for tokens plotted at 0..n-1 (duplicates stay separate)."""
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[token_label(t) for t in tokens])


def heatmap(
    z: np.ndarray,
    x_tokens: Sequence[str],
    y_tokens: Sequence[str],
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    zmin: float | None = 0.0,
    zmax: float | None = 1.0,
    colorscale: str = "Blues",
    masked: np.ndarray | None = None,
    hover: str = "%{y} → %{x}: %{z:.3f}",
    show_scale: bool = True,
    height: int | None = None,
    text_values: bool = False,
) -> go.Figure:
    """A (rows=y, cols=x) heatmap with token tick labels; ``masked`` cells get an ✕ marker.

    z: (len(y_tokens), len(x_tokens)). ``hover`` uses %{x}/%{y} which show the escaped tokens.
    """
    z = np.asarray(z, dtype=float)
    xs = [token_label(t) for t in x_tokens]
    ys = [token_label(t) for t in y_tokens]
    # Nested lists, not a numpy object array: plotly serialises the latter ~15x slower on every rerun.
    custom = [[[ys[i], xs[j]] for j in range(len(xs))] for i in range(len(ys))]
    fig = go.Figure(
        go.Heatmap(
            z=z, x=list(range(len(xs))), y=list(range(len(ys))), zmin=zmin, zmax=zmax, colorscale=colorscale,
            customdata=custom if len(xs) and len(ys) else None,
            hovertemplate=hover.replace("%{y}", "%{customdata[0]}").replace("%{x}", "%{customdata[1]}") + "<extra></extra>",
            showscale=show_scale,
            text=np.round(z, 2) if text_values else None,
            texttemplate="%{text}" if text_values else None,
        )
    )
    if masked is not None and np.asarray(masked).any():
        rows, cols = np.nonzero(np.asarray(masked))
        fig.add_trace(go.Scatter(x=cols, y=rows, mode="markers", marker=dict(symbol="x-thin", size=9,
                                 line=dict(width=1.5, color="#d62728")), hoverinfo="skip", showlegend=False))
    fig.update_xaxes(title=x_title, **axis_labels(x_tokens), side="bottom")
    fig.update_yaxes(title=y_title, **axis_labels(y_tokens), autorange="reversed")
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      height=height or max(220, 28 * len(ys) + 120))
    return fig
