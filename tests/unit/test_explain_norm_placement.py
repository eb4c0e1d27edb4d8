"""explain.norm_placement: the gradient of each layer at initialisation, post-norm vs pre-norm."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explain import norm_placement as npl


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
    for placement in npl.PLACEMENTS:
        np.testing.assert_array_equal(again.norms[placement], seed0.norms[placement])
        assert seed0.norms[placement].shape == (2 * npl.N_LAYERS,) and (seed0.norms[placement] > 0).all()
    assert seed0.stacks == ("encoder",) * npl.N_LAYERS + ("decoder",) * npl.N_LAYERS
    other = npl.init_gradient_norms(3)
    assert not np.allclose(other.norms["post"], seed0.norms["post"])
    rows = npl.gradient_csv(seed0).strip().splitlines()
    assert rows[0] == "stack,layer,post_norm,pre_norm" and len(rows) == 1 + 2 * npl.N_LAYERS


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
