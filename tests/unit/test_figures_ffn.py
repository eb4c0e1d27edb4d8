"""figures.ffn: the feed-forward page's pictures draw what they are given, sized to the sentence."""
import numpy as np

from figures import ffn

TOKENS = ["h", "i", " ", "<b>"]


def z(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def test_activations_share_one_scale_centred_on_zero():
    pre = np.array([[-2.0, 1.0], [0.5, -0.5], [3.0, 0.0], [-1.0, -1.0]])
    fig = ffn.activations_figure(pre, np.maximum(pre, 0), TOKENS, titles=("before", "after"), x_title="unit",
                                 hover="%{y}: %{z}")
    top, bottom = [t for t in fig.data if t.type == "heatmap"]
    np.testing.assert_allclose(z(top), pre)
    np.testing.assert_allclose(z(bottom), np.maximum(pre, 0))
    assert fig.layout.coloraxis.cmin == -3.0 and fig.layout.coloraxis.cmax == 3.0
    assert list(fig.layout.yaxis.ticktext) == ["h", "i", "␣", "&lt;b&gt;"]  # escaped, spaces visible


def test_activations_height_grows_with_the_sentence():
    small = ffn.activations_figure(np.zeros((2, 3)), np.zeros((2, 3)), TOKENS[:2], titles=("a", "b"), x_title="",
                                   hover="")
    large = ffn.activations_figure(np.zeros((30, 3)), np.zeros((30, 3)), ["x"] * 30, titles=("a", "b"), x_title="",
                                   hover="")
    assert large.layout.height > small.layout.height


def test_off_share_bars_per_token():
    fig = ffn.off_share_figure(np.array([0.5, 0.25, 1.0, 0.0]), TOKENS, x_title="share", hover="%{y}: %{x}")
    bar = fig.data[0]
    np.testing.assert_allclose(bar.x, [0.5, 0.25, 1.0, 0.0])
    assert list(bar.text) == ["50%", "25%", "100%", "0%"]


def test_output_on_a_symmetric_scale():
    out = np.array([[1.0, -4.0], [2.0, 0.0]])
    fig = ffn.output_figure(out, TOKENS[:2], title="t", x_title="dim", hover="")
    assert fig.data[0].zmin == -4.0 and fig.data[0].zmax == 4.0


def test_position_wise_marks_the_changed_position():
    fig = ffn.position_wise_figure(TOKENS, np.array([0, 0, 2.0, 0]), np.array([1.0, 1, 2, 1]),
                                   names=("FFN", "attention"), changed=2, x_title="", y_title="", hover="")
    ffn_bars, att_bars = fig.data
    assert list(ffn_bars.marker.line.width) == [0, 0, 2, 0]
    np.testing.assert_allclose(att_bars.y, [1, 1, 2, 1])


def test_parameter_bars_stack_to_one():
    fig = ffn.parameter_figure(["a", "b"], [0.6, 0.5], [0.3, 0.49], [0.1, 0.01], names=("F", "A", "N"), x_title="")
    totals = np.sum([np.asarray(bar.x) for bar in fig.data], axis=0)
    np.testing.assert_allclose(totals, [1.0, 1.0])
    assert fig.layout.barmode == "stack"
    assert list(fig.data[2].text) == ["10%", ""]  # too thin to label
