"""Paper vs this code: every live number of the page against an independent computation."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from explain import paper_vs_code as pvc
from explain.output import smoothed_target
from model.checkpoint import Checkpoint
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import EncoderLayer, Transformer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def checkpoint(*, norm_first: bool = False, norm_kind: str = "layer", n_layers: int = 2, d_model: int = 16,
               target_alphabet: str | None = None, history: dict | None = None) -> Checkpoint:
    """A small random model in eval mode; a different ``target_alphabet`` gives the target side its own vocabulary."""
    torch.manual_seed(0)
    source = CharTokenizer("abcdef")
    target = source if target_alphabet is None else CharTokenizer(target_alphabet)
    config = TransformerConfig(src_vocab_size=source.vocab_size, tgt_vocab_size=target.vocab_size, d_model=d_model,
                               n_heads=2, n_layers=n_layers, d_ff=32, dropout=0.1, max_len=32, norm_first=norm_first,
                               norm_kind=norm_kind)
    return Checkpoint(model=Transformer(config).eval(), tokenizer=source, config=config, task={"name": "copy"},
                      history=history if history is not None else {}, format_version=1, target_tokenizer=target)


def params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_row_keys_are_unique_and_nine():
    assert len(pvc.ROW_KEYS) == len(set(pvc.ROW_KEYS)) == 9


# ------------------------------------------------------------------ numbers read from the model


@pytest.mark.parametrize(("norm_first", "norm_kind", "per_norm"), [(False, "layer", 0), (True, "layer", 32),
                                                                    (True, "rms", 16)])
def test_norm_placement_and_the_final_norms(norm_first, norm_kind, per_norm):
    ckpt = checkpoint(norm_first=norm_first, norm_kind=norm_kind)
    facts = pvc.model_facts(ckpt)
    assert facts.norm_first is norm_first
    assert facts.final_norms == (2 if norm_first else 0)
    assert facts.final_norm_params == 2 * per_norm  # LayerNorm: γ and β (2·d), RMSNorm: γ (d), one per stack


def test_w_o_is_d_times_d_plus_d_in_every_attention():
    ckpt = checkpoint(d_model=16, n_layers=3)
    facts = pvc.model_facts(ckpt)
    assert facts.out_proj_params == 16 * 16 + 16 == params(nn.Linear(16, 16))
    attentions = [m for m in ckpt.model.modules() if hasattr(m, "out_proj")]
    assert facts.n_attentions == len(attentions) == 9
    assert facts.out_proj_total == sum(params(m.out_proj) for m in attentions)
    assert facts.total_params == ckpt.model.num_params()


def test_embedding_scale_is_sqrt_d_model_and_the_sizes_it_gives():
    ckpt = checkpoint(d_model=16)
    facts = pvc.model_facts(ckpt)
    assert facts.embed_scale == math.sqrt(16) == 4.0
    ids = torch.arange(ckpt.config.src_vocab_size)[None]  # every token once
    with torch.no_grad():
        scaled = ckpt.model.src_embed(ids)  # (1, V, d): what the model really adds the positions to
    assert facts.scaled_rms == pytest.approx(float(scaled.square().mean().sqrt()), rel=1e-5)
    assert facts.embed_rms == pytest.approx(facts.scaled_rms / 4.0, rel=1e-6)
    assert facts.position_rms == pytest.approx(1 / math.sqrt(2), rel=1e-3)  # half sines, half cosines


def tied(model: Transformer, *, output: bool = True, embeddings: bool = False) -> Transformer:
    """A copy of ``model`` with its output layer (and its source embedding) tied to its target embedding."""
    model = copy.deepcopy(model)
    if output:
        model.generator.weight = model.tgt_embed.lookup.weight
    if embeddings:
        model.src_embed.lookup.weight = model.tgt_embed.lookup.weight
    return model


def test_sharing_saves_what_tying_the_matrices_saves_with_one_vocabulary():
    ckpt = checkpoint()
    facts = pvc.model_facts(ckpt)
    assert facts.same_vocab and not facts.shares_output and not facts.shares_src_tgt
    V, d = ckpt.config.tgt_vocab_size, ckpt.config.d_model
    assert facts.output_tie_saving == V * d == ckpt.model.num_params() - tied(ckpt.model).num_params()
    assert facts.src_tgt_tie_saving == V * d
    both = tied(ckpt.model, embeddings=True).num_params()
    assert facts.output_tie_saving + facts.src_tgt_tie_saving == ckpt.model.num_params() - both
    assert pvc.model_facts(Checkpoint(**{**ckpt.__dict__, "model": tied(ckpt.model)})).shares_output


def test_two_vocabularies_cannot_share_the_embeddings():
    ckpt = checkpoint(target_alphabet="wxyz")
    facts = pvc.model_facts(ckpt)
    assert not facts.same_vocab and facts.src_tgt_tie_saving == 0
    assert facts.output_tie_saving == ckpt.config.tgt_vocab_size * ckpt.config.d_model
    same_size = checkpoint(target_alphabet="uvwxyz")  # as many tokens, other tokens: still two vocabularies
    assert same_size.config.src_vocab_size == same_size.config.tgt_vocab_size
    assert not pvc.model_facts(same_size).same_vocab


def test_dropout_sites_mode_and_training_settings():
    n = 2
    ckpt = checkpoint(n_layers=n, history={"config": {"dropout": 0.0}})
    facts = pvc.model_facts(ckpt)
    assert facts.dropout_sites == {"embeddings": 1, "sublayers": 2 * n + 3 * n, "ffn_hidden": 2 * n,
                                   "attention_weights": 0}
    assert facts.dropout_p == 0.1 and facts.training_mode is False
    assert facts.trained_dropout == 0.0
    assert pvc.model_facts(checkpoint()).trained_dropout is None
    assert pvc.TRAINING_DEFAULTS["dropout"] == 0.1  # the Training page's runs train with dropout


def test_reading_the_model_changes_nothing_and_counts_its_separate_layers():
    ckpt = checkpoint(n_layers=3)
    before = {k: v.clone() for k, v in ckpt.model.state_dict().items()}
    facts = pvc.model_facts(ckpt)
    assert facts.distinct_encoder_layers == facts.distinct_decoder_layers == 3 == facts.n_layers
    assert not ckpt.model.training
    assert all(torch.equal(before[k], v) for k, v in ckpt.model.state_dict().items())


# ------------------------------------------------------------------ 5. mask polarity


def test_torch_key_padding_mask_agrees_with_this_code_only_inverted():
    demo = pvc.mask_polarity_demo()
    assert demo.key_padding_mask == [False] * (pvc.DEMO_KEYS - pvc.DEMO_PADS) + [True] * pvc.DEMO_PADS
    assert demo.diff_inverted < 1e-5 and demo.diff_sdpa < 1e-5
    assert demo.diff_uninverted > 0.1  # the mistake is visible
    pads = np.array(demo.key_padding_mask)
    np.testing.assert_allclose(demo.inverted_weights, demo.torch_weights, atol=1e-6)
    assert (demo.torch_weights[pads] == 0).all() and demo.torch_weights.sum() == pytest.approx(1, abs=1e-6)
    assert (demo.uninverted_weights[~pads] == 0).all()  # un-inverted: the query looks only at the padding
    assert demo.uninverted_weights[pads].sum() == pytest.approx(1, abs=1e-6)


def test_the_torch_side_of_the_demo_is_plain_nn_multihead_attention():
    """Rebuilt here from the same seed: the weights the demo shows are nn.MultiheadAttention's own."""
    torch.manual_seed(pvc.DEMO_SEED)
    mha = nn.MultiheadAttention(pvc.DEMO_D, pvc.DEMO_HEADS, batch_first=True).eval()
    x = torch.randn(1, pvc.DEMO_KEYS, pvc.DEMO_D)
    pad = torch.tensor([[False] * (pvc.DEMO_KEYS - pvc.DEMO_PADS) + [True] * pvc.DEMO_PADS])
    with torch.no_grad():
        _, weights = mha(x, x, x, key_padding_mask=pad)
    np.testing.assert_array_equal(pvc.mask_polarity_demo().torch_weights, weights[0, 0].numpy())


