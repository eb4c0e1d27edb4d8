"""figures.decoding: the step's three pictures, drawn as one figure, and the teacher-forcing bars."""
from __future__ import annotations

import numpy as np
import pytest

from figures import decoding as fd

WEIGHTS = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
PREFIX = ["<bos>", "a", "b"]


def triangle(final_length: int = 6):
    return fd.triangle(WEIGHTS, PREFIX, final_length, title="Tri", x_title="key", y_title="query", hover="%{z}")


def topk(sampling=()):
    return fd.topk(["a", " ", "<eos>"], [0.7, 0.2, 0.1], " ", sampling=sampling, names=("m", "s"), title="Top",
                   x_title="p", hover="%{x}")


def cross():
    return fd.cross(np.full((2, 4), 0.25), list("ab c"), ["Head 1", "Head 2"], title="Cross", x_title="source",
                    hover="%{y} → %{x}: %{z:.3f}")


def test_triangle_fills_only_the_prefix():
    fig = triangle()
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (6, 6)
    assert (~np.isnan(z)).sum() == 9 and np.allclose(z[:3, :3].sum(axis=1), 1.0, atol=1e-3)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, 1)
    assert list(fig.layout.xaxis.ticktext) == ["&lt;bos&gt;", "a", "b", "", "", ""]
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].y0 == pytest.approx(1.5)
    masked = fig.data[1]  # the look-ahead mask's ✕ over the prefix's upper triangle
    assert sorted(tuple(cell) for cell in masked.meta) == [(0, 1), (0, 2), (1, 2)]


def test_cross_attention_has_one_row_per_head_on_the_same_scale():
    fig = cross()
    assert np.asarray(fig.data[0].z).shape == (2, 4)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, 1)
    assert list(fig.layout.xaxis.ticktext) == ["a", "b", "␣", "c"]
    assert list(fig.layout.yaxis.ticktext) == ["Head 1", "Head 2"]


def test_top_k_marks_the_chosen_token():
    fig = topk()
    assert list(fig.data[0].marker.color) == [fd.CANDIDATE_COLOR, fd.CHOSEN_COLOR, fd.CANDIDATE_COLOR]
    assert list(fig.data[0].marker.color) == ["#1f77b4", "#d62728", "#1f77b4"]
    assert list(fig.layout.yaxis.ticktext) == ["a", f'<span style="color:{fd.CHOSEN_COLOR}"><b>␣</b></span>',
                                               "&lt;eos&gt;"]
    assert [trace.type for trace in fig.data] == ["bar", "scatter"] and not fig.layout.showlegend
    both = fd.topk(["a"], [1.0], "a", sampling=[1.0], names=("m", "s"), title="", x_title="p", hover="%{x}")
    assert [trace.type for trace in both.data] == ["bar", "bar", "scatter"] and both.layout.showlegend


def test_a_sampled_token_of_tiny_probability_stays_visible_and_every_bar_has_its_value():
    """Sampling can draw a token the model gives 0.0004: its bar is thinner than a pixel, so a marker
    points at it, its label is red, and both distributions' bars write their values."""
    fig = fd.topk(["a", "b", "z"], [0.9, 0.09, 0.0004], "z", sampling=[0.7, 0.2, 0.003], names=("m", "s"),
                  title="", x_title="p", hover="%{x}")
    model, sampled, marker = fig.data
    # plain decimals, two significant digits (not 4.0e-04: issue #35 item 20)
    assert list(model.text) == ["0.90", "0.09", "0.00040"] and list(sampled.text) == ["0.70", "0.20", "0.0030"]
    assert list(marker.y) == [2] and marker.marker.color == fd.CHOSEN_COLOR and marker.marker.size >= 10
    assert fig.layout.xaxis.range[0] < marker.x[0] < 0, "the marker sits left of the bars, inside the plot"
    assert fd.CHOSEN_COLOR in fig.layout.yaxis.ticktext[2]


def test_numbers_are_written_in_plain_decimals_with_thousands_separators():
    from figures.labels import plain_number

    assert [plain_number(v) for v in (0.0004, 0.0088, 0.5, 198272.0, -0.0012, 0.0)] == [
        "0.00040", "0.0088", "0.50", "198,272", "-0.0012", "0"]
    assert plain_number(0.00884, 3) == "0.00884" and plain_number(3.1e-7, 3) == "0.000000310"
    assert not any("e" in fd.bar_value(p) for p in (0.0004, 1e-6, 0.009, 0.5))


