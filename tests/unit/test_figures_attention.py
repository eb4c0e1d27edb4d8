"""The attention page's pictures, built from numpy arrays and labels (no model, no Streamlit)."""
from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from explain.attention import blocked_cells, head_statistics, row_entropy
from figures import attention as fa
from figures.style import DIVERGING, SEQUENTIAL


def colour_scale(name: str) -> tuple:
    """The colour stops plotly makes of a named scale."""
    return go.Figure(layout=dict(coloraxis_colorscale=name)).layout.coloraxis.colorscale


def softmax_rows(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.normal(size=shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------ the overview grid


def test_grid_has_one_map_per_head_on_one_colour_scale_in_one_chart():
    maps = softmax_rows(np.random.default_rng(2), 2, 3, 4, 5)
    titles = [f"L{l} H{h}" for l in (1, 2) for h in (1, 2, 3)]
    fig = fa.grid_figure(maps, ["<b>", "q", "r", "s"], list("abcde"), titles=titles, hover="%{y} → %{x}: %{z:.3f}")
    maps_drawn = [trace for trace in fig.data if trace.type == "heatmap"]
    assert len(maps_drawn) == 6 and {trace.coloraxis for trace in maps_drawn} == {"coloraxis"}
    assert np.allclose(np.asarray(maps_drawn[5].z), maps[1, 2], atol=1e-6)
    assert fig.layout.coloraxis.colorscale == colour_scale(SEQUENTIAL)
    assert sorted(key for key in fig.to_plotly_json()["layout"] if key[1:].startswith("axis")) == ["xaxis", "yaxis"]
    corners = [(trace.x0, trace.y0) for trace in maps_drawn]
    assert corners[0] == (0, 0) and corners[1][1] == 0 and corners[3][0] == 0, "rows are layers, columns heads"
    assert corners[1][0] > 5 - 0.5 and corners[3][1] > 4 - 0.5, "the maps do not overlap"
    assert [a.text for a in fig.layout.annotations] == titles
    assert fig.layout.yaxis.ticktext[0] == "&lt;b&gt;"
    assert fig.layout.clickmode == "event+select"


def test_a_click_on_a_grid_cell_names_its_layer_and_head_and_its_hover_the_tokens():
    maps = softmax_rows(np.random.default_rng(3), 2, 3, 4, 5)
    titles = [f"L{l} H{h}" for l in (1, 2) for h in (1, 2, 3)]
    fig = fa.grid_figure(maps, list("pqrs"), list("abcde"), titles=titles, hover="%{y} → %{x}: %{z:.3f}")
    targets = [trace for trace in fig.data if trace.type == "scatter"]
    assert len(targets) == 6
    last, last_map = targets[5], [trace for trace in fig.data if trace.type == "heatmap"][5]
    assert len(last.x) == len(last.y) == 4 * 5, "a marker on every cell"
    assert min(last.x) == last_map.x0 and min(last.y) == last_map.y0, "on its own map"
    assert "L2 H3" in last.hovertemplate and "%{marker.color:.3f}" in last.hovertemplate
    assert last.marker.maxdisplayed == 1, "the markers are there for the click, not drawn"
    assert np.allclose(np.asarray(last.marker.color), maps[1, 2].ravel(), atol=1e-6), "the hover's weight"
    # plotly writes the tick text of a position for %{x} and %{y}: the cell's key and query tokens.
    key_at = dict(zip(fig.layout.xaxis.tickvals, fig.layout.xaxis.ticktext))
    query_at = dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext))
    assert [key_at[x] for x in last.x[:5]] == list("abcde")
    assert [query_at[y] for y in last.y[::5]] == list("pqrs")
    cell = {"curve_number": 11, "point_index": 7, "x": 2, "y": 1, "legendgroup": last.legendgroup}
    assert fa.picked_head(cell) == (2, 3)
    assert fa.picked_head({"x": 1, "y": 1}) is None
    assert fa.picked_head({"legendgroup": "junk"}) is None