# ------------------------------------------------------------------ 6. −inf


def test_a_fully_masked_row_is_nan_with_inf_uniform_with_minus_1e9_and_zero_here():
    demo = pvc.masked_row_demo()
    assert np.isnan(demo.with_inf[1]).all() and np.isfinite(demo.with_inf[0]).all()
    np.testing.assert_array_equal(demo.this_code[1], np.zeros(4))
    np.testing.assert_allclose(demo.with_big[1], np.full(4, 0.25))
    for weights in (demo.with_big, demo.this_code):  # the row that has keys: the same in all three
        np.testing.assert_allclose(weights[0], demo.with_inf[0], atol=1e-7)
    assert (demo.this_code[0][~demo.mask[0]] == 0).all()
    assert demo.fill_value == torch.finfo(torch.float32).min
    assert [demo.outcome(m) for m in ("with_inf", "with_big", "this_code")] == ["nan", "uniform", "zeros"]
    table = demo.table({"with_inf": "a", "with_big": "b", "this_code": "c"}, ("r1", "r2"))
    assert table.shape == (6, 5) and table.iloc[1, 1:].isna().all() and (table.iloc[5, 1:] == 0).all()


# ------------------------------------------------------------------ 7. label smoothing


@pytest.mark.parametrize(("vocab_size", "target", "epsilon"), [(6, 3, 0.1), (10, 1, 0.2), (3, 2, 0.1)])
def test_smoothed_targets_read_off_the_losses(vocab_size, target, epsilon):
    demo = pvc.smoothing_targets(vocab_size, target, 0, epsilon)
    np.testing.assert_allclose(demo.this_code, smoothed_target(vocab_size, target, epsilon, 0), atol=1e-6)
    expected_all = np.full(vocab_size, epsilon / vocab_size)
    expected_all[target] += 1 - epsilon
    np.testing.assert_allclose(demo.over_all, expected_all, atol=1e-9)
    assert demo.this_code.sum() == pytest.approx(1, abs=1e-6) and demo.over_all.sum() == pytest.approx(1)
    others = [i for i in range(vocab_size) if i not in (0, target)]
    assert pvc.other_token_shares(vocab_size, epsilon) == pytest.approx(
        (demo.this_code[others[0]], demo.over_all[others[0]]), abs=1e-6)


