"""figures.positional: the table with its waves, the example table, attention maps and RoPE's pictures."""
from __future__ import annotations

import numpy as np
import pytest

from explain.positional import pe_table, rope_circle, rope_scores, wavelength, worked_example
from figures.positional import (attention_maps, example_table_html, frequency_figure, offset_figure,
                                rope_circle_figure, rope_lines_figure, rope_matrix_figure, similarity_figure)

TABLE_LABELS = ("dimension", "position", "%{z}")
WAVE_LABELS = ("sin", "cos", "p", "one")


def test_example_html_shows_the_values_and_escapes_headers():
    html = example_table_html(worked_example().set_axis(["dim", "i", "<fn>", "angle", "value"], axis=1))
    for text in ("0.909297", "-0.416147", "0.198669", "0.980067", "0.019999", "0.999800", "0.002000", "0.999998"):
        assert text in html
    assert "2.0000" in html and "0.0020" in html  # angles to 4 decimals
    assert "&lt;fn&gt;" in html and "<fn>" not in html


def test_frequency_figure_frames_the_pair_on_the_table():
    table = pe_table(20, 8, 10000.0)
    fig = frequency_figure(table, 1, wavelength(1, 8, 10000.0), TABLE_LABELS, WAVE_LABELS)
    shape = fig.layout.shapes[0]
    assert (shape.x0, shape.x1, shape.xref) == (1.5, 3.5, "x")  # pair 1 = columns 2 and 3
    heat, sin, cos = fig.data
    assert heat.type == "heatmap" and heat.z.shape == (20, 8)
    np.testing.assert_allclose(heat.z, table, atol=1e-6)
    np.testing.assert_allclose(sin.y, table[:, 2])
    np.testing.assert_allclose(cos.y, table[:, 3])
    assert (sin.xaxis, sin.name, cos.name) == ("x2", "sin", "cos")
    # The colour bar lies across under the table, within its width: clear of the sine chart's numbers
    left, right = fig.layout.xaxis.domain
    bar = heat.colorbar
    assert bar.orientation == "h" and bar.lenmode == "fraction" and bar.xanchor == "center"
    assert left <= bar.x - bar.len / 2 and bar.x + bar.len / 2 <= right < fig.layout.xaxis2.domain[0]
    assert (bar.yref, bar.y, bar.yanchor) == ("container", 0, "bottom")
    assert fig.layout.margin.b >= bar.thickness + 20  # room for the bar and its numbers under the x axis


def test_waves_mark_whole_wavelengths():
    table = pe_table(50, 64, 10000.0)
    lam = wavelength(0, 64, 10000.0)
    spec = frequency_figure(table, 0, lam, TABLE_LABELS, WAVE_LABELS).to_dict()
    lines = [s for s in spec["layout"]["shapes"] if s["type"] == "line"]
    assert len(lines) == int(49 // lam) and all(s["xref"] == "x2" for s in lines)
    (note,) = spec["layout"]["annotations"]
    assert note["text"] == "one" and note["x"] == pytest.approx(lam)


def test_slow_waves_have_no_wavelength_mark():
    table = pe_table(50, 64, 10000.0)
    spec = frequency_figure(table, 31, wavelength(31, 64, 10000.0), TABLE_LABELS, WAVE_LABELS).to_dict()
    assert [s["type"] for s in spec["layout"]["shapes"]] == ["rect"] and not spec["layout"].get("annotations")


def test_similarity_and_offset_figures():
    similarity = similarity_figure(np.eye(4) * 4, 4.0, ("q", "p", "%{z}")).to_dict()
    assert (similarity["data"][0]["zmin"], similarity["data"][0]["zmax"]) == (-4.0, 4.0)
    offsets = offset_figure(np.ones((3, 10)), ["a", "b", "c"], ("k", "dot")).to_dict()
    assert [tr["name"] for tr in offsets["data"]] == ["a", "b", "c"]
    assert len({tr["line"]["dash"] for tr in offsets["data"]}) == 3  # overlaid lines stay visible


def test_attention_maps_share_one_scale_and_escape_tokens():
    maps = attention_maps([(np.full((2, 2), 0.5), ["<b>", " "], "one"), (np.eye(2), ["a", "b"], "two")],
                          ("key", "query"))
    specs = [f.to_dict() for f in maps]
    assert {(s["data"][0]["zmin"], s["data"][0]["zmax"]) for s in specs} == {(0, 1.0)}
    assert specs[0]["layout"]["xaxis"]["ticktext"] == ["&lt;b&gt;", "␣"]
    assert [s["layout"]["title"]["text"] for s in specs] == ["one", "two"]


def test_rope_pictures():
    points = rope_circle(16, 10000.0, 0, 12)
    circle = rope_circle_figure(points, "turning").to_dict()
    tips = circle["data"][-1]
    assert len(circle["data"]) == 3 and list(tips["text"]) == [str(p) for p in range(12)]
    rope, additive = rope_scores(16, 10000.0, 48)
    matrix = rope_matrix_figure(rope, "scores", ("s", "p", "%{z}")).to_dict()
    assert matrix["data"][0]["zmax"] == pytest.approx(-matrix["data"][0]["zmin"])
    lines = rope_lines_figure(rope, additive, (0, 12, 24), ["r0", "r1", "r2"], ["a0", "a1", "a2"], "lines",
                              ("k", "score"))
    assert [tr.name for tr in lines.data] == ["r0", "r1", "r2", "a0", "a1", "a2"]
    long = rope_lines_figure(rope, additive, (0, 12, 24), ["r0", "r1", "r2"], ["a0", "a1", "a2"],
                             "Score against offset, for three query positions", ("k", "score"))
    # A third of a wide page: the title is wrapped (plotly cuts a long one), with room above the plot
    assert long.layout.title.text == "Score against offset, for<br>three query positions"
    assert long.layout.margin.t > lines.layout.margin.t and long.layout.height > lines.layout.height
    np.testing.assert_allclose(lines.data[1].y, rope[12, 12:36])
    np.testing.assert_allclose(lines.data[4].y, additive[12, 12:36])