def test_very_small_and_very_large_numbers_are_written_as_powers_of_ten():
    from figures.labels import readable_number

    assert [readable_number(v) for v in (0.25, 0.75, 1.0, -0.5, 198272.0, 0.000123456, 0.0, -0.0)] == [
        "0.25", "0.75", "1", "-0.5", "198,272", "0.000123", "0", "0"]
    assert [readable_number(v) for v in (1.2e-7, -3.4028e38, 2.5e-5, 9.9996e-5, 12345678.0)] == [
        "1.2 × 10⁻⁷", "-3.4 × 10³⁸", "2.5 × 10⁻⁵", "1 × 10⁻⁴", "1.23 × 10⁷"]
    assert [readable_number(v) for v in (float("nan"), float("inf"))] == ["nan", "inf"]


def test_top_k_escapes_the_names_of_the_distributions():
    fig = fd.topk(["a"], [1.0], "a", sampling=[1.0], names=("<b>m</b>", "s&"), title="", x_title="p", hover="%{x}")
    assert [bar.name for bar in fig.data if bar.type == "bar"] == ["&lt;b&gt;m&lt;/b&gt;", "s&amp;"]


def test_forcing_bars_are_green_where_right_and_red_where_wrong():
    fig = fd.forcing(["a", " ", "<eos>"], [0.9, 0.2, 0.6], [True, False, True], x_title="t", y_title="p",
                     hover="%{customdata}: %{y:.3f}")
    assert list(fig.data[0].marker.color) == [fd.RIGHT_COLOR, fd.CHOSEN_COLOR, fd.RIGHT_COLOR]
    assert list(fig.data[0].customdata) == ["a", "␣", "&lt;eos&gt;"]
    assert list(fig.layout.xaxis.ticktext) == ["a", "␣", "&lt;eos&gt;"]
    assert np.allclose(fig.data[0].y, [0.9, 0.2, 0.6])


def test_the_step_figure_keeps_each_part_in_its_own_cell():
    fig = fd.step_figure(triangle(), topk(), cross())
    cells = {(trace.type, trace.xaxis, trace.yaxis) for trace in fig.data}
    assert cells == {("heatmap", "x", "y"), ("scatter", "x", "y"), ("bar", "x2", "y2"), ("scatter", "x2", "y2"),
                     ("heatmap", "x3", "y3")}
    layout = fig.layout
    assert [note.text for note in layout.annotations] == ["Tri", "Top", "Cross"]
    assert list(layout.xaxis.ticktext) == ["&lt;bos&gt;", "a", "b", "", "", ""]
    assert layout.yaxis.autorange == "reversed" and layout.yaxis2.autorange == "reversed"
    assert list(layout.yaxis2.ticktext)[0] == "a" and tuple(layout.xaxis2.range) == (-0.04, 1.25)
    assert list(layout.yaxis3.ticktext) == ["Head 1", "Head 2"]
    # Triangle and bars side by side (3 : 2), the cross-attention below across the width.
    assert layout.xaxis.domain[1] < layout.xaxis2.domain[0]
    assert (layout.xaxis.domain[1] - layout.xaxis.domain[0]) > (layout.xaxis2.domain[1] - layout.xaxis2.domain[0])
    assert layout.yaxis3.domain[1] < min(layout.yaxis.domain[0], layout.yaxis2.domain[0])
    assert tuple(layout.xaxis3.domain) == pytest.approx((0, 1))
    # One colour bar, beside the cross-attention: the triangle shares its 0..1 scale.
    triangle_heat, cross_heat = [trace for trace in fig.data if trace.type == "heatmap" and trace.hoverinfo != "skip"]
    assert triangle_heat.showscale is False and cross_heat.showscale is not False
    assert cross_heat.colorbar.y == pytest.approx(sum(layout.yaxis3.domain) / 2)
    # The newest row's outline and the background of positions not written yet stay in the triangle's cell.
    outline = [s for s in layout.shapes if s.xref in (None, "x") and s.line.color == fd.CHOSEN_COLOR]
    assert len(outline) == 1 and outline[0].y0 == pytest.approx(1.5)
    background = [s for s in layout.shapes if s.xref == "x domain"]
    assert len(background) == 1 and background[0].fillcolor == fd.UNWRITTEN_COLOR
    assert not layout.showlegend


