"""Latent attention (explain.latent): the stretch means, the two maps against an independent computation of
the two cross-attentions, the implied n × n map and its rank, the multiply-add formula against a flop
counter, the maps of a real forward, and the measurement's rows (never its timings)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from explain import attention as xa
from explain import cost, latent
from model.config import TransformerConfig
from tests.untrained import untrained_checkpoint

SMALL = TransformerConfig(20, 20, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=64)


@pytest.fixture(autouse=True)
def no_kept_measurements():
    cost.forget_measurements()
    yield
    cost.forget_measurements()


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------ the computation


def test_stretch_means_average_contiguous_stretches():
    means = latent.stretch_means(7, 3)
    assert means.shape == (3, 7)
    assert np.allclose(means.sum(axis=1), 1.0)
    assert np.allclose(means[0], [1 / 3] * 3 + [0] * 4)
    assert np.allclose(means[1], [0] * 3 + [1 / 2] * 2 + [0] * 2)
    assert np.allclose(means[2], [0] * 5 + [1 / 2] * 2)
    assert np.allclose(latent.stretch_means(4, 4), np.eye(4))
    for n, k in ((3, 4), (3, 0)):
        with pytest.raises(ValueError):
            latent.stretch_means(n, k)


def test_the_two_maps_are_the_two_cross_attentions_of_the_latents_with_real_projections():
    """Latents = stretch means of X; step 1 they read X with W_Q, W_K; each becomes the weighted mean of X; step 2
    X reads them with W_Q, W_K and takes W_V of them. Computed here in numpy from X and the weights."""
    rng = np.random.default_rng(0)
    n, k, d_model, d_k = 9, 3, 8, 4
    x = rng.normal(size=(n, d_model))
    (wq, wk, wv), (bq, bk, bv) = rng.normal(size=(3, d_model, d_k)), rng.normal(size=(3, d_k))
    lat0 = latent.stretch_means(n, k) @ x
    a1 = softmax((lat0 @ wq + bq) @ (x @ wk + bk).T / math.sqrt(d_k))  # (k, n)
    lat1 = a1 @ x
    a2 = softmax((x @ wq + bq) @ (lat1 @ wk + bk).T / math.sqrt(d_k))  # (n, k)
    expected_out = a2 @ (lat1 @ wv + bv)

    q, kk, v = x @ wq + bq, x @ wk + bk, x @ wv + bv
    read, write = latent.latent_maps_of(q, kk, v, k)
    assert np.allclose(read, a1) and np.allclose(write, a2)
    out, _, _ = latent.latent_attention(*(torch.as_tensor(a) for a in (q, kk, v, latent.stretch_means(n, k) @ q)))
    assert np.allclose(out.numpy(), expected_out)
    assert np.allclose(out.numpy(), (write @ read) @ v)  # the output is the implied map times the values


@pytest.mark.parametrize("k", [1, 2, 5])
def test_shapes_rows_sum_to_one_and_the_product_has_rank_at_most_k(k):
    rng = np.random.default_rng(k)
    n, d_k = 12, 6
    q, kk, v = rng.normal(size=(3, n, d_k)) * 3
    read, write = latent.latent_maps_of(q, kk, v, k)
    assert read.shape == (k, n) and write.shape == (n, k)
    assert np.allclose(read.sum(axis=1), 1.0) and np.allclose(write.sum(axis=1), 1.0)
    maps = latent.LatentMaps(tokens=tuple("abcdefghijkl"), layer=1, head=1, stretches=((0, 0),) * k, read=read,
                             write=write, full=softmax(q @ kk.T))
    assert maps.implied.shape == (n, n)
    assert np.allclose(maps.implied.sum(axis=1), 1.0)
    assert maps.rank <= k
    assert maps.rank == np.linalg.matrix_rank(write @ read)
    assert 0.0 <= maps.distance <= 1.0


def test_with_one_latent_every_token_reads_the_same_row():
    rng = np.random.default_rng(3)
    q, kk, v = rng.normal(size=(3, 8, 4))
    read, write = latent.latent_maps_of(q, kk, v, 1)
    assert np.allclose(write, 1.0)
    implied = write @ read
    assert np.allclose(implied, implied[0]) and np.linalg.matrix_rank(implied) == 1


def test_the_distance_is_zero_to_itself_and_one_without_overlap():
    eye = np.eye(3)
    same = latent.LatentMaps(tokens=("a", "b", "c"), layer=1, head=1, stretches=((0, 0), (1, 1), (2, 2)),
                             read=eye, write=eye, full=eye)
    assert same.distance == 0.0
    shifted = latent.LatentMaps(tokens=("a", "b", "c"), layer=1, head=1, stretches=((0, 0), (1, 1), (2, 2)),
                                read=eye, write=eye, full=np.roll(eye, 1, axis=1))
    assert shifted.distance == 1.0


@pytest.mark.parametrize("n, k, heads, d_k", [(16, 4, 2, 8), (40, 3, 4, 16)])
def test_the_formula_counts_the_multiply_adds_that_torch_runs(n, k, heads, d_k):
    generator = torch.Generator().manual_seed(0)
    q, kk, v = torch.randn(3, 1, heads, n, d_k, generator=generator).unbind(0)
    latent_q = torch.randn(1, heads, k, d_k, generator=generator)
    d = heads * d_k
    with FlopCounterMode(display=False) as counter:
        latent.latent_attention(q, kk, v, latent_q)
    assert counter.get_total_flops() == 2 * latent.latent_multiply_adds(n, k, d) == 2 * 5 * n * k * d
    with FlopCounterMode(display=False) as counter:
        latent.scaled_dot_product_attention(q, kk, v)
    assert counter.get_total_flops() == 2 * latent.full_multiply_adds(n, d) == 2 * 2 * n * n * d
    assert latent.full_map_floats(n, heads) == heads * n * n
    assert latent.latent_map_floats(n, k, heads) == heads * 2 * n * k


# ------------------------------------------------------------------ on a sentence


def test_the_maps_of_a_real_forward_use_the_heads_q_k_and_its_real_map():
    ckpt = untrained_checkpoint()
    sentence = "abcdefgh abc"
    maps = latent.latent_maps(ckpt, sentence, 4, layer=2, head=2)
    view = xa.attention_view(ckpt, sentence, "", need_details=True)
    n = len(view.src_tokens)
    assert maps.tokens == tuple(view.src_tokens) and maps.latents == 4
    assert maps.read.shape == (4, n) and maps.write.shape == (n, 4) and maps.implied.shape == (n, n)
    assert np.allclose(maps.full, view.encoder[1, 1])
    enc = view.details["encoder"]
    read, write = latent.latent_maps_of(enc["q"][1, 1], enc["k"][1, 1], enc["v"][1, 1], 4)
    assert np.allclose(maps.read, read) and np.allclose(maps.write, write)
    assert maps.stretches[0][0] == 0 and maps.stretches[-1][1] == n - 1
    assert len(maps.latent_labels()) == 4
    lines = maps.csv().splitlines()
    assert lines[0] == ",".join(latent.MAP_CSV_COLUMNS)
    assert len(lines) == 1 + 2 * 4 * n + 2 * n * n


def test_more_latents_than_tokens_use_one_per_token():
    maps = latent.latent_maps(untrained_checkpoint(), "abc", 32)
    n = len(maps.tokens)
    assert maps.latents == n
    assert maps.stretches == tuple((i, i) for i in range(n))


# ------------------------------------------------------------------ measured (rows and counts, never timings)


def test_the_measurement_has_one_row_per_length_and_path_and_counted_memory():
    seen = []
    result = latent.measure_latent_cost(SMALL, 4, lengths=(8, 16, 32), on_progress=lambda f, n: seen.append(n))
    assert result.memory == "maps" and result.lengths == [8, 16, 32] and seen == [8, 16, 32]
    assert list(result.rows.columns) == cost.COLUMNS
    assert sorted(zip(result.rows["length"], result.rows["path"])) == [
        (n, path) for n in (8, 16, 32) for path in sorted(latent.PATHS)]
    assert (result.rows["seconds"] > 0).all()
    for path, floats in (("full", lambda n: 2 * n * n), ("latent", lambda n: 2 * 2 * n * 4)):
        lengths, memory = result.series(path, "memory_bytes")
        assert np.array_equal(memory, [4.0 * floats(int(n)) for n in lengths])


def test_the_measurement_is_kept_per_size_k_and_device_and_made_once():
    assert latent.cached_latent_cost(SMALL, 4) is None
    first = latent.measure_latent_once(SMALL, 4)
    assert latent.cached_latent_cost(SMALL, 4) is first
    assert latent.measure_latent_once(SMALL, 4) is first
    assert latent.cached_latent_cost(SMALL, 5) is None
    assert cost.cached_cost(SMALL) is None  # the page's other measurement is kept apart
