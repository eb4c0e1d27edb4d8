"""The measured-cost picture: time and memory against length, one line per path, log or linear axes."""
from __future__ import annotations

import numpy as np
import pytest

from figures.cost import MEBIBYTE, cost_figure, n_squared_guide

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
