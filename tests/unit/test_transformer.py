"""The hand-written Transformer: parity with torch.nn.Transformer, the two attention paths, invariants."""
import math

import pytest
import torch
from torch import nn

from model import Transformer, TransformerConfig

V = 23


def make_model(norm_first=False, dropout=0.0, **kw):
    torch.manual_seed(0)
    cfg = TransformerConfig(V, V + 4, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=dropout,
                            norm_first=norm_first, **kw)
    return Transformer(cfg)


def random_batch(B=3, S=7, T=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, V, (B, S), generator=g)
    tgt = torch.randint(1, V, (B, T), generator=g)
    src[0, S - 2:] = 0  # padding at the end of some rows
    src[-1, 3:] = 0
    tgt[1, T - 2:] = 0
    return src, tgt


def copy_into_reference(ours: Transformer) -> nn.Transformer:
    """nn.Transformer with our weights. Its bool masks mean True = do NOT attend: inverted here only."""
    cfg = ours.config
    ref = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.n_layers, cfg.d_ff, dropout=0.0,
                         batch_first=True, norm_first=cfg.norm_first)

    def copy_attn(dst: nn.MultiheadAttention, src):
        dst.in_proj_weight.data.copy_(src.in_proj.weight)
        dst.in_proj_bias.data.copy_(src.in_proj.bias)
        dst.out_proj.weight.data.copy_(src.out_proj.weight)
        dst.out_proj.bias.data.copy_(src.out_proj.bias)

    def copy_norm(dst, src):
        dst.weight.data.copy_(src.weight)
        dst.bias.data.copy_(src.bias)

    def copy_ff(dst, src):
        for name in ("linear1", "linear2"):
            getattr(dst, name).weight.data.copy_(getattr(src, name).weight)
            getattr(dst, name).bias.data.copy_(getattr(src, name).bias)

    for theirs, mine in zip(ref.encoder.layers, ours.encoder_layers):
        copy_attn(theirs.self_attn, mine.self_attn)
        copy_ff(theirs, mine.feed_forward)
        copy_norm(theirs.norm1, mine.attn_sublayer.norm)
        copy_norm(theirs.norm2, mine.ff_sublayer.norm)
    for theirs, mine in zip(ref.decoder.layers, ours.decoder_layers):
        copy_attn(theirs.self_attn, mine.self_attn)
        copy_attn(theirs.multihead_attn, mine.cross_attn)
        copy_ff(theirs, mine.feed_forward)
        copy_norm(theirs.norm1, mine.self_attn_sublayer.norm)
        copy_norm(theirs.norm2, mine.cross_attn_sublayer.norm)
        copy_norm(theirs.norm3, mine.ff_sublayer.norm)
    if cfg.norm_first:
        copy_norm(ref.encoder.norm, ours.encoder_norm)
        copy_norm(ref.decoder.norm, ours.decoder_norm)
    else:
        # nn.Transformer always ends its stacks with a LayerNorm; the paper's post-norm model has
        # none (each sublayer already ends in one), so the reference is configured as the paper.
        ref.encoder.norm = None
        ref.decoder.norm = None
    return ref


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_parity_with_torch_nn_transformer(norm_first):
    ours = make_model(norm_first=norm_first)
    ref = copy_into_reference(ours)
    # train() with dropout 0 keeps nn.Transformer off its nested-tensor fast path, which zeroes
    # padded positions of the encoder output instead of computing them.
    ours.train(), ref.train()
    for seed in range(3):
        src, tgt = random_batch(seed=seed)
        mine = ours(src, tgt).logits
        T = tgt.size(1)
        memory = ref.encoder(ours.embed(src, "src"), src_key_padding_mask=src == 0)
        out = ref.decoder(
            ours.embed(tgt, "tgt"), memory,
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.bool),
            tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0,
        )
        theirs = ours.generator(out)
        assert torch.allclose(mine, theirs, atol=1e-5), (mine - theirs).abs().max()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("scale_scores", [True, False])