def test_the_step_figure_is_as_tall_as_its_parts_and_names_the_sampled_distribution():
    small, tall = fd.step_figure(triangle(3), topk(), cross()), fd.step_figure(triangle(20), topk(), cross())
    assert tall.layout.height - small.layout.height == triangle(20).layout.height - max(
        triangle(3).layout.height, topk().layout.height)
    sampled = fd.step_figure(triangle(), topk(sampling=[0.8, 0.2, 0.0]), cross())
    assert sampled.layout.showlegend and [bar.name for bar in sampled.data if bar.type == "bar"] == ["m", "s"]
    assert sampled.layout.margin.t > small.layout.margin.t, "room for the legend above the titles"


@pytest.mark.parametrize(("title", "lines"), [
    ("Masked self-attention, layer 1, head 1", ["Masked self-attention,", "layer 1, head 1"]),
    ("Next token: the most likely", ["Next token:", "the most likely"]),
    ("掩码自注意力，第 1 层，头 1", ["掩码自注意力，", "第 1 层，头 1"]),
    ("Short title", ["Short title"]),
])
def test_the_top_row_titles_break_onto_two_lines(title, lines):
    """Side by side above a 390 px phone, the triangle's and the bars' titles ran into each other."""
    fig = fd.step_figure(fd.triangle(WEIGHTS, PREFIX, 6, title=title, x_title="", y_title="", hover=""),
                         fd.topk(["a"], [1.0], "a", names=("m", "s"), title=title, x_title="", hover=""), cross())
    assert [note.text.split("<br>") for note in fig.layout.annotations[:2]] == [lines, lines]
    assert fig.layout.annotations[2].text == "Cross"


def test_cache_bars_stack_what_is_computed_under_what_is_reused():
    fig = fd.cache_bars(["a", " ", "<eos>"], [10, 2, 2], [0, 10, 12], computed_name="computed", reused_name="reused",
                        x_title="step", y_title="pairs", hover="%{customdata}: %{y}")
    assert fig.layout.barmode == "stack"
    computed, reused = fig.data
    assert (computed.name, reused.name) == ("computed", "reused")
    assert list(computed.y) == [10, 2, 2] and list(reused.y) == [0, 10, 12]
    assert list(computed.x) == [1, 2, 3] and list(computed.customdata)[2] == "&lt;eos&gt;"  # escaped for the hover
    assert fig.layout.xaxis.title.text == "step" and fig.layout.yaxis.title.text == "pairs"


@pytest.mark.parametrize("down", [False, True])
def test_two_rows_colour_the_positions_that_differ_and_turn_for_a_phone(down):
    rows, probs = (["h", "e", "<b>"], ["h", "h", "h"]), ([0.9, 0.8, 0.7], [0.9, 0.5, 0.4])
    fig = fd.two_rows(rows, probs, [False, True, True], names=("Step by step", "All at once"), x_title="Position",
                      hover="%{customdata[0]}: %{customdata[1]} %{customdata[2]:.3f}", down=down)
    cells = fig.data[0]
    z, text, custom = np.asarray(cells.z), np.asarray(cells.text), np.asarray(cells.customdata)
    if down:
        z, text, custom = z.T, text.T, custom.transpose(1, 0, 2)
    assert z.tolist() == [[0, 1, 1], [0, 1, 1]]
    assert text.tolist() == [["h", "e", "&lt;b&gt;"], ["h", "h", "h"]], "tokens are escaped for plotly"
    assert custom[1, 2].tolist() == ["All at once", "h", 0.4, 2]
    positions = fig.layout.yaxis if down else fig.layout.xaxis
    assert list(positions.ticktext) == ["0", "1", "2"] and positions.title.text == "Position"
    assert fig.layout.height == (fd.ROW_CELL_PX * 3 + 90 if down else 200)


