"""The cost measurement: one row per length and path, its caps, and one measurement at a time per process.

Timings themselves are not asserted here (they live in bench/): only what the measurement returns.
"""
from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from explain import cost
from model.config import TransformerConfig

SMALL = TransformerConfig(20, 20, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=64)
OTHER = TransformerConfig(20, 20, d_model=32, n_heads=4, n_layers=1, d_ff=32, max_len=64)
GENEROUS = dict(length_budget_s=60.0, total_budget_s=600.0)


@pytest.fixture(autouse=True)
def no_kept_measurements():
    cost.forget_measurements()
    yield
    cost.forget_measurements()


def test_one_row_per_length_and_path_with_time_and_memory():
    seen = []
    result = cost.measure_cost(SMALL, lengths=(8, 16, 32), on_progress=lambda f, n: seen.append((f, n)), **GENEROUS)
    assert result.stopped == "done"
    assert result.lengths == [8, 16, 32]
    assert list(result.rows.columns) == cost.COLUMNS
    assert sorted(zip(result.rows["length"], result.rows["path"])) == [
        (n, path) for n in (8, 16, 32) for path in sorted(cost.PATHS)]
    assert (result.rows["seconds"] > 0).all()
    assert seen == [(1 / 3, 8), (2 / 3, 16), (1.0, 32)]


def test_on_the_cpu_the_memory_is_the_explicit_paths_maps():
    """Scores and weights: layers · heads · n² float32 each, counted from the maps the forward returned."""
    result = cost.measure_cost(SMALL, lengths=(8, 64), **GENEROUS)
    assert result.memory == "maps"
    lengths, memory = result.series("explicit", "memory_bytes")
    assert memory.tolist() == [2 * 1 * 2 * n * n * 4 for n in (8, 64)]
    assert np.isnan(result.series("sdpa", "memory_bytes")[1]).all()


def test_the_model_is_the_chosen_size_with_room_for_long_sentences():
    result = cost.measure_cost(OTHER, lengths=(100,), max_length=128, **GENEROUS)
    cfg = result.config
    assert (cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff) == (32, 4, 1, 32)
    assert cfg.max_len == 128 and cfg.dropout == 0.0
    assert result.lengths == [100]


def test_stops_at_the_length_cap():
    result = cost.measure_cost(SMALL, lengths=(8, 16, 32, 64, 128), max_length=32, **GENEROUS)
    assert result.lengths == [8, 16, 32]
    assert result.stopped == "done"


def test_stops_after_a_length_over_the_per_length_budget():
    result = cost.measure_cost(SMALL, lengths=(8, 16, 32), length_budget_s=0.0, total_budget_s=600.0)
    assert result.lengths == [8]
    assert result.stopped == "length_budget"


def test_stops_when_the_whole_run_is_over_its_budget():
    result = cost.measure_cost(SMALL, lengths=(8, 16, 32), length_budget_s=60.0, total_budget_s=0.0)
    assert result.lengths == [8]
    assert result.stopped == "total_budget"


def test_the_slope_is_fitted_on_the_larger_lengths():
    lengths = np.array([8, 16, 32, 64, 128, 256])
    noisy_small = np.array([1.0, 1.0, 1.0, 64.0 ** 2, 128.0 ** 2, 256.0 ** 2])  # flat, then n²
    assert cost.fitted_slope(lengths, noisy_small) == pytest.approx(2.0)
    assert cost.fitted_slope(lengths, lengths * 3.0) == pytest.approx(1.0)
    assert cost.fitted_slope(lengths[:2], lengths[:2] * 1.0) is None


def test_the_table_has_the_papers_rows():
    kinds = [row[0] for row in cost.COMPLEXITY]
    assert kinds == ["self_attention", "recurrent", "convolution", "restricted"]
    self_attention = cost.COMPLEXITY[0]
    assert self_attention[1:] == ("O(n²·d)", "O(1)", "O(1)")
    assert cost.COMPLEXITY[1][2:] == ("O(n)", "O(n)")


