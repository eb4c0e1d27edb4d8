""""Use mine"'s own picture: the loss at each target position, the model's loss function beside the learner's.
(The other "use mine" views are attention maps, drawn by :func:`figures.heatmap.heatmap`.)"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.labels import display_token
from figures.style import PALETTE, figure


def loss_bars(tokens: Sequence[str], ours: np.ndarray, yours: np.ndarray, *, names: Sequence[str], title: str,
              x_title: str, y_title: str) -> go.Figure:
    """Two bars per target position (the label it must predict): the reference loss and the learner's.
    A position whose label is padding has no loss (NaN): no bar."""
    x = [f"{i}:{html.escape(display_token(token))}" for i, token in enumerate(tokens)]
    bars = [go.Bar(x=x, y=np.asarray(values, float), name=html.escape(name), marker_color=colour,
                   hovertemplate="%{x}: %{y:.4g}<extra>" + html.escape(name) + "</extra>")
            for name, values, colour in zip(names, (ours, yours), (PALETTE[0], PALETTE[3]))]
    fig = figure(*bars, title=html.escape(title), barmode="group", height=320,  # legend top right: the axis title is left
                 legend=dict(orientation="h", y=1.22, x=1, xanchor="right"))
    fig.update_layout(margin=dict(l=10, r=10, t=70, b=10))
    fig.update_xaxes(title=x_title, type="category")
    fig.update_yaxes(title=y_title)
    return fig