# ------------------------------------------------------------------ 9. one layer object N times


@pytest.mark.parametrize("n", [2, 3, 4])
def test_one_layer_repeated_has_one_nth_of_the_parameters_and_identical_maps(n):
    demo = pvc.shared_layer_demo(n)
    cfg = TransformerConfig(src_vocab_size=8, tgt_vocab_size=8, d_model=pvc.LAYER_D, n_heads=pvc.LAYER_HEADS,
                            n_layers=n, d_ff=pvc.LAYER_FF, dropout=0.0)
    assert demo.layer_params == params(EncoderLayer(cfg))
    assert demo.shared_params * n == demo.separate_params == n * demo.layer_params  # 1/N exactly
    assert demo.same_object
    assert demo.shared_diffs == [0.0] * n
    assert demo.separate_diffs[0] == 0.0 and min(demo.separate_diffs[1:]) > 1e-3
    for maps in (demo.shared_maps, demo.separate_maps):
        assert len(maps) == n
        for weights in maps:
            assert weights.shape == (pvc.LAYER_T, pvc.LAYER_T)
            np.testing.assert_allclose(weights.sum(axis=-1), 1, atol=1e-6)
    for weights in demo.shared_maps[1:]:
        np.testing.assert_array_equal(weights, demo.shared_maps[0])


@pytest.mark.parametrize("names", [["layer 1", "layer 2", "layer 3"], ["第 1 层", "第 2 层", "第 3 层"]])
def test_maps_side_by_side_lines_up_every_layer(names):
    demo = pvc.shared_layer_demo()
    text = pvc.maps_side_by_side(demo.shared_maps, names)
    lines = text.splitlines()
    assert len(lines) == 1 + pvc.LAYER_T and lines[0].split() == " ".join(names).split()
    for i, line in enumerate(lines[1:]):
        numbers = [float(x) for x in line.split()]
        assert len(numbers) == pvc.LAYER_N * pvc.LAYER_T
        blocks = [numbers[n * pvc.LAYER_T:(n + 1) * pvc.LAYER_T] for n in range(pvc.LAYER_N)]
        assert blocks == [blocks[0]] * pvc.LAYER_N  # one object: the same map in every layer
        np.testing.assert_allclose(blocks[0], demo.shared_maps[0][i], atol=0.005)
    separate = pvc.maps_side_by_side(demo.separate_maps, names).splitlines()[1]
    assert len(set(separate.split("   "))) == pvc.LAYER_N  # separate layers: three different rows
    block = len(" ".join(["0.00"] * pvc.LAYER_T)) + 3  # one map's row and the gap after it, in columns
    for n, name in enumerate(names):  # each name starts where its map does (a Chinese character is two columns)
        assert pvc._columns(lines[0][:lines[0].index(name)]) == n * block


def test_the_demos_repeat_exactly():
    for demo in (pvc.mask_polarity_demo, pvc.masked_row_demo, pvc.shared_layer_demo):
        a, b = demo(), demo()
        for name, value in a.__dict__.items():
            other = b.__dict__[name]
            if isinstance(value, list) and value and isinstance(value[0], np.ndarray):
                assert all(np.array_equal(x, y) for x, y in zip(value, other)), name
            else:
                np.testing.assert_array_equal(value, other, err_msg=name)
