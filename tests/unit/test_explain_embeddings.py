"""explain.embeddings: the steps from token ids to the encoder's input, with the model's own weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explain.embeddings import embedding_stages, rms
from tests.untrained import untrained_checkpoint


def test_embedding_stages_are_what_the_model_feeds_its_encoder():
    ckpt = untrained_checkpoint(n_layers=1)
    ids = tuple(ckpt.tokenizer.encode("hello") + [0, 0])
    stages = embedding_stages(ckpt, ids)
    assert stages.tokens[-1] == "<pad>" and stages.scale == pytest.approx(4.0)
    np.testing.assert_allclose(stages.scaled, stages.lookup * 4.0)
    with torch.inference_mode():
        reference = ckpt.model.embed(torch.tensor([ids]), "src")[0].double().numpy()
    np.testing.assert_allclose(stages.total, reference, atol=1e-5)
    np.testing.assert_array_equal(stages.lookup[2], stages.lookup[3])  # "l" twice: the same row
    assert stages.matrix.shape == (ckpt.tokenizer.vocab_size, 16)
    assert stages.vocab[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"] and len(stages.vocab) == stages.matrix.shape[0]


def test_rms_is_the_typical_entry():
    assert rms(np.array([[3.0, -3.0], [3.0, 3.0]])) == pytest.approx(3.0)
    assert rms(np.zeros((0, 4))) == 0.0


@pytest.mark.parametrize("position_kind", ["rope", "none"])
def test_a_model_without_an_added_table_shows_no_positional_term(position_kind):
    """RoPE turns Q and K inside attention and "none" has no position: neither adds anything to the embedding."""
    from types import SimpleNamespace

    from model.config import TransformerConfig
    from model.transformer import Transformer

    plain = untrained_checkpoint(n_layers=1)
    config = TransformerConfig(**{**plain.model.config.to_dict(), "position_kind": position_kind})
    ckpt = SimpleNamespace(model=Transformer(config).eval(), tokenizer=plain.tokenizer, task=plain.task)
    ids = tuple(ckpt.tokenizer.encode("hello"))
    stages = embedding_stages(ckpt, ids)
    assert stages.position_kind == position_kind
    assert not stages.positional.any()
    with torch.inference_mode():
        reference = ckpt.model.embed(torch.tensor([ids]), "src")[0].double().numpy()
    np.testing.assert_allclose(stages.total, reference, atol=1e-5)


# ------------------------------------------------------------------ a lookup is a product with a one-hot matrix (#31)


def test_the_table_is_nn_embeddings_own_at_seed_42_and_the_global_random_state_is_untouched():
    import torch

    from explain.embeddings import lookup_is_product

    before = torch.random.get_rng_state()
    shown = lookup_is_product((0, 2, 4))
    assert torch.equal(torch.random.get_rng_state(), before)  # a generator of its own
    np.testing.assert_allclose(shown.weight, [[0.3367, 0.1288, 0.2345], [0.2303, -1.1229, -0.1863],
                                              [2.2082, -0.6380, 0.4617], [0.2674, 0.5349, 0.8094],
                                              [1.1103, -1.6898, -0.9890]], atol=5e-5)
    torch.manual_seed(42)
    np.testing.assert_array_equal(shown.weight, torch.nn.Embedding(5, 3).weight.detach().numpy())
    torch.random.set_rng_state(before)
    np.testing.assert_array_equal(shown.lookup, shown.weight[[0, 2, 4]])
    np.testing.assert_array_equal(shown.product, shown.lookup)
    assert shown.difference == 0.0 and shown.one_hot.tolist() == [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 1]]


@pytest.mark.parametrize("typed, expected", [("0, 2, 4", ((0, 2, 4), None)), ("3 3 1", ((3, 3, 1), None)),
                                             ("4；0", ((4, 0), None)), ("", (None, "empty")), ("5", (None, "out_of_range")),
                                             ("-1", (None, "out_of_range")), ("1.5", (None, "not_int")),
                                             ("٣", (None, "not_int")), ("0 " * 7, (None, "too_many")),
                                             ("9" * 400, (None, "not_int"))])
def test_typed_ids_are_read_or_named_as_wrong(typed, expected):
    from explain.embeddings import parse_ids

    assert parse_ids(typed) == expected