# A small beam run: <bos> → a, b (pruned); a → a<eos>, ab, ac (pruned); ab → ab<eos> (the answer), ab + a word.
TREE = dict(
    steps=[0, 1, 1, 2, 2, 2, 3, 3],
    ranks=[1, 1, 2, 1, 2, 3, 1, 2],
    labels=["<bos>", "a", "b", "<eos>", "b", "c", "<eos>", "verylongword"],
    statuses=["kept", "kept", "pruned", "finished", "kept", "pruned", "finished", "open"],
    parents=[None, 0, 0, 1, 1, 1, 4, 4],
    chosen=[True, True, False, False, True, False, True, False],
)
NAMES = {"kept": "kept", "pruned": "pruned", "finished": "finished <eos>", "open": "open", "chosen": "path"}


def tree(down: bool = False, **changes):
    data = {**TREE, **changes}
    return fd.beam_tree(data["steps"], data["ranks"], data["labels"], data["statuses"], data["parents"],
                        data["chosen"], [f"hover {i}" for i in range(len(data["steps"]))], names=NAMES,
                        step_title="Step", rank_title="Rank", down=down)


def segments(trace) -> list[tuple[tuple, tuple]]:
    """A lines trace's segments ((x0, y0), (x1, y1)), split at its gaps."""
    xs, ys = list(trace.x), list(trace.y)
    return [((xs[i], ys[i]), (xs[i + 1], ys[i + 1])) for i in range(0, len(xs), 3)]


@pytest.mark.parametrize("down", [False, True])
def test_the_beam_tree_draws_every_edge_and_the_answers_path_in_red(down):
    fig = tree(down)
    edges, path = fig.data[0], fig.data[1]
    turn = (lambda step, rank: (rank, step)) if down else (lambda step, rank: (step, rank))
    at = [turn(s, r) for s, r in zip(TREE["steps"], TREE["ranks"])]
    all_edges = {(at[p], at[c]) for c, p in enumerate(TREE["parents"]) if p is not None}
    on_path = {(at[0], at[1]), (at[1], at[4]), (at[4], at[6])}
    assert set(segments(path)) == on_path and path.line.color == fd.CHOSEN_COLOR and path.line.width >= 4
    assert set(segments(edges)) == all_edges - on_path
    assert path.name == "path" and not edges.showlegend
    nodes = {t.name: t for t in fig.data if t.hovertext}
    assert set(nodes) == {"kept", "pruned", "finished &lt;eos&gt;", "open"}, "legend names are escaped"
    assert sorted(zip(nodes["finished &lt;eos&gt;"].x, nodes["finished &lt;eos&gt;"].y)) == sorted([at[3], at[6]])
    assert list(nodes["kept"].hovertext) == ["hover 0", "hover 1", "hover 4"]
    assert {t.marker.symbol for t in nodes.values()} == {symbol for symbol, _ in fd.STATUS_MARKERS.values()}
    rings = [t for t in fig.data if t.mode == "markers" and t.hoverinfo == "skip"][0]
    assert sorted(zip(rings.x, rings.y)) == sorted(at[i] for i, c in enumerate(TREE["chosen"]) if c)
    steps_axis, ranks_axis = (fig.layout.yaxis, fig.layout.xaxis) if down else (fig.layout.xaxis, fig.layout.yaxis)
    assert steps_axis.title.text == "Step" and ranks_axis.title.text == "Rank"
    assert list(ranks_axis.tickvals) == [1, 2, 3] and list(steps_axis.tickvals) == [0, 1, 2, 3]
    assert fig.layout.height == (fd.TREE_CELL_PX * 4 + 150 if down else fd.TREE_CELL_PX * 3 + 150)


def test_beam_tree_labels_are_cut_and_escaped_and_left_out_on_a_crowded_phone():
    labels = [t for t in tree().data if t.mode == "markers+text"][0]
    assert list(labels.text) == ["&lt;bos&gt;", "a", "b", "&lt;eos&gt;", "b", "c", "&lt;eos&gt;", "veryl…"]
    assert fd.short_label(" ") == "␣" and fd.short_label("<b>ig</b>", 20) == "&lt;b&gt;ig&lt;/b&gt;"
    crowded = dict(steps=[0] + [1] * 8, ranks=[1] + list(range(1, 9)), labels=["<bos>"] + list("abcdefgh"),
                   statuses=["kept"] + ["open"] * 8, parents=[None] + [0] * 8, chosen=[True, True] + [False] * 7)
    assert not [t for t in tree(True, **crowded).data if t.mode == "markers+text"], "8 a step: hover/tap only"
    assert [t for t in tree(False, **crowded).data if t.mode == "markers+text"], "a wide screen has room"
