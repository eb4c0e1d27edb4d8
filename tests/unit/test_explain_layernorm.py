"""explain.layernorm: a norm of the model token by token, LayerNorm vs BatchNorm, RMSNorm beside LayerNorm."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from explain import layernorm as ln
from model.config import TransformerConfig
from model.layers import RMSNorm
from model.stream import trace_stream
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

SOURCE = "hello world"
BATCH = ("hello world", "attention is all you need", "hi!")


def checkpoint(seed: int = 0, **variant) -> SimpleNamespace:
    """A small untrained copy-task model with random γ and β (a trained model's are not 1 and 0)."""
    tokenizer = CharTokenizer(get_task("copy").alphabet)
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                               dropout=0.0, max_len=64, **variant)
    torch.manual_seed(seed)
    model = Transformer(config).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (torch.nn.LayerNorm, RMSNorm)):
                module.weight.uniform_(0.5, 1.5)
                if getattr(module, "bias", None) is not None:
                    module.bias.uniform_(-0.5, 0.5)
    return SimpleNamespace(model=model, tokenizer=tokenizer, config=config, task={"name": "copy"})


POST, PRE_RMS = checkpoint(), checkpoint(1, norm_first=True, norm_kind="rms")


def test_sites_name_every_norm_of_the_model():
    assert ln.norm_sites(1, False) == ("encoder.0.self_attn", "encoder.0.ffn", "decoder.0.self_attn",
                                       "decoder.0.cross_attn", "decoder.0.ffn")
    pre = ln.norm_sites(2, True)
    assert pre[-1] == "decoder.final" and "encoder.final" in pre and len(pre) == 2 * 2 + 3 * 2 + 2
    for site in pre:
        ln.norm_module(PRE_RMS.model, site)  # every site is a norm of the model
    with pytest.raises(ValueError):
        ln.norm_module(POST.model, "encoder.final")  # a post-norm stack has no final norm
    for bad in ("encoder.0.cross_attn", "decoder.x.ffn", "middle.0.ffn", "encoder"):
        with pytest.raises(ValueError):
            ln.parse_site(bad)


@pytest.mark.parametrize("site", ln.norm_sites(2, False))
def test_layer_norm_gives_each_token_mean_0_and_variance_1_before_gamma_and_beta(site):
    view = ln.token_norm(POST, SOURCE, site)
    stats = view.stats()
    assert view.kind == "layer" and view.beta is not None
    assert np.abs(stats[("normalised", "mean")]).max() < 1e-6
    assert np.abs(stats[("normalised", "var")] - 1).max() < 1e-3  # σ² / (σ² + ε)
    assert np.abs(stats[("input", "var")] - 1).max() > 1e-2  # the input was not normalised already
    np.testing.assert_allclose(view.outputs, view.normalised * view.gamma + view.beta, atol=1e-5)


def test_the_view_reads_the_norm_the_forward_pass_uses():
    """Post-norm: the norm's output is the stream leaving the connection; pre-norm: what the sublayer reads."""
    for ckpt in (POST, PRE_RMS):
        src_ids, tgt_ids = ln.sentence_pair_ids(ckpt, SOURCE)
        trace = trace_stream(ckpt.model, torch.tensor([src_ids]), torch.tensor([tgt_ids]))
        for s in trace.sublayers:
            view = ln.token_norm(ckpt, SOURCE, f"{s.stack}.{s.layer}.{s.sublayer}")
            expected = s.sublayer_in if ckpt.model.config.norm_first else s.x_out
            np.testing.assert_allclose(view.outputs, expected[0].double().numpy(), atol=1e-5)
            assert len(view.tokens) == (len(src_ids) if s.stack == "encoder" else len(tgt_ids))
    view = ln.token_norm(PRE_RMS, SOURCE, "encoder.final")
    src_ids, tgt_ids = ln.sentence_pair_ids(PRE_RMS, SOURCE)
    memory = trace_stream(PRE_RMS.model, torch.tensor([src_ids]), torch.tensor([tgt_ids])).memory
    np.testing.assert_allclose(view.outputs, memory[0].double().numpy(), atol=1e-5)


def test_gamma_and_beta_are_the_chosen_norms_own():
    site = "decoder.1.ffn"
    module = ln.norm_module(POST.model, site)
    view = ln.token_norm(POST, SOURCE, site)
    np.testing.assert_allclose(view.gamma, module.weight.detach().double().numpy())
    np.testing.assert_allclose(view.beta, module.bias.detach().double().numpy())
    other = ln.token_norm(POST, SOURCE, "decoder.0.ffn")
    assert not np.allclose(view.gamma, other.gamma)


