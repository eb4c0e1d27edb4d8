"""model.trace: a forward's trace holds what the modules compute, for every variant, and each intervention does
what it says."""
import itertools
import math

import pytest
import torch
from torch.nn import functional as F

from model.attention import masked_softmax, scaled_dot_product_attention
from model.config import FFN_KINDS, NORM_KINDS, POSITION_KINDS, TransformerConfig
from model.layers import RMSNorm
from model.positional import positional_encoding, rope_rotate_sequence
from model.trace import REPLACEABLE, Trace
from model.transformer import ForwardOptions, Transformer

V = 19
ATOL = 1e-5
VARIANTS = [
    dict(norm_first=nf, norm_kind=nk, ffn_kind=fk, position_kind=pk)
    for nf, nk, fk, pk in itertools.product((False, True), NORM_KINDS, FFN_KINDS, POSITION_KINDS)
]


def ids(kw):
    return "-".join(str(v) for v in kw.values())


def make(seed=0, **kw):
    torch.manual_seed(seed)
    cfg = TransformerConfig(V, V + 3, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.1, max_len=32, **kw)
    return Transformer(cfg).eval()


def batch(B=2, S=6, T=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, V, (B, S), generator=g)
    tgt = torch.randint(1, V, (B, T), generator=g)
    src[0, -2:] = 0  # padding
    tgt[1, -1:] = 0
    return src, tgt


def close(actual, expected):
    torch.testing.assert_close(actual, expected, atol=ATOL, rtol=0)


def check_norm(trace, name, module):
    x = trace[f"{name}.in"]
    close(trace[f"{name}.out"], module(x))
    if isinstance(module, RMSNorm):
        close(trace[f"{name}.rms"], torch.sqrt(x.square().mean(-1) + module.eps))
    else:
        close(trace[f"{name}.mean"], x.mean(-1))
        close(trace[f"{name}.var"], ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1))


def check_attention(trace, name, module, x, memory, mask, rope):
    """Recompute one attention from its input with the module's weights, step by step."""
    B, T, d = x.shape
    H, dk = module.n_heads, module.d_k
    w, b = module.in_proj.weight, module.in_proj.bias
    source = x if memory is None else memory
    split = lambda t: t.view(t.size(0), t.size(1), H, dk).transpose(1, 2)  # noqa: E731  (B, H, T, d_k)
    q, k, v = split(F.linear(x, w[:d], b[:d])), split(F.linear(source, w[d:2 * d], b[d:2 * d])), split(
        F.linear(source, w[2 * d:], b[2 * d:]))
    if rope:
        q, k = rope_rotate_sequence(q, module.rope_base), rope_rotate_sequence(k, module.rope_base)
    scores = q @ k.transpose(-2, -1) / math.sqrt(dk)  # (B, H, T, S)
    weights = masked_softmax(scores, mask)
    heads = weights @ v  # (B, H, T, d_k)
    concat = heads.transpose(1, 2).reshape(B, T, d)
    for key, value in dict(q=q, k=k, v=v, scores=scores, weights=weights, heads=heads, concat=concat,
                           out=module.out_proj(concat)).items():
        close(trace[f"{name}.{key}"], value)


def check_ffn(trace, name, module, x):
    gate = module.linear_gate if hasattr(module, "linear_gate") else module.linear1
    close(trace[f"{name}.hidden_pre"], gate(x))
    close(trace[f"{name}.hidden"], module.hidden(x))
    close(trace[f"{name}.out"], module(x))


def check_connection(trace, name, connection, residual=True):
    x, update = trace[f"{name}.x_in"], trace[f"{name}.update"]
    kept = x + update if residual else update
    if connection.norm_first:
        close(trace[f"{name}.sublayer_in"], connection.norm(x))
        close(trace[f"{name}.x_out"], kept)
    else:
        close(trace[f"{name}.sublayer_in"], x)
        close(trace[f"{name}.norm_in"], kept)
        close(trace[f"{name}.x_out"], connection.norm(kept))
    check_norm(trace, f"{name}.norm", connection.norm)


