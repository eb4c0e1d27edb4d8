"""explain.norm_placement: the gradient of each layer at initialisation, post-norm vs pre-norm vs no residual,
and the "1 +" of one sublayer connection."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from explain import norm_placement as npl
from model.trace import Trace


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/unit/conftest.py


@pytest.fixture(scope="module")
def seed0(one_torch_thread) -> npl.GradientNorms:
    return npl.init_gradient_norms(0)


def test_pre_norm_gradients_are_flatter_than_post_norm_gradients_at_initialisation(seed0):
    """The known result (Xiong et al. 2020): post-norm's gradients grow towards the output, pre-norm's do not."""
    post, pre = seed0.decoder("post"), seed0.decoder("pre")
    assert npl.spread(pre) < npl.spread(post)  # largest ÷ smallest over the decoder's layers
    assert npl.growth(post) > 1.5  # the last decoder layer's gradient is well above the first's
    assert npl.growth(pre) < 1.2
    assert np.argmax(post) == len(post) - 1  # the largest gradient sits nearest the loss


@pytest.mark.parametrize("seed", [1, 2])
def test_post_norm_gradients_grow_towards_the_output_for_other_seeds_too(seed):
    result = npl.init_gradient_norms(seed)
    assert npl.growth(result.decoder("post")) > 1.2 > npl.growth(result.decoder("pre"))


def test_the_result_is_seeded_and_covers_every_layer(seed0):
    again = npl.init_gradient_norms(0)
    for wiring in npl.GRADIENT_WIRINGS:
        np.testing.assert_array_equal(again.norms[wiring], seed0.norms[wiring])
        assert seed0.norms[wiring].shape == (2 * npl.N_LAYERS,) and (seed0.norms[wiring] > 0).all()
    assert seed0.stacks == ("encoder",) * npl.N_LAYERS + ("decoder",) * npl.N_LAYERS
    other = npl.init_gradient_norms(3)
    assert not np.allclose(other.norms["post"], seed0.norms["post"])
    rows = npl.gradient_csv(seed0).strip().splitlines()
    assert rows[0] == "stack,layer,post_norm,pre_norm,no_residual_norm" and len(rows) == 1 + 2 * npl.N_LAYERS
    first = rows[1].split(",")
    assert first[:2] == ["encoder", "1"] and float(first[4]) == pytest.approx(seed0.norms["no_residual"][0], rel=1e-5)


def test_both_wirings_start_from_the_same_layer_weights():
    post, pre = (npl.init_model(first, 4, 2, 20) for first in (False, True))
    for a, b in zip(post.encoder_layers.parameters(), pre.encoder_layers.parameters()):
        assert torch.equal(a, b)
    assert post.encoder_norm is None and pre.encoder_norm is not None
    state = torch.random.get_rng_state()
    npl.init_model(False, 5, 2, 20)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global generator is left as it was


def test_layer_gradient_norms_are_the_l2_norm_of_each_layers_parameter_gradients():
    batch = npl.task_batch(0, size=2)
    model = npl.init_model(False, 0, 1, batch.vocab_size)
    model(batch.src, batch.tgt_in, need_weights=False).logits.square().mean().backward()
    expected = [torch.cat([p.grad.flatten() for p in layer.parameters()]).double().norm().item()
                for layer in (*model.encoder_layers, *model.decoder_layers)]
    np.testing.assert_allclose(npl.layer_gradient_norms(model), expected, rtol=1e-9)
    assert npl.spread(np.array([2.0, 1.0, 4.0])) == 4.0 and npl.growth(np.array([2.0, 1.0, 4.0])) == 2.0


# ------------------------------------------------------------------ no residual connections


@pytest.mark.parametrize("seed", npl.SEEDS)
def test_without_residuals_every_decoder_layer_below_the_last_gets_no_gradient(seed):
    """The page's reading: below the float32 floor sit exactly the decoder's layers under the last one; the
    encoder still gets gradients (the last decoder layer's cross-attention reads its output directly)."""
    result = npl.init_gradient_norms(seed)
    decoder = np.array(result.stacks) == "decoder"
    expected = decoder & (np.array(result.layers) < npl.N_LAYERS - 1)
    np.testing.assert_array_equal(result.below_floor(npl.NO_RESIDUAL), expected)
    assert not result.below_floor("post").any() and not result.below_floor("pre").any()
    assert result.floor() == pytest.approx(npl.FLOAT32_EPS * max(n.max() for n in result.norms.values()))
    assert result.norms[npl.NO_RESIDUAL][~decoder].min() > 0.1


def test_no_residual_is_post_norm_with_every_sublayer_output_replacing_the_stream():
    """With every connection in ``residual_off`` the norm reads the sublayer's update alone, everywhere."""
    assert len(npl.connections(2)) == 2 * 2 + 2 * 3
    batch = npl.task_batch(0, size=2)
    model = npl.init_model(False, 0, 2, batch.vocab_size)
    trace = Trace(residual_off=npl.connections(2))
    model(batch.src, batch.tgt_in, need_weights=False, trace=trace)
    for stack, layer, sub in npl.connections(2):
        name = f"{stack}.{layer}.{sub}_sublayer"
        torch.testing.assert_close(trace[f"{name}.norm_in"], trace[f"{name}.update"], rtol=0, atol=0)
        assert not torch.allclose(trace[f"{name}.norm_in"], trace[f"{name}.x_in"] + trace[f"{name}.update"])


def test_without_residuals_the_encoders_positions_collapse_to_one_vector(seed0):
    """Why the decoder's cross-attention passes nothing back: the memory is the same vector at every position
    (what the page says), while the post-norm model with residuals keeps its positions apart."""
    batch = npl.task_batch(0)
    real = batch.src[0] != 0
    spreads = {}
    for wiring, off in (("post", ()), (npl.NO_RESIDUAL, npl.connections(npl.N_LAYERS))):
        model = npl.init_model(False, 0, npl.N_LAYERS, batch.vocab_size)
        trace = Trace(residual_off=off)
        model(batch.src, batch.tgt_in, need_weights=False, trace=trace)
        memory = trace["memory"][0][real]
        spreads[wiring] = float((memory - memory.mean(0)).norm(dim=-1).max().detach())
    assert spreads[npl.NO_RESIDUAL] < 1e-4 < 1.0 < spreads["post"]


# ------------------------------------------------------------------ the "1 +" of one connection


@pytest.fixture(scope="module")
def top_cross(one_torch_thread) -> npl.OnePlus:
    return npl.one_plus_term(0, ("decoder", npl.N_LAYERS - 1, "cross_attn"))


def test_the_skip_hands_the_gradient_on_where_the_sublayer_passes_almost_nothing(top_cross):
    """The last decoder layer's cross-attention: ∂F/∂x is small with or without the skip, so with the skip
    x gets ∂L/∂(x+F) nearly unchanged and without it almost nothing."""
    post, none = "post", npl.NO_RESIDUAL
    assert top_cross.through_f[post] < 0.1 * top_cross.upstream[post]
    assert top_cross.gain(post) == pytest.approx(1.0, abs=0.01)
    assert top_cross.gain(none) < 1e-6 and top_cross.at_x[none] == top_cross.through_f[none]
    assert top_cross.resolved(post) and top_cross.resolved(none)
    for wiring in npl.ONE_PLUS_WIRINGS:  # the identity, entry by entry
        assert top_cross.identity_error[wiring] <= 1e-6 * top_cross.upstream[wiring]
    u, f, x = top_cross.upstream[post], top_cross.through_f[post], top_cross.at_x[post]
    assert abs(u - f) <= x <= u + f  # the length of a sum of two vectors
    table = top_cross.table()
    assert list(table.index) == list(npl.ONE_PLUS_ROWS) and list(table.columns) == list(npl.ONE_PLUS_WIRINGS)
    assert table.loc["skip", post] == u and np.isnan(table.loc["skip", none])
    assert table.loc["gain", none] == top_cross.gain(none)


def _loss_with_x_moved(seed: int, connection: tuple[str, int, str], residual: bool, step: torch.Tensor | None):
    """The float64 loss of the post-norm model with ``step`` added to ``connection``'s input x (a forward
    pre-hook on that sublayer connection), and that x."""
    stack, layer, sub = connection
    batch = npl.task_batch(seed)
    model = npl.init_model(False, seed, npl.N_LAYERS, batch.vocab_size).double()
    layers = model.encoder_layers if stack == "encoder" else model.decoder_layers
    module = {"self_attn": "self_attn_sublayer" if stack == "decoder" else "attn_sublayer",
              "cross_attn": "cross_attn_sublayer", "ffn": "ff_sublayer"}[sub]
    seen = []

    def move(_module, args):
        x = args[0] if step is None else args[0] + step
        seen.append(x)
        return (x, *args[1:])

    handle = getattr(layers[layer], module).register_forward_pre_hook(move)
    trace = Trace(record=False, residual_off=() if residual else npl.connections(npl.N_LAYERS))
    with torch.enable_grad():  # the loss itself in float64 too (the model's loss casts to float32)
        logits = model(batch.src, batch.tgt_in, need_weights=False, trace=trace).logits
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=model.config.pad_id)
    handle.remove()
    return loss, seen[0]


@pytest.mark.parametrize("residual", [True, False])
def test_what_x_gets_matches_a_finite_difference_of_the_loss(residual):
    """‖∂L/∂x‖ from :func:`one_plus_term` is the slope of the loss along ∂L/∂x, measured here by moving x
    itself in a float64 copy of the model (central difference), not by autograd's bookkeeping."""
    connection = ("decoder", npl.N_LAYERS - 1, "ffn")
    term = npl.one_plus_term(0, connection)
    loss, x = _loss_with_x_moved(0, connection, residual, None)
    direction, = torch.autograd.grad(loss, x)
    direction = direction / direction.norm()
    eps = 1e-4
    up, _ = _loss_with_x_moved(0, connection, residual, eps * direction)
    down, _ = _loss_with_x_moved(0, connection, residual, -eps * direction)
    slope = float((up - down).detach() / (2 * eps))
    wiring = "post" if residual else npl.NO_RESIDUAL
    assert slope == pytest.approx(term.at_x[wiring], rel=1e-3)
    assert term.gain(wiring) > 0.3  # the feed-forward passes a fair share back in both wirings