def test_rms_norm_scales_to_rms_1_without_centring_and_has_no_beta():
    view = ln.token_norm(PRE_RMS, SOURCE, "encoder.1.ffn")
    stats = view.stats()
    assert view.kind == "rms" and view.beta is None and view.shown_stats == ("mean", "rms")
    assert np.abs(stats[("normalised", "rms")] - 1).max() < 1e-3
    assert np.abs(stats[("normalised", "mean")]).max() > 1e-2  # not centred
    np.testing.assert_allclose(view.outputs, view.normalised * view.gamma, atol=1e-5)
    assert list(view.table().columns) == [f"{stage}_{stat}" for stage in ln.STAGES for stat in ("mean", "rms")]


def test_rms_beside_layer_norm_differs_only_by_the_centring():
    x = np.random.default_rng(0).normal(0.7, 2.0, 32)
    both = ln.rms_vs_layer(x)
    assert both.rms_value ** 2 == pytest.approx(both.std ** 2 + both.mean ** 2)
    np.testing.assert_allclose(both.layer, (x - x.mean()) / np.sqrt(x.var() + ln.NORM_EPS), atol=1e-9)
    with torch.no_grad():
        model_rms = RMSNorm(32).double()(torch.tensor(x)).numpy()  # the model's hand-written RMSNorm, γ = 1
    np.testing.assert_allclose(both.rms, model_rms, atol=1e-9)
    centred = ln.rms_vs_layer(x - x.mean())
    np.testing.assert_allclose(centred.rms, centred.layer, atol=1e-6)  # mean 0: the two agree
    shifted = ln.rms_vs_layer(x + 3.0)
    np.testing.assert_allclose(shifted.layer, both.layer, atol=1e-9)  # LayerNorm ignores a shift
    assert np.abs(shifted.rms - both.rms).max() > 0.1  # RMSNorm does not


@pytest.mark.parametrize("count_pads", [True, False])
def test_batch_norm_of_a_sentence_moves_when_another_sentence_changes_and_layer_norm_does_not(count_pads):
    before = ln.batch_compare(POST, BATCH, 0, count_pads)
    after = ln.batch_compare(POST, (BATCH[0], "attention is all you need today", BATCH[2]), 0, count_pads)
    assert before.tokens == after.tokens
    np.testing.assert_array_equal(after.layer_norm, before.layer_norm)
    assert np.abs(after.batch_norm - before.batch_norm).max() > 0.05
    assert before.layer_shift == 0.0 and before.batch_shift > 0.05


def test_batch_norm_matches_torch_batchnorm_and_the_pads_pull_its_statistics():
    view = ln.batch_compare(POST, BATCH, 2, True)
    src = [POST.tokenizer.encode(s) for s in BATCH]
    width = max(map(len, src))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in src])
    with torch.no_grad():
        x = POST.model.embed(ids, "src").double()
        reference = torch.nn.BatchNorm1d(16, affine=False, eps=ln.NORM_EPS).double().train()
        rows = reference(x.reshape(-1, 16)).reshape(x.shape)  # the library's BatchNorm over every position
    np.testing.assert_allclose(view.batch_norm, rows[2, :len(src[2])].numpy(), atol=1e-9)
    np.testing.assert_allclose(view.layer_norm, torch.nn.functional.layer_norm(x[2, :len(src[2])], (16,)).numpy(),
                               atol=1e-6)
    assert view.pads == width * 3 - sum(map(len, src)) and view.positions == width * 3
    assert np.abs(view.feature_mean_all - view.feature_mean_real).max() > 0.01
    real_only = ln.batch_compare(POST, BATCH, 2, False)
    assert np.abs(real_only.batch_norm - view.batch_norm).max() > 0.01  # the pads changed the statistics


def test_no_padding_no_pull_and_a_sentence_alone_is_its_own_batch():
    same_length = ln.batch_compare(POST, ("abc", "xyz"), 0, True)
    assert same_length.pads == 0
    np.testing.assert_allclose(same_length.feature_mean_all, same_length.feature_mean_real)
    alone = ln.batch_compare(POST, ("abc",), 0, True)
    assert alone.batch_shift == 0.0 and alone.layer_shift == 0.0


def test_csv_exports_hold_every_token():
    view = ln.token_norm(POST, SOURCE, "encoder.0.ffn")
    lines = view.csv().strip().splitlines()
    assert len(lines) == 1 + len(view.tokens) and lines[0].startswith("position,token,input_mean,input_var")
    batch = ln.batch_compare(POST, BATCH, 0, True)
    rows = ln.matrix_csv(batch.batch_norm, batch.tokens).strip().splitlines()
    assert len(rows) == 1 + len(batch.tokens) and rows[0].count(",") == 2 + 16 - 1
