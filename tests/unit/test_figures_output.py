"""figures.output: the output-and-loss page's pictures mark the right token and draw what they are given."""
from __future__ import annotations

import numpy as np
import pytest

from figures import output as fo

TOKENS = ["a", " ", "<eos>", "b"]


def test_the_last_vector_is_one_strip_centred_on_zero():
    fig = fo.last_vector(np.array([0.5, -2.0, 1.0]), title="h", x_title="dim", hover="%{x}: %{z}")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (1, 3) and np.allclose(z, [[0.5, -2.0, 1.0]])
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-2.0, 2.0)
    # Three numbers on the short colour bar (plotly put one every unit: −2, −1, 0, 1, 2 overlapped)
    bar = fig.data[0].colorbar
    assert bar.tickmode == "array" and list(bar.tickvals) == [-2.0, 0, 2.0] and list(bar.ticktext) == ["−2", "0", "2"]
    bar = fo.last_vector(np.array([0.47, -0.2]), title="h", x_title="dim", hover="").data[0].colorbar
    assert list(bar.tickvals) == [-0.4, 0, 0.4] and list(bar.ticktext) == ["−0.4", "0", "0.4"]


def test_logits_and_probabilities_share_the_token_axis_and_mark_the_target():
    fig = fo.logits_and_probs(TOKENS, [3.0, -1.0, 0.5, 0.0], [0.8, 0.05, 0.1, 0.05], 2, titles=("z", "p"),
                              hover=("%{x}", "%{x}"))
    logits, probs = fig.data
    assert list(logits.x) == [3.0, -1.0, 0.5, 0.0] and list(probs.x) == [0.8, 0.05, 0.1, 0.05]
    assert list(logits.marker.color) == [fo.OTHER_COLOR, fo.OTHER_COLOR, fo.TARGET_COLOR, fo.OTHER_COLOR]
    assert list(fig.layout.yaxis.ticktext)[1] == "␣"
    assert "&lt;eos&gt;" in fig.layout.yaxis.ticktext[2] and fo.TARGET_COLOR in fig.layout.yaxis.ticktext[2]
    assert fig.layout.xaxis.range[0] < 0 < fig.layout.xaxis.range[1]  # negative logits fit
    assert [a.text for a in fig.layout.annotations] == ["z", "p"]


def test_the_temperature_curve_marks_the_chosen_temperature():
    temps = np.array([0.0, 1.0, 2.0])
    fig = fo.temperature_curve(temps, np.array([1.0, 0.6, 0.4]), np.array([1.0, 0.6, 0.4]), np.array([0.0, 0.9, 1.2]),
                               1.0, np.log(4), names=("top", "target", "H"), x_title="T", y_title="p", y2_title="H")
    assert [trace.name for trace in fig.data] == ["top", "target", "H"] and fig.data[2].yaxis == "y2"
    assert fig.layout.shapes[0].x0 == 1.0
    assert fig.layout.yaxis2.range[1] == pytest.approx(np.log(4) * 1.05)


def test_position_losses_colour_right_and_wrong_and_outline_the_chosen_one():
    fig = fo.position_losses(TOKENS, [0.1, 3.0, 0.2, 0.1], [True, False, True, True], 0.85, 1, mean_label="mean",
                             x_title="pos", y_title="loss", hover="%{y}")
    bars = fig.data[0]
    assert list(bars.marker.color) == [fo.RIGHT_COLOR, fo.WRONG_COLOR, fo.RIGHT_COLOR, fo.RIGHT_COLOR]
    assert list(bars.marker.line.width) == [0, 2.5, 0, 0]
    assert fig.layout.shapes[0].y0 == 0.85 and fig.layout.yaxis.range[1] > 3.0


def test_right_token_probabilities_draw_the_ceiling_only_when_known():
    kwargs = dict(ceiling_label="1 − ε", x_title="pos", y_title="p", hover="%{y}")
    with_line = fo.right_token_probs(TOKENS, [0.9, 0.88, 0.9, 0.4], 0.9, None, **kwargs)
    assert len(with_line.layout.shapes) == 1 and with_line.layout.shapes[0].y0 == 0.9
    assert not fo.right_token_probs(TOKENS, [0.9, 0.88, 0.9, 0.4], None, 0, **kwargs).layout.shapes


def test_targets_are_grouped_on_a_log_axis_reaching_the_smallest_value():
    fig = fo.targets(["a", "b", "<pad>"], [1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.85, 0.1499, 1e-4], 0,
                     names=("one-hot", "smoothed", "model"), x_title="p", hover="%{x}")
    assert [trace.name for trace in fig.data] == ["one-hot", "smoothed", "model"]
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.range[0] <= np.log10(1e-4)
    assert fig.layout.barmode == "group" and fo.TARGET_COLOR in fig.layout.yaxis.ticktext[0]
    tiny = fo.targets(["a"], [1.0], [1.0], [1e-12], 0, names=("o", "s", "m"), x_title="p", hover="%{x}")
    assert tiny.layout.xaxis.range[0] == pytest.approx(np.log10(fo.LOG_FLOOR))


def test_the_loss_curve_marks_its_lowest_point_at_1_minus_epsilon():
    p = np.linspace(0.01, 0.99, 99)
    fig = fo.loss_curve(p, -np.log(p), -(0.9 * np.log(p) + 0.1 * np.log((1 - p) / 47)), 0.1, 0.71,
                        names=("one-hot", "smoothed"), best_label="best", x_title="p", y_title="loss")
    best = fig.data[2]
    assert list(best.x) == [pytest.approx(0.9)] and list(best.y) == [0.71]
    assert fig.layout.shapes[0].x0 == pytest.approx(0.9)
