"""The head view figure: lines query -> key, one colour per head, width and opacity growing with the weight."""
from __future__ import annotations

import numpy as np
import pytest

from figures import head_view as hv


def test_bands_grow_with_the_weight():
    assert hv.band_of(0.01) == -1
    assert [hv.band_of(w) for w in (0.02, 0.2, 0.3, 0.6, 1.0)] == [0, 1, 2, 3, 4]
    styles = [hv.band_style(b) for b in range(len(hv.BANDS))]
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(styles, styles[1:]))
    assert styles[-1][1] <= 1.0


def test_segments_join_each_query_to_its_keys():
    weights = np.array([[0.9, 0.1, 0.0], [0.3, 0.3, 0.4]])
    xs, ys, count = hv.segments(weights, hv.band_of(0.9))
    assert count == 1 and xs == [hv.LEFT_X, hv.RIGHT_X, None] and ys == [0, 0, None]
    _, ys, count = hv.segments(weights, hv.band_of(0.3))
    assert count == 3 and ys == [1, 0, None, 1, 1, None, 1, 2, None]


def test_every_drawn_line_is_a_weight_above_the_threshold():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(6), size=(3, 5))  # (H, T_q, T_k)
    fig = hv.head_view_figure(weights, list("abcde"), list("<>&xyz"), heads=(1, 2, 3), head_label="Head",
                              column_titles=("Q", "K"), query_hover="%{customdata}")
    lines = [trace for trace in fig.data if trace.mode == "lines" and trace.x and trace.x[0] is not None]
    drawn = sum(len(trace.x) // 3 for trace in lines)
    assert drawn == int((weights >= hv.BANDS[0]).sum())
    assert {trace.line.color for trace in lines} == {hv.head_colour(h) for h in (1, 2, 3)}
    titles = [a.text for a in fig.layout.annotations if "Head" in a.text]
    assert titles == ["Head 1", "Head 2", "Head 3"]
    labels = [trace for trace in fig.data if trace.mode == "markers+text"][1].text
    assert list(labels) == ["&lt;", "&gt;", "&amp;", "x", "y", "z"]


def test_several_heads_are_small_multiples_that_never_share_a_line():
    """One panel per head: no two heads' lines cover the same stretch of x (overlaid translucent lines
    blend into one colour that no legend swatch matches), each panel titled in its head's colour."""
    weights = np.random.default_rng(1).dirichlet(np.ones(4), size=(4, 4))
    fig = hv.head_view_figure(weights, list("abcd"), list("abcd"), heads=(1, 2, 3, 4), head_label="Head",
                              column_titles=("Q", "K"), query_hover="%{customdata}", chosen=3)
    spans = {}
    for trace in fig.data:
        if trace.mode == "lines":
            xs = [x for x in trace.x if x is not None]
            lo, hi = spans.get(trace.line.color, (min(xs), max(xs)))
            spans[trace.line.color] = (min(lo, *xs), max(hi, *xs))
    ordered = [spans[hv.head_colour(h)] for h in (1, 2, 3, 4)]
    assert all(a[1] < b[0] for a, b in zip(ordered, ordered[1:]))
    titles = {a.text: a.font.color for a in fig.layout.annotations if "Head" in a.text}
    assert titles == {"Head 1": hv.head_colour(1), "Head 2": hv.head_colour(2), "<b>Head 3</b>": hv.head_colour(3),
                      "Head 4": hv.head_colour(4)}
    frames = [shape for shape in fig.layout.shapes if shape.type == "rect"]
    assert len(frames) == 1 and frames[0].line.color == hv.head_colour(3)
    assert frames[0].x0 < spans[hv.head_colour(3)][0] and spans[hv.head_colour(3)][1] < frames[0].x1


def test_one_head_only():
    weights = np.full((2, 3, 3), 1 / 3)
    fig = hv.head_view_figure(weights, list("abc"), list("abc"), heads=(2,), head_label="头",
                              column_titles=("查询", "键"), query_hover="%{customdata}")
    assert {trace.name for trace in fig.data if trace.name} == {"头 2"}
    assert [a.text for a in fig.layout.annotations if "头" in a.text] == ["<b>头 2</b>"]
    assert {trace.line.color for trace in fig.data if trace.mode == "lines"} == {hv.head_colour(2)}


@pytest.mark.parametrize("head", [1, 10, 11])
def test_head_colours_cycle(head):
    assert hv.head_colour(head) == hv.HEAD_COLOURS[(head - 1) % len(hv.HEAD_COLOURS)]
