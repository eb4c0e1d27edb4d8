"""Dot-product vs additive compatibility (explain.compatibility): the weights drawn, the scores, the cost."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explain.compatibility import (COST_ROWS, AdditiveParams, CompatibilityCost, additive_params, additive_scores,
                                   additive_view, masked_softmax)


def test_the_weights_are_two_new_linear_layers_and_v_at_seed_0_and_the_global_random_state_is_untouched():
    before = torch.random.get_rng_state()
    params = additive_params(d_k=6, d_a=4)
    assert torch.equal(torch.random.get_rng_state(), before)  # a generator of its own
    torch.manual_seed(0)
    w_q, w_k = torch.nn.Linear(6, 4, bias=False), torch.nn.Linear(6, 4, bias=False)
    v = torch.nn.Linear(4, 1, bias=False)
    torch.random.set_rng_state(before)
    np.testing.assert_allclose(params.w_q, w_q.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(params.w_k, w_k.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(params.v, v.weight.detach().numpy()[0], rtol=1e-6)
    assert params.w_q.shape == (4, 6) and params.v.shape == (4,)
    assert np.abs(params.w_q).max() <= 1 / math.sqrt(6) and np.abs(params.v).max() <= 1 / math.sqrt(4)
    assert params.bound == pytest.approx(float(np.abs(params.v).sum()))


@pytest.mark.parametrize("t_q, t_k, d_k, d_a", [(5, 7, 16, 16), (1, 3, 4, 9), (3, 3, 8, 2)])
def test_the_additive_scores_are_one_per_query_and_key_and_match_torch(t_q, t_k, d_k, d_a):
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(t_q, d_k)), rng.normal(size=(t_k, d_k))
    params = additive_params(d_k, d_a)
    scores = additive_scores(q, k, params)
    assert scores.shape == (t_q, t_k)
    wq, wk, v = (torch.tensor(a) for a in (params.w_q, params.w_k, params.v))
    expected = torch.stack([torch.stack([v @ torch.tanh(wq @ torch.tensor(qi) + wk @ torch.tensor(kj)) for kj in k])
                            for qi in q]).numpy()
    np.testing.assert_allclose(scores, expected, atol=1e-12)
    assert (np.abs(scores) <= params.bound + 1e-12).all()


def test_a_two_by_two_case_by_hand():
    """W_q = W_k = I, v = (1, 2): score(q, k) = tanh(q₁ + k₁) + 2·tanh(q₂ + k₂)."""
    params = AdditiveParams(w_q=np.eye(2), w_k=np.eye(2), v=np.array([1.0, 2.0]))
    q = np.array([[1.0, 0.0], [0.0, -1.0]])
    k = np.array([[1.0, 1.0], [0.0, 0.0]])
    # tanh(0) = 0, tanh(1) = 0.7616, tanh(2) = 0.9640, tanh(−1) = −0.7616
    expected = [[0.9640 + 2 * 0.7616, 0.7616 + 2 * 0.0],  # q₁ = (1, 0) with k₁ = (1, 1) and k₂ = (0, 0)
                [0.7616 + 2 * 0.0, 0.0 + 2 * -0.7616]]  # q₂ = (0, −1)
    np.testing.assert_allclose(additive_scores(q, k, params), expected, atol=1e-4)
    assert expected[0][0] == pytest.approx(2.4872)


def test_the_softmax_leaves_blocked_keys_out():
    scores = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [5.0, -5.0, 0.0]])
    blocked = np.triu(np.ones((3, 3), dtype=bool), k=1)
    weights = masked_softmax(scores, blocked)
    np.testing.assert_allclose(weights[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(weights[1], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(weights[2], torch.tensor(scores[2]).softmax(-1).numpy())
    np.testing.assert_allclose(masked_softmax(scores, None).sum(axis=1), 1.0)


def test_the_view_uses_d_k_as_hidden_size_by_default_and_its_rows_sum_to_one():
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(4, 8)), rng.normal(size=(4, 8))
    view = additive_view(q, k, np.triu(np.ones((4, 4), dtype=bool), k=1))
    assert view.params.w_q.shape == (8, 8) and view.scores.shape == view.weights.shape == (4, 4)
    np.testing.assert_allclose(view.weights.sum(axis=1), 1.0)
    assert view.weights[0, 1:].tolist() == [0.0, 0.0, 0.0]
    assert additive_view(q, k, None, d_a=3).params.v.shape == (3,)


def test_the_cost_formulas_for_three_queries_four_keys():
    cost = CompatibilityCost(n_q=3, n_k=4, d_k=16, d_a=16)
    assert cost.dot_mults == 3 * 4 * 16 == 192
    assert cost.additive_mults == (3 + 4) * 16 * 16 + 3 * 4 * 16 == 1984
    assert cost.additive_tanh == 192 and cost.additive_params == 2 * 16 * 16 + 16 == 528
    assert (cost.dot_held, cost.additive_held) == (12, 192)
    assert cost.per_score() == pytest.approx((16.0, 1984 / 12))
    table = cost.table()
    assert list(table["quantity"]) == list(COST_ROWS)
    cells = table.set_index("quantity")
    assert cells.loc["mults", "dot"] == "n_q·n_k·d_k = 192"
    assert cells.loc["mults", "additive"] == "(n_q + n_k)·d_a·d_k + n_q·n_k·d_a = 1,984"
    assert cells.loc["per_score", "additive"].endswith("= 165.3")
    assert (cells.loc["tanh", "dot"], cells.loc["params", "dot"]) == ("0", "0")


def test_the_cost_agrees_with_counting_the_additive_computation():
    """The multiplications counted from the shapes of the three products additive_scores does."""
    n_q, n_k, d_k, d_a = 5, 9, 32, 12
    counted = n_q * d_k * d_a + n_k * d_k * d_a + n_q * n_k * d_a  # q Wqᵀ, k Wkᵀ, tanh(…) · v
    assert CompatibilityCost(n_q, n_k, d_k, d_a).additive_mults == counted
