"""figures.residual: the residual-stream page's pictures draw what they are given."""
import numpy as np

from figures import residual

TOKENS = ["a", "<s>", " "]
COLUMNS = ["L1 attn", "L1 FFN"]


def test_stream_figure_draws_the_three_matrices():
    x = np.array([[8.0, 8.1], [7.9, 8.0], [8.2, 8.0]])
    u = np.array([[1.0, 9.0], [2.0, 3.0], [0.5, 12.0]])
    turn = np.array([[0.99, 0.6], [0.98, 0.9], [1.0, -0.2]])
    fig = residual.stream_figure(x, u, turn, TOKENS, COLUMNS, titles=("x", "u", "cos"), hovers=("", "", ""))
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 3
    for trace, want in zip(heat, (x, u, turn)):
        np.testing.assert_allclose(np.asarray(trace.z, float), want, rtol=1e-6)
    assert heat[0].zmax == heat[1].zmax == 12.0  # one scale for both sizes
    assert (heat[2].zmin, heat[2].zmax) == (-1.0, 1.0)
    assert list(fig.layout.yaxis.ticktext) == ["a", "&lt;s&gt;", "␣"]
    assert list(fig.layout.xaxis3.ticktext) == COLUMNS


def test_stream_figure_grows_with_the_sentence():
    small = residual.stream_figure(*(np.ones((3, 2)),) * 3, TOKENS, COLUMNS, titles=("", "", ""), hovers=("",) * 3)
    large = residual.stream_figure(*(np.ones((40, 2)),) * 3, ["t"] * 40, COLUMNS, titles=("", "", ""),
                                   hovers=("",) * 3)
    assert large.layout.height > small.layout.height


def test_token_path_has_sizes_and_the_cosine():
    fig = residual.token_path_figure(COLUMNS, np.array([8.0, 8.0]), np.array([1.0, 9.0]), np.array([0.99, 0.6]),
                                     names=("x", "u", "cos"), titles=("a", "b"), size_title="len", cos_title="cos")
    x_line, u_line, cos_line = fig.data
    np.testing.assert_allclose(u_line.y, [1.0, 9.0])
    np.testing.assert_allclose(cos_line.y, [0.99, 0.6])
    assert list(x_line.x) == COLUMNS