def test_a_second_caller_waits_for_the_first_and_gets_its_result():
    """While one measurement runs, another caller of the same size blocks, then gets the same result: the
    measurement ran once."""
    started, release = threading.Event(), threading.Event()
    runs, results = [], {}
    real = cost.measure_cost

    def counted(*args, **kwargs):
        runs.append(args[0])
        return real(*args, **kwargs)

    def first_progress(fraction, length):
        started.set()
        release.wait(30)

    def call(name, progress=None):
        results[name] = cost.measure_once(SMALL, "cpu", lengths=(8, 16), on_progress=progress, **GENEROUS)

    original = cost.measure_cost
    cost.measure_cost = counted
    try:
        first = threading.Thread(target=call, args=("first", first_progress))
        first.start()
        assert started.wait(30)
        assert cost.is_measuring()
        second = threading.Thread(target=call, args=("second",))
        second.start()
        second.join(0.5)
        assert second.is_alive()  # waiting for the first
        assert "second" not in results
        release.set()
        first.join(30)
        second.join(30)
    finally:
        cost.measure_cost = original
        release.set()
    assert results["first"] is results["second"]
    assert len(runs) == 1
    assert not cost.is_measuring()
    assert cost.cached_cost(SMALL, "cpu") is results["first"]


def test_two_sizes_are_never_measured_at_the_same_time():
    running, most, guard = [0], [0], threading.Lock()
    real = cost.measure_cost

    def watched(*args, **kwargs):
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return real(*args, **kwargs)
        finally:
            with guard:
                running[0] -= 1

    original = cost.measure_cost
    cost.measure_cost = watched
    try:
        threads = [threading.Thread(target=cost.measure_once, args=(config, "cpu"),
                                    kwargs=dict(lengths=(8, 16, 32), **GENEROUS)) for config in (SMALL, OTHER) * 2]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        cost.measure_cost = original
    assert most[0] == 1
    assert cost.cached_cost(SMALL, "cpu") is not None and cost.cached_cost(OTHER, "cpu") is not None


def test_the_kept_result_is_per_size_not_per_vocabulary_or_max_len():
    first = cost.measure_once(SMALL, "cpu", lengths=(8,), **GENEROUS)
    same_size = TransformerConfig(49, 49, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=40)
    assert cost.cached_cost(same_size, "cpu") is first
    assert cost.cached_cost(OTHER, "cpu") is None


def test_the_cpu_measurement_runs_on_one_thread_and_puts_the_setting_back():
    import torch
    before = torch.get_num_threads()
    seen = []
    torch.set_num_threads(2)
    try:
        cost.measure_cost(SMALL, lengths=(8, 16), on_progress=lambda f, n: seen.append(torch.get_num_threads()),
                          **GENEROUS)
        assert seen == [cost.CPU_THREADS] * 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_kept_result_ignores_the_positional_base_an_upload_may_set():
    """#33 item 5: keyed by the whole config, free floats in uploaded files forced a new measurement each."""
    first = cost.measure_once(SMALL, "cpu", lengths=(8,), **GENEROUS)
    assert cost.cached_cost(dataclasses.replace(SMALL, pe_base=12345.678), "cpu") is first


def test_waiting_callers_are_served_in_arrival_order_told_their_place_and_can_leave_the_line():
    order, places, release, started = [], {}, threading.Event(), threading.Event()
    real = cost.measure_cost

    def measured(config, *args, **kwargs):
        order.append(config.d_model)
        if config.d_model == SIZES[0]:
            started.set()
            release.wait(30)
        return real(config, *args, **kwargs)

    class Left(Exception):
        pass

    def leave_at_once(ahead):
        raise Left  # a rerun or a closed tab, raised from the script's next st call

    def call(d_model, on_wait=None):
        config = dataclasses.replace(SMALL, d_model=d_model)
        told = places.setdefault(d_model, [])
        try:
            cost.measure_once(config, "cpu", lengths=(8,), on_wait=on_wait or told.append, **GENEROUS)
        except Left:
            told.append("left")

    original = cost.measure_cost
    cost.measure_cost = measured
    try:
        first = threading.Thread(target=call, args=(SIZES[0],))
        first.start()
        assert started.wait(30)
        waiting = []
        for d_model in SIZES[1:]:
            waiting.append(threading.Thread(target=call, args=(d_model,)))
            waiting[-1].start()
            time.sleep(0.3)  # arrive one after another
        quitter = threading.Thread(target=call, args=(40, leave_at_once))
        quitter.start()
        quitter.join(5)
        assert not quitter.is_alive() and places[40] == ["left"]  # out of the line at its first tick
        time.sleep(3 * cost.WAIT_TICK_S)
        release.set()
        for thread in (first, *waiting):
            thread.join(60)
    finally:
        cost.measure_cost = original
        release.set()
    assert order == list(SIZES)  # arrival order, the quitter never measured
    assert places[SIZES[1]][0] == 1 and places[SIZES[2]][0] == 2  # told how many are ahead...
    assert places[SIZES[2]][-1] == 1  # ...and told again as the line moves
    assert not cost.is_measuring()


SIZES = (16, 24, 32)
