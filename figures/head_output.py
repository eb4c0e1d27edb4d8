"""What one attention block produces, as one figure of three small heatmaps side by side.

Left: the chosen head's output weights · V (T_q × d_k). Middle: every head's output side by side
(T_q × H·d_k), the chosen head's columns outlined. Right: the block's output, the middle matrix
times W^O plus b (T_q × d_model). Rows are the queries' tokens, top to bottom; no values are written
in the cells (the hover gives them).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.labels import axis_labels
from figures.style import DIVERGING, PALETTE

MIN_PANEL_SHARE = 0.4  # the narrowest panel is at least this share of the widest one (d_k is d_model / H)
OUTLINE = PALETTE[3]  # the chosen head's columns in the concatenation


def _bound(*matrices: np.ndarray) -> float:
    """The largest |value| of ``matrices``: the symmetric end of their diverging colour scale."""
    return max((float(np.abs(m).max()) for m in matrices if m.size), default=1.0) or 1.0


def panel_widths(*columns: int) -> list[float]:
    """Relative widths of panels with ``columns`` columns each: proportional, none under :data:`MIN_PANEL_SHARE`."""
    widest = max(columns)
    raw = [max(c, MIN_PANEL_SHARE * widest) for c in columns]
    return [w / sum(raw) for w in raw]


def head_output_figure(head: np.ndarray, concat: np.ndarray, output: np.ndarray, query_tokens: Sequence[str], *,
                       chosen: int, titles: Sequence[str], x_title: str, hover: str) -> go.Figure:
    """``head`` (T_q, d_k), ``concat`` (T_q, H·d_k) with head ``chosen``'s (1-based) columns outlined,
    and ``output`` (T_q, d_model), each on a diverging scale centred on 0 (the first two share one).

    ``titles``: three panel titles (already translated and escaped). ``hover`` may use ``%{y}``
    (the query's token), ``%{x}`` (the column) and ``%{z}``.
    """
    head, concat, output = (np.asarray(m, dtype=np.float32) for m in (head, concat, output))
    n_queries, d_k = head.shape
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, subplot_titles=list(titles), horizontal_spacing=0.04,
                        column_widths=panel_widths(d_k, concat.shape[1], output.shape[1]))
    for col, (matrix, axis) in enumerate(((head, "coloraxis"), (concat, "coloraxis"), (output, "coloraxis2")),
                                         start=1):
        fig.add_trace(go.Heatmap(z=matrix, coloraxis=axis, hovertemplate=hover + "<extra></extra>"), row=1, col=col)
        fig.update_xaxes(title=x_title if col == 2 else None, showgrid=False, zeroline=False, row=1, col=col,
                         nticks=3 if col == 1 else None)  # the narrow panel: few labels, none turned on their side
    for boundary in range(d_k, concat.shape[1], d_k):  # where one head's columns end and the next one's begin
        fig.add_shape(type="line", x0=boundary - 0.5, x1=boundary - 0.5, y0=-0.5, y1=n_queries - 0.5,
                      line=dict(color="#ffffff", width=1), row=1, col=2)
    fig.add_shape(type="rect", x0=(chosen - 1) * d_k - 0.5, x1=chosen * d_k - 0.5, y0=-0.5, y1=n_queries - 0.5,
                  line=dict(color=OUTLINE, width=3), row=1, col=2)
    fig.update_yaxes(**axis_labels(query_tokens), autorange="reversed", showgrid=False, zeroline=False)
    first = _bound(head, concat)
    second = _bound(output)
    fig.update_layout(
        coloraxis=dict(colorscale=DIVERGING, cmin=-first, cmax=first, showscale=False),
        coloraxis2=dict(colorscale=DIVERGING, cmin=-second, cmax=second, showscale=False),
        height=max(240, 22 * n_queries + 130), margin=dict(l=10, r=10, t=60, b=10),
    )
    fig.update_annotations(font_size=12)
    return fig
