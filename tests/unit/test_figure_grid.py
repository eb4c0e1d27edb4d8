"""ui.figure_grid.combine: several finished figures drawn as one chart, each in a cell of its own."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from figures.labels import heatmap
from ui.figure_grid import COLORBAR_W, combine
from ui.frozen_figure import FrozenFigure


def bars(title: str, height: int = 300) -> go.Figure:
    fig = go.Figure(go.Bar(x=[0.2, 0.8], y=[0, 1], orientation="h"))
    fig.update_layout(title=title, height=height)
    fig.add_shape(type="rect", x0=0, x1=1, y0=0, y1=1)
    return fig


def test_each_figure_gets_its_own_axes_cell_title_and_shapes():
    z = np.array([[0.25, 0.75], [1.0, 0.0]])
    left = heatmap(z, ["a", "<b>"], ["x", "y"], title="weights")
    combined = combine([[left, bars("bars", 500)], [bars("below")]], widths=[[3, 1], [1]])
    assert isinstance(combined, FrozenFigure)
    spec = combined.to_dict()
    layout = spec["layout"]
    assert [(t["type"], t["xaxis"], t["yaxis"]) for t in spec["data"]] == [
        ("heatmap", "x", "y"), ("bar", "x2", "y2"), ("bar", "x3", "y3")]
    assert spec["data"][0]["z"] == left.to_dict()["data"][0]["z"], "the data is carried over untouched"
    # cells side by side in the first row with a 3:1 split, the third below across the width
    (a0, a1), (b0, b1), (c0, c1) = (layout[f"xaxis{s}"]["domain"] for s in ("", "2", "3"))
    # (the heatmap's cell keeps room for its colour bar inside its share)
    assert a0 == 0 and b1 == 1 and a1 < b0 and abs((a1 + COLORBAR_W - a0) / (b1 - b0) - 3) < 1e-9
    assert (c0, c1) == (0, 1)
    assert layout["yaxis3"]["domain"][1] < layout["yaxis"]["domain"][0], "the second row is below"
    # the row is as tall as its tallest figure: 500 px of 300 + 500 + two title bands + gap + margins
    assert layout["height"] > 800
    # token ticks (escaped) and reversed rows are kept; titles become annotations above each cell
    assert layout["xaxis"]["ticktext"] == ["a", "&lt;b&gt;"] and layout["yaxis"]["autorange"] == "reversed"
    assert [a["text"] for a in layout["annotations"]] == ["weights", "bars", "below"]
    assert [s["xref"] for s in layout["shapes"]] == ["x2", "x3"]
    pio.to_json(spec, validate=True)  # a valid plotly figure


def test_colour_bars_sit_beside_their_own_cell():
    z = np.eye(2)
    combined = combine([[heatmap(z, ["a", "b"], ["a", "b"]), heatmap(z, ["a", "b"], ["a", "b"])]]).to_dict()
    bars_x = [t["colorbar"]["x"] for t in combined["data"]]
    domains = [combined["layout"][f"xaxis{s}"]["domain"] for s in ("", "2")]
    assert [round(x - d[1], 3) for x, d in zip(bars_x, domains)] == [0.005, 0.005]


def test_a_legend_only_where_the_figure_alone_would_have_one():
    two_lines = go.Figure([go.Scatter(y=[1, 2], name="sin"), go.Scatter(y=[2, 1], name="cos")])
    one_bar = go.Figure(go.Bar(y=[1, 2]))
    assert combine([[one_bar, bars("b")]]).to_dict()["layout"]["showlegend"] is False
    spec = combine([[two_lines, one_bar]]).to_dict()
    assert spec["layout"]["showlegend"] is True
    assert [t.get("showlegend") for t in spec["data"]] == [None, None, False], "the lone bar stays out of it"


def test_y_titles_can_be_kept_on_the_first_cell_of_a_row_only():
    def titled(name: str) -> go.Figure:
        fig = bars(name)
        fig.update_yaxes(title="query")
        return fig

    layout = combine([[titled("a"), titled("b")]], y_title_first_only=True).to_dict()["layout"]
    assert layout["yaxis"]["title"]["text"] == "query" and "title" not in layout["yaxis2"]
    layout = combine([[titled("a"), titled("b")]]).to_dict()["layout"]
    assert layout["yaxis2"]["title"]["text"] == "query"