def test_grid_sends_no_text_per_cell_and_labels_only_short_sentences():
    rng = np.random.default_rng(4)
    titles = [f"L{l} H{h}" for l in (1, 2) for h in (1, 2)]
    short = fa.grid_figure(softmax_rows(rng, 2, 2, 6, 6), list("abcdef"), list("<bcdef"), titles=titles, hover="")
    assert all(trace.customdata is None and trace.text is None for trace in short.data)
    assert list(short.layout.xaxis.ticktext) == ["&lt;", *"bcdef"] * 2, "under each map of the bottom row"
    assert list(short.layout.yaxis.ticktext) == list("abcdef") * 2, "left of each map of the first column"
    assert short.layout.xaxis.showticklabels and short.layout.yaxis.showticklabels
    tokens = list("abcdefghijklmnopqrst")
    long = fa.grid_figure(softmax_rows(rng, 2, 2, 20, 20), tokens, tokens, titles=titles, hover="")
    assert not long.layout.xaxis.showticklabels and not long.layout.yaxis.showticklabels
    assert list(long.layout.xaxis.ticktext) == tokens * 2, "the hover still names the tokens"
    assert len(long.to_json()) < 60_000, "20 tokens, 4 heads: the grid stays small"


# ------------------------------------------------------------------ one head


def test_zoom_shows_weights_with_tokens_and_masked_cells():
    weights = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    fig = fa.zoom_figure(weights, ["<s>", "a", "b"], ["<s>", "a", "b"], blocked=blocked_cells("decoder", 3, 3),
                         title="Decoder, layer 1, head 2", x_title="key", y_title="query", hover="%{y} → %{x}: %{z}")
    heat = fig.data[0]
    assert np.allclose(np.asarray(heat.z), weights, atol=1e-6)
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert fig.layout.title.text == "Decoder, layer 1, head 2"
    marks = [trace for trace in fig.data if trace.type == "scatter"][0]
    assert sorted(tuple(cell) for cell in marks.meta) == [(0, 1), (0, 2), (1, 2)]  # (query, key)
    assert "&lt;s&gt;" in json.dumps(fig.to_plotly_json()["layout"]["yaxis"]["ticktext"])
    assert heat.texttemplate == "%{z:.2f}" and heat.text is None, "a small map writes its values, two decimals"
    big = fa.zoom_figure(np.full((20, 20), 0.05), list("abcdefghijklmnopqrst"), list("abcdefghijklmnopqrst"),
                         blocked=None, title="", x_title="", y_title="", hover="")
    assert big.data[0].texttemplate is None


def test_vectors_use_the_one_diverging_scale_centred_on_zero():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 4)) * 3
    fig = fa.vectors_figure(q, k, v, list("abc"), list("<>&xy"), titles=("Q", "K", "V"), x_title="dim",
                            hover="%{customdata} %{x}: %{z}")
    assert fig.layout.coloraxis.colorscale == colour_scale(DIVERGING), "red = positive, like every other chart"
    assert fig.layout.coloraxis.cmin == -fig.layout.coloraxis.cmax == pytest.approx(-np.abs(v).max(), rel=1e-5)
    heatmaps = [trace for trace in fig.data if trace.type == "heatmap"]
    assert [np.asarray(h.z).shape for h in heatmaps] == [(3, 4), (5, 4), (5, 4)]
    assert all(h.customdata is None for h in heatmaps), "the hover reads the tokens off the axes"
    assert list(fig.layout.yaxis2.ticktext) == ["&lt;", "&gt;", "&amp;", "x", "y"]
    assert list(fig.layout.yaxis.ticktext) == list("abc")


