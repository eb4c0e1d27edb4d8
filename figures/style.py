"""Colours and the plain figure every chart starts from.

One convention for every chart: a diverging scale is red for positive and blue for negative
(:data:`DIVERGING`), centred on zero; weights and probabilities (0 to 1) use :data:`SEQUENTIAL`.
Streamlit applies the app's theme (fonts, background) when it draws a figure.
"""
from __future__ import annotations

import plotly.graph_objects as go

DIVERGING = "RdBu_r"  # red = positive, blue = negative
SEQUENTIAL = "Blues"  # 0 (white) to 1 (dark blue): attention weights, probabilities
# Streamlit's category palette, so every line chart names its series in the same colours.
PALETTE = ("#0068c9", "#ff2b2b", "#29b09d", "#ff8700", "#6d3fc0", "#83c9ff", "#ffabab", "#7defa1")
MASKED_COLOR = "#d62728"  # a ✕ for a score the mask replaces by −∞ (bar charts)
MASKED_FILL = "#c4c7cf"  # the cells a mask hides (their weight is exactly 0)
MASKED_EDGE = "#7d828e"  # the outline around them: grey, so red stays free for what a page points at
TRUE_COLOR = "#2e7dd7"  # True = may attend
FALSE_COLOR = "#e3e5ea"


def figure(*traces, title: str = "", height: int = 320, **layout) -> go.Figure:
    """A figure holding ``traces`` with ``title`` on top, a compact margin and ``height`` pixels."""
    fig = go.Figure(list(traces))
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)) if title else None,
        margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        height=height,
        colorway=list(PALETTE),
        **layout,
    )
    return fig
