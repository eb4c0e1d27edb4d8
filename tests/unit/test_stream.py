"""model.stream: the layer-by-layer trace equals the model's own forward, and switching a residual off changes it."""
from dataclasses import fields

import pytest
import torch

from model.checkpoint import available_pretrained, load_checkpoint, pretrained_path
from model.config import TransformerConfig
from model.stream import SUBLAYERS, greedy_stream, trace_stream
from model.transformer import ForwardOptions, Transformer

V = 23
FIELDS = {f.name for f in fields(TransformerConfig)}


def variant(**kw):
    """A small random model with config switches ``kw``; the test is skipped if a switch does not exist yet."""
    missing = sorted(set(kw) - FIELDS)
    if missing:
        pytest.skip(f"TransformerConfig has no {', '.join(missing)} field yet")
    torch.manual_seed(0)
    cfg = TransformerConfig(V, V + 4, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.1, **kw)
    return Transformer(cfg).eval()


def batch(B=3, S=7, T=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, V, (B, S), generator=g)
    tgt = torch.randint(1, V, (B, T), generator=g)
    src[0, S - 2:] = 0  # padding at the end of some rows
    tgt[1, T - 2:] = 0
    return src, tgt


VARIANTS = {
    "post-norm": {},
    "pre-norm": {"norm_first": True},
    "rmsnorm": {"norm_kind": "rms"},
    "pre-norm rmsnorm": {"norm_first": True, "norm_kind": "rms"},
    "swiglu": {"ffn_kind": "swiglu"},
    "rope": {"position_kind": "rope"},
    "no positions": {"position_kind": "none"},
    "modern": {"norm_first": True, "norm_kind": "rms", "ffn_kind": "swiglu", "position_kind": "rope"},
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_trace_equals_the_forward_for_every_variant(name):
    model = variant(**VARIANTS[name])
    src, tgt = batch()
    out = model(src, tgt)
    trace = trace_stream(model, src, tgt)
    torch.testing.assert_close(trace.logits, out.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(trace.memory, out.memory, atol=1e-5, rtol=0)


@pytest.mark.parametrize("task_name", available_pretrained())
def test_trace_equals_the_forward_for_the_shipped_models(task_name):
    model = load_checkpoint(pretrained_path(task_name), map_location="cpu").model.eval()
    src, tgt = batch(S=9, T=8, seed=2)
    src, tgt = src % model.config.src_vocab_size, tgt % model.config.tgt_vocab_size
    out = model(src, tgt)
    trace = trace_stream(model, src, tgt)
    torch.testing.assert_close(trace.logits, out.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(trace.memory, out.memory, atol=1e-5, rtol=0)


def test_trace_follows_the_forward_options():
    model = variant()
    src, tgt = batch()
    opts = ForwardOptions(use_look_ahead_mask=False, use_positional_encoding=False, scale_scores=False,
                          ablate_heads=(("encoder", 0, 1), ("cross", 1, 0)))
    out = model.decode(tgt, model.encode(src, opts), opts)
    trace = trace_stream(model, src, tgt, opts=opts)
    torch.testing.assert_close(trace.logits, out.logits, atol=1e-5, rtol=0)


def test_one_record_per_sublayer_connection_in_order():
    model = variant()
    src, tgt = batch()
    trace = trace_stream(model, src, tgt)
    where = [(s.stack, s.layer, s.sublayer) for s in trace.sublayers]
    assert where == [("encoder", 0, "self_attn"), ("encoder", 0, "ffn"), ("encoder", 1, "self_attn"),
                     ("encoder", 1, "ffn")] + [("decoder", i, s) for i in range(2) for s in SUBLAYERS]
    first, second = trace.sublayers[0], trace.sublayers[1]
    torch.testing.assert_close(first.x_in, trace.embedded_src)
    torch.testing.assert_close(second.x_in, first.x_out)  # the stream flows on
    assert trace.sublayers[4].x_in is trace.embedded_tgt or torch.equal(trace.sublayers[4].x_in, trace.embedded_tgt)


def test_post_norm_records_norm_of_x_plus_update():
    model = variant()
    src, tgt = batch()
    for s in trace_stream(model, src, tgt).sublayers:
        assert torch.equal(s.sublayer_in, s.x_in)
        torch.testing.assert_close(s.norm_in, s.x_in + s.update)
        assert s.residual


def test_pre_norm_records_x_plus_update():
    model = variant(norm_first=True)
    src, tgt = batch()
    for s in trace_stream(model, src, tgt).sublayers:
        torch.testing.assert_close(s.x_out, s.x_in + s.update)
        assert torch.equal(s.norm_in, s.x_in)


def test_feed_forward_update_is_the_ffn_of_what_it_reads():
    model = variant()
    src, tgt = batch()
    trace = trace_stream(model, src, tgt)
    s = next(t for t in trace.sublayers if (t.stack, t.layer, t.sublayer) == ("decoder", 1, "ffn"))
    torch.testing.assert_close(s.update, model.decoder_layers[1].feed_forward(s.sublayer_in))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("where", [("encoder", 0, "self_attn"), ("decoder", 1, "ffn"), ("decoder", 0, "cross_attn")])
def test_switching_a_residual_off_changes_the_logits(norm_first, where):
    model = variant(norm_first=norm_first)
    src, tgt = batch()
    on = trace_stream(model, src, tgt)
    off = trace_stream(model, src, tgt, residual_off={where})
    assert not torch.allclose(on.logits, off.logits, atol=1e-3)
    s = next(t for t in off.sublayers if (t.stack, t.layer, t.sublayer) == where)
    assert not s.residual
    if norm_first:
        torch.testing.assert_close(s.x_out, s.update)
    else:
        torch.testing.assert_close(s.norm_in, s.update)
    # the connections before it are untouched
    before = off.sublayers[:off.sublayers.index(s)]
    for a, b in zip(before, on.sublayers):
        torch.testing.assert_close(a.x_out, b.x_out)


def test_switching_a_decoder_residual_off_leaves_the_memory():
    model = variant()
    src, tgt = batch()
    on = trace_stream(model, src, tgt)
    off = trace_stream(model, src, tgt, residual_off={("decoder", 0, "self_attn")})
    torch.testing.assert_close(off.memory, on.memory)


def test_trace_computes_no_gradients():
    model = variant()
    src, tgt = batch()
    trace = trace_stream(model, src, tgt)
    assert not trace.logits.requires_grad and not trace.sublayers[0].update.requires_grad


@pytest.mark.parametrize("task_name", available_pretrained()[:2])
def test_greedy_stream_with_nothing_off_is_greedy_decoding(task_name):
    from model.tasks import get_task
    from model.training import greedy_batch

    ckpt = load_checkpoint(pretrained_path(task_name), map_location="cpu")
    src = torch.tensor([ckpt.tokenizer.encode(get_task(task_name).example)])
    want = greedy_batch(ckpt.model, src, 40, ForwardOptions(need_weights=False))[0]
    got = greedy_stream(ckpt.model, src, 40)
    assert got.tolist() == want.tolist()
    assert got[-1].item() == ckpt.tokenizer.eos_id


def test_greedy_stream_with_a_residual_off_writes_something_else():
    ckpt = load_checkpoint(pretrained_path("reverse"), map_location="cpu")
    src = torch.tensor([ckpt.tokenizer.encode("hello world")])
    on = greedy_stream(ckpt.model, src, 20)
    off = greedy_stream(ckpt.model, src, 20, residual_off={("encoder", 0, "self_attn"), ("decoder", 0, "self_attn")})
    assert on.tolist() != off.tolist()