def test_explicit_path_equals_sdpa_path_outputs_and_gradients(norm_first, scale_scores):
    model = make_model(norm_first=norm_first)
    src, tgt = random_batch()
    src[1] = 0  # an all-padding source row: every cross/encoder key masked
    grads = []
    outs = []
    for need_weights in (True, False):
        model.zero_grad()
        out = model(src, tgt, need_weights=need_weights, scale_scores=scale_scores).logits
        out.square().mean().backward()
        outs.append(out.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
    assert torch.allclose(outs[0], outs[1], atol=1e-5)
    for g_explicit, g_fast in zip(*grads):
        assert torch.allclose(g_explicit, g_fast, atol=1e-5)


def test_attention_shapes_and_rows_sum_to_one():
    model = make_model().eval()
    src, tgt = random_batch(B=2, S=7, T=5)
    src[0, :] = torch.arange(1, 8)  # a row without padding
    out = model(src, tgt)
    assert out.logits.shape == (2, 5, V + 4)
    for kind, maps, shape in (("enc", out.encoder_attention, (2, 4, 7, 7)),
                              ("dec", out.decoder_attention, (2, 4, 5, 5)),
                              ("cross", out.cross_attention, (2, 4, 5, 7))):
        assert len(maps) == 2, kind
        for w in maps:
            assert w.shape == shape
            assert torch.allclose(w.sum(-1), torch.ones(shape[:-1]), atol=1e-6)


def test_padding_mask_zeroes_padded_key_columns_and_switching_it_off_does_not():
    model = make_model().eval()
    src, tgt = random_batch()
    pad_keys = src == 0  # (B, S)
    out = model(src, tgt)
    for w in out.encoder_attention + out.cross_attention:
        padded_columns = w.masked_select(pad_keys[:, None, None, :])
        assert padded_columns.numel() > 0 and (padded_columns == 0).all()
    off = model(src, tgt, use_padding_mask=False)
    for w in off.encoder_attention + off.cross_attention:
        assert (w.masked_select(pad_keys[:, None, None, :]) > 0).all()


def test_target_padding_columns_are_zero_in_decoder_self_attention():
    model = make_model().eval()
    src, tgt = random_batch()
    out = model(src, tgt)
    pad = (tgt == 0)[:, None, None, :]
    for w in out.decoder_attention:
        assert pad.any() and (w.masked_select(pad.expand_as(w)) == 0).all()


def test_look_ahead_mask_hides_the_future_and_switching_it_off_leaks_it():
    model = make_model().eval()
    src, tgt = random_batch()
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] % (V - 2)) + 1  # change the token at position 4 (never padding)
    a, b = model(src, tgt).logits, model(src, changed).logits
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)  # earlier positions unchanged
    assert not torch.allclose(a[:, 4:], b[:, 4:])
    a, b = (model(src, x, use_look_ahead_mask=False).logits for x in (tgt, changed))
    assert not torch.allclose(a[:, :4], b[:, :4], atol=1e-4)
    w = model(src, tgt).decoder_attention[0]
    assert (w.masked_select(~torch.ones(6, 6, dtype=torch.bool).tril()) == 0).all()


def test_extra_source_padding_changes_nothing_with_the_mask_and_something_without():
    model = make_model().eval()
    src, tgt = random_batch()
    longer = torch.cat([src, torch.zeros(src.size(0), 5, dtype=src.dtype)], dim=1)
    assert torch.allclose(model(src, tgt).logits, model(longer, tgt).logits, atol=1e-5)
    assert not torch.allclose(model(src, tgt, use_padding_mask=False).logits,
                              model(longer, tgt, use_padding_mask=False).logits, atol=1e-4)


def test_all_padding_source_row_gives_finite_logits_and_gradients():
    model = make_model(dropout=0.1).train()
    src, tgt = random_batch()
    src[0] = 0
    for need_weights in (True, False):
        model.zero_grad()
        out = model(src, tgt, need_weights=need_weights)
        assert torch.isfinite(out.logits).all()
        out.logits.sum().backward()
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
        if need_weights:
            assert (out.cross_attention[0][0] == 0).all()  # no key to attend to: all weights 0