@pytest.mark.parametrize("kw", VARIANTS, ids=ids)
def test_the_trace_holds_what_the_modules_compute_for_every_variant(kw):
    model = make(**kw)
    cfg = model.config
    src, tgt = batch()
    plain = model(src, tgt)
    trace = Trace()
    with torch.no_grad():
        out = model(src, tgt, trace=trace)
    close(out.logits, plain.logits)
    rope = cfg.position_kind == "rope"

    # embeddings
    for stack, side, x_ids in (("encoder", "src", src), ("decoder", "tgt", tgt)):
        token = (model.src_embed if side == "src" else model.tgt_embed).lookup(x_ids) * math.sqrt(cfg.d_model)
        close(trace[f"{stack}.embed.token"], token)
        if cfg.position_kind == "sinusoidal":
            close(trace[f"{stack}.embed.position"], positional_encoding(x_ids.size(1), cfg.d_model, cfg.pe_base))
            close(trace[f"{stack}.embed.sum"], token + trace[f"{stack}.embed.position"])
        else:
            assert f"{stack}.embed.position" not in trace
            close(trace[f"{stack}.embed.sum"], token)

    # encoder, sublayer by sublayer: each connection reads what the last one left
    x = trace["encoder.embed.sum"]
    for i, layer in enumerate(model.encoder_layers):
        t = f"encoder.{i}"
        close(trace[f"{t}.self_attn_sublayer.x_in"], x)
        check_connection(trace, f"{t}.self_attn_sublayer", layer.attn_sublayer)
        check_attention(trace, f"{t}.self_attn", layer.self_attn, trace[f"{t}.self_attn_sublayer.sublayer_in"],
                        None, trace["encoder.mask"], rope)
        close(trace[f"{t}.self_attn_sublayer.update"], trace[f"{t}.self_attn.out"])
        close(trace[f"{t}.self_attn.weights"], plain.encoder_attention[i])
        close(trace[f"{t}.ffn_sublayer.x_in"], trace[f"{t}.self_attn_sublayer.x_out"])
        check_connection(trace, f"{t}.ffn_sublayer", layer.ff_sublayer)
        check_ffn(trace, f"{t}.ffn", layer.feed_forward, trace[f"{t}.ffn_sublayer.sublayer_in"])
        close(trace[f"{t}.ffn_sublayer.update"], trace[f"{t}.ffn.out"])
        x = trace[f"{t}.ffn_sublayer.x_out"]
    if cfg.norm_first:
        close(trace["encoder.final_norm.in"], x)
        check_norm(trace, "encoder.final_norm", model.encoder_norm)
        x = trace["encoder.final_norm.out"]
    else:
        assert not trace.names("encoder.final_norm")
    close(trace["memory"], x)
    close(trace["memory"], plain.memory)

    # decoder
    y, memory = trace["decoder.embed.sum"], trace["memory"]
    for i, layer in enumerate(model.decoder_layers):
        t = f"decoder.{i}"
        close(trace[f"{t}.self_attn_sublayer.x_in"], y)
        for sub, connection, attn, mem, mask, maps in (
            ("self_attn", layer.self_attn_sublayer, layer.self_attn, None, trace["decoder.mask"],
             plain.decoder_attention),
            ("cross_attn", layer.cross_attn_sublayer, layer.cross_attn, memory, trace["encoder.mask"],
             plain.cross_attention),
        ):
            check_connection(trace, f"{t}.{sub}_sublayer", connection)
            check_attention(trace, f"{t}.{sub}", attn, trace[f"{t}.{sub}_sublayer.sublayer_in"], mem, mask, rope)
            close(trace[f"{t}.{sub}_sublayer.update"], trace[f"{t}.{sub}.out"])
            close(trace[f"{t}.{sub}.weights"], maps[i])
        close(trace[f"{t}.cross_attn_sublayer.x_in"], trace[f"{t}.self_attn_sublayer.x_out"])
        close(trace[f"{t}.ffn_sublayer.x_in"], trace[f"{t}.cross_attn_sublayer.x_out"])
        check_connection(trace, f"{t}.ffn_sublayer", layer.ff_sublayer)
        check_ffn(trace, f"{t}.ffn", layer.feed_forward, trace[f"{t}.ffn_sublayer.sublayer_in"])
        y = trace[f"{t}.ffn_sublayer.x_out"]
    if cfg.norm_first:
        check_norm(trace, "decoder.final_norm", model.decoder_norm)
        y = trace["decoder.final_norm.out"]
    close(trace["decoder.state"], y)
    close(trace["decoder.state"], plain.decoder_state)
    close(trace["logits"], model.generator(y))


def test_the_helpers_list_and_group_the_names():
    model = make()
    src, tgt = batch()
    trace = Trace()
    with torch.no_grad():
        model(src, tgt, trace=trace)
    assert trace.names()[0].startswith("encoder.") and trace.names()[-1] == "logits"
    assert set(trace.names("decoder.1.cross_attn.")) == {
        f"decoder.1.cross_attn.{k}" for k in ("q", "k", "v", "scores", "weights", "heads", "concat", "out")}
    layer = trace.layer("encoder", 0)
    assert layer["self_attn.weights"] is trace["encoder.0.self_attn.weights"]
    assert "ffn_sublayer.update" in layer and not any(k.startswith("1.") for k in layer)
    with pytest.raises(KeyError, match="no_such"):
        trace["no_such.name"]


def test_without_record_nothing_is_kept_and_an_unknown_replacement_is_refused():
    model = make()
    src, tgt = batch()
    trace = Trace(record=False)
    model(src, tgt, trace=trace)
    assert trace.names() == []
    with pytest.raises(ValueError, match="softmax"):
        Trace(replace={"softmax": torch.softmax})
    assert "attention" in REPLACEABLE


