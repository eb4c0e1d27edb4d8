"""figures.bleu: the precision bars, a missing order, and the geometric mean."""
from __future__ import annotations

import pytest

from figures import bleu as fb

NAMES = ["1-gram", "2-gram", "3-gram", "4-gram"]


def bars(precisions, mean=None):
    return fb.precision_bars(precisions, [9, 8, 7, 0], [10, 9, 8, 7], names=NAMES, title="P", y_title="p (%)",
                             hover="%{x}: %{customdata[1]:.1f} (%{customdata[0]})", mean=mean)


def test_one_bar_per_order_labelled_with_its_counts():
    fig = bars([90.0, 88.9, 87.5, 0.0])
    bar = fig.data[0]
    assert list(bar.x) == NAMES and list(bar.text) == ["9/10", "8/9", "7/8", "0/7"]
    assert [row[1] for row in bar.customdata] == [90.0, 88.9, 87.5, 0.0]  # the hover shows the true value
    assert fig.layout.yaxis.range == (0, 115) and fig.layout.title.text == "P"


def test_a_missing_order_is_a_red_stub():
    bar = bars([90.0, 88.9, 87.5, 0.0]).data[0]
    assert list(bar.y)[:3] == [90.0, 88.9, 87.5] and 0 < bar.y[3] < 5
    assert list(bar.marker.color) == [fb.BAR_COLOR] * 3 + [fb.EMPTY_COLOR]


def test_the_geometric_mean_is_a_dashed_line_only_when_given():
    assert not bars([90.0, 88.9, 87.5, 80.0]).layout.shapes
    fig = bars([90.0, 88.9, 87.5, 80.0], mean=86.5)
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].y0 == pytest.approx(86.5)
    assert fig.layout.shapes[0].line.dash == "dash" and not fig.layout.annotations  # no label to collide with bars
