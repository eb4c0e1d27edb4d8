"""figures.style: Chinese vertical-axis titles are written across, above their axis."""
from __future__ import annotations

import numpy as np
from plotly.subplots import make_subplots

from figures.heatmap import heatmap
from figures.style import TITLE_LINE_PX, upright_axis_titles


def test_a_chinese_y_title_moves_above_its_axis_and_reads_across():
    plain = heatmap(np.eye(3), title="t", x_title="键（被关注）", y_title="查询（去关注）")
    top, height = plain.layout.margin.t, plain.layout.height
    fig = upright_axis_titles(plain)
    assert (fig.layout.margin.t, fig.layout.height) == (top + TITLE_LINE_PX, height + TITLE_LINE_PX)  # room for it
    assert not fig.layout.yaxis.title.text
    (note,) = fig.layout.annotations
    assert note.text == "查询（去关注）" and not note.textangle  # horizontal
    assert (note.xref, note.yref, note.x, note.y, note.yanchor) == ("x domain", "y domain", 0, 1, "bottom")
    assert fig.layout.xaxis.title.text == "键（被关注）"  # a horizontal axis title already reads across


def test_latin_titles_stay_where_plotly_puts_them():
    fig = upright_axis_titles(heatmap(np.eye(3), x_title="key", y_title="query"))
    assert fig.layout.yaxis.title.text == "query" and not fig.layout.annotations


def test_each_subplot_gets_its_title_over_its_own_axis():
    fig = make_subplots(rows=1, cols=2)
    fig.add_heatmap(z=np.eye(2), row=1, col=1)
    fig.add_heatmap(z=np.eye(2), row=1, col=2)
    fig.update_yaxes(title="位置", row=1, col=1)
    fig.update_yaxes(title="维度", row=1, col=2)
    upright_axis_titles(fig)
    assert [(a.text, a.xref, a.yref) for a in fig.layout.annotations] == [
        ("位置", "x domain", "y domain"), ("维度", "x2 domain", "y2 domain")]