def test_details_hold_scores_and_qkv_consistent_with_weights():
    model = make_model().eval()
    src, tgt = random_batch()
    out = model(src, tgt, need_details=True)
    det = out.encoder_details[0]
    B, H, S, d_k = det.q.shape
    assert d_k == 8 and H == 4
    assert torch.allclose(det.scores, det.q @ det.k.transpose(-2, -1) / math.sqrt(d_k), atol=1e-6)
    mask = (src != 0)[:, None, None, :]
    expected = det.scores.masked_fill(~mask, -math.inf).softmax(-1)
    assert torch.allclose(out.encoder_attention[0], expected, atol=1e-6)
    assert len(out.decoder_details) == len(out.cross_details) == 2


def test_unscaled_scores_saturate_the_softmax():
    model = make_model().eval()
    src, tgt = random_batch()
    scaled = model(src, tgt, need_details=True)
    raw = model(src, tgt, need_details=True, scale_scores=False)
    assert torch.allclose(raw.encoder_details[0].scores, scaled.encoder_details[0].scores * math.sqrt(8), atol=1e-5)
    peak = lambda out: out.encoder_attention[0].amax(-1).mean()
    assert peak(raw) > peak(scaled)


def test_head_ablation_zeroes_only_that_head_and_changes_the_output():
    model = make_model().eval()
    src, tgt = random_batch()
    base = model(src, tgt).logits
    ablated = model(src, tgt, ablate_heads=[("cross", 1, 2)]).logits
    assert not torch.allclose(base, ablated)
    same = model(src, tgt, ablate_heads=[]).logits
    assert torch.equal(base, same)


def test_without_positional_encoding_the_encoder_is_order_blind():
    model = make_model().eval()
    src = torch.tensor([[5, 6, 7, 8, 9]])
    perm = torch.tensor([3, 0, 4, 1, 2])
    tgt = torch.tensor([[1, 5]])
    blind = lambda s: model(s, tgt, use_positional_encoding=False).encoder_attention[0][0]
    a, b = blind(src), blind(src[:, perm])
    assert torch.allclose(b, a[:, perm][:, :, perm], atol=1e-6)  # attention just permutes
    seeing = lambda s: model(s, tgt).encoder_attention[0][0]
    a, b = seeing(src), seeing(src[:, perm])
    assert not torch.allclose(b, a[:, perm][:, :, perm], atol=1e-4)


def test_a_sequence_longer_than_max_len_is_refused_with_a_sentence():
    model = make_model(max_len=8).eval()
    with pytest.raises(ValueError, match="at most 8"):
        model(torch.ones(1, 9, dtype=torch.long), torch.ones(1, 2, dtype=torch.long))


@pytest.mark.parametrize("kwargs, words", [
    (dict(d_model=30, n_heads=4), "split evenly"),
    (dict(d_model=0), "at least 1"),
    (dict(n_heads=0), "at least 1"),
    (dict(dropout=1.5), "probability"),
    (dict(d_model=6, n_heads=2, pe_base=1.0), "pe_base"),
    (dict(d_model=5, n_heads=5), "even"),
    (dict(pad_id=99), "pad_id"),
])
def test_bad_config_raises_a_readable_value_error(kwargs, words):
    with pytest.raises(ValueError, match=words):
        TransformerConfig(10, 10, **kwargs)


def test_config_round_trips_through_a_dict():
    cfg = TransformerConfig(10, 12, d_model=16, n_heads=2, norm_first=True)
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="Unknown config fields"):
        TransformerConfig.from_dict({**cfg.to_dict(), "heads": 3})


@pytest.mark.parametrize("norm_first", [False, True])
def test_the_decoder_state_is_what_the_output_layer_reads(norm_first):
    """``decoder_state`` (after the final norm of a pre-norm stack) through ``generator`` gives the logits."""
    model = make_model(norm_first=norm_first).eval()
    src, tgt = random_batch()[:2]
    out = model(src, tgt)
    assert out.decoder_state.shape == (*tgt.shape, model.config.d_model)
    torch.testing.assert_close(model.generator(out.decoder_state), out.logits)