@pytest.mark.parametrize("position_kind", POSITION_KINDS)
def test_a_replaced_attention_function_is_called_and_its_output_used(position_kind):
    model = make(position_kind=position_kind)
    src, tgt = batch()
    calls = []

    def reference(q, k, v, mask):
        calls.append((q.shape, k.shape))
        out, weights, _ = scaled_dot_product_attention(q, k, v, mask)
        return out, weights

    with torch.no_grad():
        same = model(src, tgt, trace=Trace(replace={"attention": reference}))
    assert len(calls) == 3 * model.config.n_layers  # encoder self, decoder self, cross per layer
    close(same.logits, model(src, tgt).logits)

    def uniform(q, k, v, mask):  # ignores the scores: every key weighs the same
        weights = torch.ones(q.shape[:-1] + (k.size(-2),)) / k.size(-2)
        return weights @ v, weights

    trace = Trace(replace={"attention": uniform})
    with torch.no_grad():
        changed = model(src, tgt, trace=trace)
    assert not torch.allclose(changed.logits, same.logits, atol=1e-3)
    v = trace["encoder.0.self_attn.v"]
    close(trace["encoder.0.self_attn.heads"], v.mean(dim=-2, keepdim=True).expand_as(v))
    assert "encoder.0.self_attn.scores" not in trace


def test_heads_off_zero_that_heads_output_only_and_match_the_forward_option():
    model = make()
    src, tgt = batch()
    trace = Trace(heads_off={("encoder", 0, 1), ("cross", 1, 0)})
    with torch.no_grad():
        out = model(src, tgt, trace=trace)
    heads = trace["encoder.0.self_attn.heads"]
    assert heads[:, 1].abs().max() == 0 and heads[:, 0].abs().max() > 0
    assert trace["decoder.1.cross_attn.heads"][:, 0].abs().max() == 0
    assert trace["decoder.1.self_attn.heads"][:, 0].abs().max() > 0
    close(out.logits, model(src, tgt, ablate_heads=(("encoder", 0, 1), ("cross", 1, 0))).logits)
    assert not torch.allclose(out.logits, model(src, tgt).logits, atol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_residual_off_drops_x_from_that_connection_only(norm_first):
    model = make(norm_first=norm_first)
    src, tgt = batch()
    trace = Trace(residual_off={("decoder", 0, "cross_attn")})
    with torch.no_grad():
        out = model(src, tgt, trace=trace)
    check_connection(trace, "decoder.0.cross_attn_sublayer", model.decoder_layers[0].cross_attn_sublayer,
                     residual=False)
    check_connection(trace, "decoder.0.ffn_sublayer", model.decoder_layers[0].ff_sublayer)
    assert not torch.allclose(out.logits, model(src, tgt).logits, atol=1e-4)


def test_scale_off_leaves_the_scores_unscaled_as_the_forward_option_does():
    model = make()
    src, tgt = batch()
    trace = Trace(scale_scores=False)
    with torch.no_grad():
        out = model(src, tgt, trace=trace)
    q, k = trace["encoder.1.self_attn.q"], trace["encoder.1.self_attn.k"]
    close(trace["encoder.1.self_attn.scores"], q @ k.transpose(-2, -1))
    close(out.logits, model(src, tgt, scale_scores=False).logits)


def test_replaced_masks_positions_and_norm_act_as_the_switches_and_as_written():
    model = make()
    src, tgt = batch()
    with torch.no_grad():
        no_pad = model(src, tgt, trace=Trace(replace={"padding_mask": lambda ids, pad: None})).logits
        close(no_pad, model(src, tgt, use_padding_mask=False).logits)
        no_ahead = model(src, tgt, trace=Trace(replace={"look_ahead_mask": lambda size, device: None})).logits
        close(no_ahead, model(src, tgt, use_look_ahead_mask=False).logits)
        zero_table = model(src, tgt, trace=Trace(replace={"positional": lambda n, d, base: torch.zeros(n, d)})).logits
        close(zero_table, model(src, tgt, use_positional_encoding=False).logits)

        calls = []

        def layer_norm(x, weight, bias, eps):
            calls.append(x.shape)
            mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
            return (x - mean) / torch.sqrt(var + eps) * weight + bias

        own = model(src, tgt, trace=Trace(replace={"norm": layer_norm})).logits
        assert len(calls) == 5 * model.config.n_layers  # one norm per sublayer connection
        close(own, model(src, tgt).logits)
        shifted = model(src, tgt, trace=Trace(replace={"norm": lambda x, w, b, eps: layer_norm(x, w, b, eps) + 1}))
        assert not torch.allclose(shifted.logits, own, atol=1e-3)


def test_forward_options_and_a_trace_combine():
    model = make(position_kind="rope")
    src, tgt = batch()
    opts = ForwardOptions(use_positional_encoding=False, ablate_heads=(("decoder", 0, 0),))
    trace = Trace(heads_off={("encoder", 1, 1)})
    with torch.no_grad():
        out = model.decode(tgt, model.encode(src, opts, trace), opts, trace)
    assert trace["decoder.0.self_attn.heads"][:, 0].abs().max() == 0
    assert trace["encoder.1.self_attn.heads"][:, 1].abs().max() == 0
    expected = model(src, tgt, use_positional_encoding=False, ablate_heads=(("decoder", 0, 0), ("encoder", 1, 1)))
    close(out.logits, expected.logits)
    assert trace.heads_off == frozenset({("encoder", 1, 1)})  # the caller's trace is not changed by the options