def test_scores_figure_leaves_masked_cells_empty():
    scores = np.arange(9, dtype=float).reshape(3, 3)
    fig = fa.scores_figure(scores, list("abc"), list("abc"), blocked=blocked_cells("decoder", 3, 3),
                           title="", x_title="", y_title="", hover="%{z}")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 1]) and np.isnan(z[0, 2]) and z[2, 0] == 6.0
    assert fig.data[0].text[0][1] == "" and fig.data[0].text[2][0] == "6.00"
    assert fig.data[0].zmin == -fig.data[0].zmax == -8.0, "the scale spans the visible scores only"


def test_weights_figure_shows_each_rows_entropy():
    weights = np.array([[1.0, 0.0], [0.5, 0.5]])
    fig = fa.weights_entropy_figure(weights, ["a", "b"], ["a", "b"], row_entropy(weights), blocked=None,
                                    titles=("w", "h"), x_title="", y_title="", entropy_title="bits", hover="%{z}",
                                    entropy_hover="%{x}")
    bars = [trace for trace in fig.data if trace.type == "bar"][0]
    assert list(bars.x) == pytest.approx([0.0, 1.0])
    assert list(fig.layout.yaxis2.ticktext) == ["a", "b"], "the bars' hover names the query"


def test_weights_figure_marks_masked_cells():
    weights = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    fig = fa.weights_entropy_figure(weights, list("abc"), list("abc"), row_entropy(weights),
                                    blocked=blocked_cells("decoder", 3, 3), titles=("w", "h"), x_title="",
                                    y_title="", entropy_title="bits", hover="%{z}", entropy_hover="%{x}")
    assert fig.data[0].text[0][2] == "" and fig.data[0].text[2][2] == "0.33"
    marks = [trace for trace in fig.data if trace.type == "scatter"][0]
    assert len(marks.meta) == 3


# ------------------------------------------------------------------ statistics and switching heads off


def test_stats_figure_has_a_bar_per_head_and_a_colour_per_layer():
    maps = softmax_rows(np.random.default_rng(6), 2, 3, 4, 4)
    stats = head_statistics(maps)
    fig = fa.stats_figure(stats, x_title="d", y_title="e", layer_label="<Layer>", head_label="<H>", hover="%{x}")
    assert [trace.name for trace in fig.data] == ["&lt;Layer&gt; 1", "&lt;Layer&gt; 2"]
    assert [trace.type for trace in fig.data] == ["bar", "bar"] and fig.layout.barmode == "group"
    assert [list(trace.y) for trace in fig.data] == [list(stats["focus"][:3]), list(stats["focus"][3:])]
    assert [list(trace.text) for trace in fig.data] == [[f"{v:.2f}" for v in trace.y] for trace in fig.data]
    assert list(fig.layout.xaxis.ticktext) == ["&lt;H&gt; 1", "&lt;H&gt; 2", "&lt;H&gt; 3"]


def test_heads_that_behave_alike_keep_their_labels_apart():
    """Reverse's four cross-attention heads of layer 2 are almost the same: as dots with "H1".."H4"
    beside them their labels landed on one another; as grouped bars each label has its own slot."""
    maps = np.stack([np.stack([np.full((5, 5), 0.2)] * 4), np.stack([np.eye(5)[::-1] * 0.9 + 0.02] * 4)])
    fig = fa.stats_figure(head_statistics(maps), x_title="", y_title="", layer_label="L", head_label="H", hover="")
    slots = [(trace.offsetgroup or trace.name, x) for trace in fig.data for x in trace.x]
    assert len(set(slots)) == len(slots) == 8
    assert all(trace.textposition == "outside" for trace in fig.data)


def test_ablation_figure_compares_the_same_tokens():
    fig = fa.ablation_figure(["a", "<eos>"], np.array([0.9, 0.8]), np.array([0.5, 0.7]), names=("on", "<off>"),
                             x_title="", y_title="", hover="%{y}")
    assert [trace.name for trace in fig.data] == ["on", "&lt;off&gt;"]
    assert np.allclose(np.asarray(fig.data[1].y), [0.5, 0.7])
    assert list(fig.layout.xaxis.ticktext) == ["a", "&lt;eos&gt;"]
    assert fig.layout.barmode == "group"
