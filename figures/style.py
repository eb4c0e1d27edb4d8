"""Colours and the plain figure every chart starts from.

One convention for every chart: a diverging scale is red for positive and blue for negative
(:data:`DIVERGING`), centred on zero; weights and probabilities (0 to 1) use :data:`SEQUENTIAL`.
Streamlit applies the app's theme (fonts, background) when it draws a figure.
"""
from __future__ import annotations

import re

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


TITLE_LINE_PX = 22  # the height of one line of axis title
_CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")  # Chinese characters and full-width forms


def _height_above(fig: go.Figure, top: float) -> float:
    """Pixels taken by the titles that already sit on the line ``top`` (paper) above a plot: the
    subplot titles of ``make_subplots``, one 1.3 × font-size line per ``<br>``-separated line."""
    taken = 0.0
    for note in fig.layout.annotations:
        if note.yref == "paper" and note.yanchor == "bottom" and note.y is not None and abs(note.y - top) < 0.01:
            lines = str(note.text or "").count("<br>") + 1
            taken = max(taken, lines * 1.3 * ((note.font.size if note.font and note.font.size else 16)))
    return taken


def upright_axis_titles(fig: go.Figure) -> go.Figure:
    """Write each vertical axis title that holds Chinese across, above the plot from its axis inwards,
    instead of turned on its side (plotly turns every y-axis title by 90°, which lays Chinese
    characters down), over any subplot title already there; the top margin grows by one line for
    it. Latin titles are left as they are.
    Changes ``fig`` and returns it."""
    moved = False
    for name in [key for key in fig.layout.to_plotly_json() if key.startswith("yaxis")]:
        axis = fig.layout[name]
        text = axis.title.text if axis.title else None
        if not text or not _CJK.search(text):
            continue
        x_axis = axis.anchor if axis.anchor and axis.anchor != "free" else "x"
        on_right = axis.side == "right"
        top = axis.domain[1] if axis.domain else 1
        fig.add_annotation(text=text, showarrow=False, xref=f"{x_axis} domain", yref=f"y{name[5:]} domain",
                           x=1 if on_right else 0, y=1, xanchor="right" if on_right else "left", yanchor="bottom",
                           yshift=4 + _height_above(fig, top), font=axis.title.font.to_plotly_json())
        axis.title.text = None
        moved = True
    if moved:  # room above the plot for the line, so it neither meets the title nor hides under the plot
        margin = fig.layout.margin.t if fig.layout.margin.t is not None else 80
        height = fig.layout.height + TITLE_LINE_PX if fig.layout.height else None
        fig.update_layout(margin_t=margin + TITLE_LINE_PX, height=height)
    return fig


HIGHLIGHT_COLOR = "#ff8700"  # the picture of the intermediate selected in a code panel


def outline(fig: go.Figure) -> go.Figure:
    """``fig`` framed in :data:`HIGHLIGHT_COLOR`: the picture that shows what a code panel selected."""
    fig.add_shape(type="rect", xref="paper", yref="paper", x0=0, y0=0, x1=1, y1=1, layer="above",
                  line=dict(color=HIGHLIGHT_COLOR, width=3), fillcolor="rgba(0,0,0,0)")
    return fig
