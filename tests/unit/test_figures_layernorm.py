"""figures.layernorm: γ and β, normalised heatmaps, the two wirings, the gradient chart."""
from __future__ import annotations

import numpy as np
import pytest

from figures import layernorm as fl

WIRING_LABELS = {"title": "T", "x": "x", "sublayer": "Sublayer", "norm": "LayerNorm", "out": "out",
                 "final": "final LayerNorm"}


def label_y(fig, text: str) -> float:
    """The height of the annotation that reads ``text``."""
    return next(a.y for a in fig.layout.annotations if a.text == text)


def test_gamma_and_beta_are_drawn_with_their_starting_values():
    gamma, beta = np.linspace(0.5, 1.5, 8), np.linspace(-0.2, 0.2, 8)
    fig = fl.gamma_beta_figure(gamma, beta, names=("γ", "β"), title="t", x_title="feature")
    assert [trace.name for trace in fig.data] == ["γ", "β"]
    np.testing.assert_allclose(fig.data[0].y, gamma, rtol=1e-6)
    np.testing.assert_allclose(fig.data[1].y, beta, atol=1e-7)
    assert sorted(shape.y0 for shape in fig.layout.shapes) == [0.0, 1.0]
    rms = fl.gamma_beta_figure(gamma, None, names=("γ", "β"), title="t", x_title="feature")
    assert len(rms.data) == 1 and [shape.y0 for shape in rms.layout.shapes] == [1.0]


def test_normalised_heatmap_keeps_the_values_and_escapes_the_tokens():
    values = np.arange(6, dtype=float).reshape(2, 3) - 2
    fig = fl.normalised_heatmap(values, ["<b>", " "], title="t", x_title="x", y_title="y", hover="%{y}: %{z}")
    np.testing.assert_allclose(np.asarray(fig.data[0].z), values)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-fl.NORMALISED_BOUND, fl.NORMALISED_BOUND)
    assert list(fig.layout.yaxis.ticktext) == ["&lt;b&gt;", "␣"]


def test_lines_name_their_series():
    a, b = np.zeros(4), np.ones(4)
    for fig in (fl.feature_means_figure(a, b, names=("all", "real"), title="t", x_title="x", y_title="y"),
                fl.rms_layer_figure(a, b, names=("LN", "RMS"), title="t", x_title="x", y_title="y")):
        assert len(fig.data) == 2 and fig.layout.legend.orientation == "h"
        np.testing.assert_array_equal(fig.data[1].y, b)


def test_the_wirings_put_the_norm_after_the_addition_or_before_the_sublayer():
    post = fl.wiring_figure("post", WIRING_LABELS)
    pre = fl.wiring_figure("pre", WIRING_LABELS)
    add = {name: fig.data[0].y[0] for name, fig in (("post", post), ("pre", pre))}  # the ⊕
    assert label_y(post, "Sublayer") < add["post"] < label_y(post, "LayerNorm")  # LayerNorm(x + Sublayer(x))
    assert label_y(pre, "LayerNorm") < label_y(pre, "Sublayer") < add["pre"]  # x + Sublayer(LayerNorm(x))
    assert label_y(pre, "final LayerNorm") > add["pre"]
    assert "final LayerNorm" not in [a.text for a in post.layout.annotations]
    dashed = [s for s in pre.layout.shapes if s.type == "rect" and s.line.dash == "dash"]
    assert len(dashed) == 1


def test_gradient_chart_has_one_line_per_wiring_and_the_stack_boundary():
    norms = {"post": np.array([1.0, 1.2, 2.0, 3.0]), "pre": np.array([1.0, 0.9, 0.9, 0.8])}
    fig = fl.gradient_figure(norms, ["E1", "E2", "D1", "D2"], names={"post": "post", "pre": "pre"}, title="t",
                             x_title="layer", y_title="norm", split=2)
    assert [trace.name for trace in fig.data] == ["post", "pre"]
    drawn = np.asarray(fig.data[0].y, float)
    np.testing.assert_allclose(drawn[~np.isnan(drawn)], norms["post"])
    assert np.isnan(drawn[2]) and fig.data[0].x[2] == 1.5  # the line breaks between the stacks
    assert list(fig.layout.xaxis.ticktext) == ["E1", "E2", "D1", "D2"]
    assert [shape.x0 for shape in fig.layout.shapes] == [1.5]
    assert fig.layout.yaxis.type == "log"


def test_gradient_chart_draws_layers_below_the_rounding_floor_on_the_floor():
    """A no-residual line falls some 30 decades: below the floor its points sit on the floor as open
    triangles, their raw values kept for the hover."""
    norms = {"post": np.array([1.0, 1.2, 2.0, 3.0]), "no_residual": np.array([2.0, 2.5, 1e-30, 3.5])}
    fig = fl.gradient_figure(norms, ["E1", "E2", "D1", "D2"], names={"post": "post", "no_residual": "none"},
                             title="t", x_title="layer", y_title="", split=2, floor=1e-6, floor_label="float32")
    none = fig.data[1]
    np.testing.assert_allclose(np.asarray(none.y, float), [2.0, 2.5, np.nan, 1e-6, 3.5])
    np.testing.assert_allclose(np.asarray(none.customdata, float), [2.0, 2.5, np.nan, 1e-30, 3.5])
    assert list(none.marker.symbol) == ["circle", "circle", "circle", "triangle-down-open", "circle"]
    assert list(fig.data[0].marker.symbol) == ["circle"] * 5
    floors = [shape for shape in fig.layout.shapes if shape.y0 == shape.y1 == 1e-6]
    label = next(a for a in fig.layout.annotations if a.text == "float32")
    assert len(floors) == 1 and label.y == pytest.approx(-6)  # a log axis places annotations at log10(y)
    assert fig.layout.yaxis.type == "log"
