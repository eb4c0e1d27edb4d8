"""The measured-cost picture: time and memory against length, one line per path, log or linear axes."""
from __future__ import annotations

import numpy as np
import pytest

from figures.cost import MEBIBYTE, cost_figure, latent_maps_figure, n_squared_guide

LENGTHS = np.array([8.0, 16.0, 32.0, 64.0])
NAMES = {"explicit": "explicit <maps>", "sdpa": "fused"}


def make(memory_sdpa=np.full(4, np.nan), log_axes=True):
    series = {"explicit": (LENGTHS, LENGTHS ** 2 * 1e-6, LENGTHS ** 2 * 64.0),
              "sdpa": (LENGTHS, LENGTHS * 1e-5, memory_sdpa)}
    return cost_figure(series, NAMES, log_axes=log_axes, titles=("time", "memory"), x_title="n",
                       time_title="s", memory_title="MiB", guide_name="∝ n²", time_hover="%{x}: %{y}",
                       memory_hover="%{x}: %{y}")


def test_one_time_line_per_path_a_guide_and_memory_only_where_it_was_measured():
    fig = make()
    by_axis = {}
    for trace in fig.data:
        by_axis.setdefault(trace.yaxis, []).append(trace)
    assert [t.name for t in by_axis["y"]] == ["explicit &lt;maps&gt;", "fused", "∝ n²"]
    assert len(by_axis["y2"]) == 1
    assert np.allclose(by_axis["y2"][0].y, LENGTHS ** 2 * 64.0 / MEBIBYTE)


def test_memory_of_both_paths_when_both_were_measured():
    fig = make(memory_sdpa=LENGTHS * 100.0)
    assert len([t for t in fig.data if t.yaxis == "y2"]) == 2


@pytest.mark.parametrize("log_axes, kind", [(True, "log"), (False, "linear")])
def test_axes_are_log_or_linear(log_axes, kind):
    fig = make(log_axes=log_axes)
    assert fig.layout.xaxis.type == fig.layout.xaxis2.type == kind
    assert fig.layout.yaxis.type == fig.layout.yaxis2.type == kind


def test_the_guide_is_n_squared_through_the_longest_point():
    guide = n_squared_guide(LENGTHS, np.array([1.0, 1.0, 1.0, 8.0]))
    assert guide[-1] == 8.0
    assert np.allclose(guide[1:] / guide[:-1], 4.0)


def test_full_against_latent_has_an_n_squared_and_an_n_guide():
    series = {"full": (LENGTHS, LENGTHS ** 2 * 1e-6, LENGTHS ** 2 * 16.0),
              "latent": (LENGTHS, LENGTHS * 1e-5, LENGTHS * 64.0)}
    fig = cost_figure(series, {"full": "full", "latent": "latent"}, log_axes=True, titles=("time", "memory"),
                      x_title="n", time_title="s", memory_title="MiB", guide_name="∝ n²", time_hover="%{y}",
                      memory_hover="%{y}", guide_path="full", linear_guide=("latent", "∝ n"))
    guides = {t.name: t for t in fig.data if t.mode == "lines"}
    assert set(guides) == {"∝ n²", "∝ n"}
    assert np.allclose(guides["∝ n²"].y, LENGTHS ** 2 * 1e-6)
    assert np.allclose(guides["∝ n"].y, LENGTHS * 1e-5)
    assert len([t for t in fig.data if t.yaxis == "y2"]) == 2
    assert n_squared_guide(LENGTHS, LENGTHS, power=1).tolist() == LENGTHS.tolist()


@pytest.mark.parametrize("narrow, rows", [(False, 2), (True, 4)])
def test_latent_maps_are_four_heatmaps_the_lower_two_on_one_scale(narrow, rows):
    rng = np.random.default_rng(0)
    n, k = 6, 2
    read, write, full = rng.dirichlet(np.ones(n), k), rng.dirichlet(np.ones(k), n), rng.dirichlet(np.ones(n), n)
    tokens = ["a", "<b>", "c", "d", "e", "f"]
    fig = latent_maps_figure(read, write, write @ read, full, tokens, ["L1", "L2"], titles=list("ABCD"),
                             hover="%{y} %{x} %{z}", narrow=narrow)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert [np.asarray(h.z).shape for h in heatmaps] == [(k, n), (n, k), (n, n), (n, n)]
    assert [h.coloraxis for h in heatmaps] == [None, None, "coloraxis", "coloraxis"]
    assert fig.layout.coloraxis.cmin == 0.0
    assert np.isclose(fig.layout.coloraxis.cmax, max(np.max(full), np.max(write @ read)), atol=1e-4)
    assert [h.zmax for h in heatmaps[:2]] == pytest.approx([np.max(read), np.max(write)], abs=1e-6)
    assert list(heatmaps[0].customdata[1][1]) == ["L2", "&lt;b&gt;"]  # reader, read: escaped for the hover
    assert len({(h.xaxis, h.yaxis) for h in heatmaps}) == 4
    assert len([a for a in fig.layout.annotations if a.text in "ABCD"]) == 4
    assert len({round(h_axis.domain[0], 3) for h_axis in (fig.layout.yaxis, fig.layout.yaxis2, fig.layout.yaxis3,
                                                          fig.layout.yaxis4)}) == rows
