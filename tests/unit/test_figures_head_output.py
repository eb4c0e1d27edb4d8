"""The picture of what attention produces: three heatmaps, the chosen head outlined in the concatenation."""
from __future__ import annotations

import numpy as np
import pytest

from figures.head_output import MIN_PANEL_SHARE, head_output_figure, panel_widths

TITLES = ("head 2 = A·V<br>3 × 4", "Concat<br>3 × 12", "Concat · Wᴼ + b<br>3 × 12")


def make(chosen: int = 2, tokens=("a", "<b>", " ")):
    rng = np.random.default_rng(0)
    heads = rng.normal(size=(3, 3, 4))
    concat = heads.transpose(1, 0, 2).reshape(3, 12)
    output = concat @ rng.normal(size=(12, 12)) * 5
    return heads, concat, output, head_output_figure(heads[chosen - 1], concat, output, list(tokens), chosen=chosen,
                                                      titles=TITLES, x_title="column", hover="%{y} %{x}: %{z}")


def test_three_heatmaps_of_the_given_matrices():
    heads, concat, output, fig = make()
    maps = [np.asarray(trace.z) for trace in fig.data if trace.type == "heatmap"]
    assert [m.shape for m in maps] == [(3, 4), (3, 12), (3, 12)]
    assert np.allclose(maps[0], heads[1], atol=1e-6)
    assert np.allclose(maps[1], concat, atol=1e-6)
    assert np.allclose(maps[2], output, atol=1e-5)
    assert [a.text for a in fig.layout.annotations][:3] == list(TITLES)


def test_the_chosen_heads_columns_are_outlined_in_the_concatenation():
    for chosen in (1, 3):
        *_, fig = make(chosen)
        rects = [s for s in fig.layout.shapes if s.type == "rect"]
        assert len(rects) == 1
        assert (rects[0].x0, rects[0].x1) == ((chosen - 1) * 4 - 0.5, chosen * 4 - 0.5)
        assert rects[0].xref == "x2"  # the middle panel
        boundaries = sorted(s.x0 for s in fig.layout.shapes if s.type == "line")
        assert boundaries == [3.5, 7.5]


def test_head_and_concat_share_a_scale_centred_on_zero_and_the_output_has_its_own():
    heads, concat, output, fig = make()
    kinds = [trace.coloraxis for trace in fig.data]
    assert kinds == ["coloraxis", "coloraxis", "coloraxis2"]
    first, second = fig.layout.coloraxis, fig.layout.coloraxis2
    assert first.cmax == pytest.approx(np.abs(concat).max(), rel=1e-5) and first.cmin == -first.cmax
    assert second.cmax == pytest.approx(np.abs(output).max(), rel=1e-5) and second.cmin == -second.cmax


def test_tokens_are_escaped_and_made_visible():
    *_, fig = make()
    assert list(fig.layout.yaxis.ticktext) == ["a", "&lt;b&gt;", "␣"]


def test_panel_widths_follow_the_columns_but_the_narrow_one_stays_readable():
    widths = panel_widths(16, 64, 64)
    assert sum(widths) == pytest.approx(1.0)
    assert widths[1] == widths[2]
    assert widths[0] / widths[1] == pytest.approx(MIN_PANEL_SHARE)
    assert panel_widths(32, 32, 32) == pytest.approx([1 / 3] * 3)


def test_height_grows_with_the_sentence():
    rng = np.random.default_rng(1)
    short = head_output_figure(rng.normal(size=(3, 4)), rng.normal(size=(3, 8)), rng.normal(size=(3, 8)),
                               list("abc"), chosen=1, titles=TITLES, x_title="", hover="")
    long = head_output_figure(rng.normal(size=(30, 4)), rng.normal(size=(30, 8)), rng.normal(size=(30, 8)),
                              list("abcdefghij" * 3), chosen=1, titles=TITLES, x_title="", hover="")
    assert long.layout.height > short.layout.height
