"""The residual stream, sublayer by sublayer: what each connection reads, adds and passes on.

Seed 001's view of a layer: every sublayer (self-attention, cross-attention, feed-forward) computes
an *update* that its residual connection adds to the token's vector. :func:`trace_stream` runs the
model's own forward with a :class:`model.trace.Trace` and reads, per sublayer connection, the
stream entering, the update and the stream leaving. A connection in ``residual_off`` drops its
residual: post-norm ``Norm(update)`` instead of ``Norm(x + update)``, pre-norm ``update`` instead of
``x + update``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

import torch

from model.decoding import greedy_ids
from model.tokenizer import BOS_ID, EOS_ID
from model.trace import Trace
from model.transformer import ForwardOptions, Transformer

SUBLAYERS = ("self_attn", "cross_attn", "ffn")
STACKS = ("encoder", "decoder")


@dataclass(frozen=True)
class SublayerTrace:
    """One sublayer connection of one layer, for every token. Tensors are (B, T, d)."""

    stack: str  # "encoder" | "decoder"
    layer: int  # 0-based
    sublayer: str  # one of SUBLAYERS
    x_in: torch.Tensor  # the stream entering this sublayer connection
    sublayer_in: torch.Tensor  # what the sublayer reads: x_in (post-norm) or norm(x_in) (pre-norm)
    update: torch.Tensor  # the sublayer's output, what the residual connection adds
    norm_in: torch.Tensor  # what this connection's norm reads: x_in + update (post-norm) or x_in (pre-norm)
    x_out: torch.Tensor  # the stream leaving
    residual: bool  # False when this connection's residual was switched off


@dataclass(frozen=True)
class StreamTrace:
    """Every sublayer connection (encoder layers in order, then decoder layers) and the ends of the pass."""

    sublayers: tuple[SublayerTrace, ...]
    embedded_src: torch.Tensor  # (B, S, d) what the encoder's first layer reads
    embedded_tgt: torch.Tensor  # (B, T, d) what the decoder's first layer reads
    memory: torch.Tensor  # (B, S, d) the encoder output (after the final norm of a pre-norm model)
    logits: torch.Tensor  # (B, T, V_tgt)


def _sublayer_traces(trace: Trace, model: Transformer, off: frozenset) -> tuple[SublayerTrace, ...]:
    """The trace's sublayer connections, encoder layers first, in the order the forward ran them."""
    layout = (("encoder", ("self_attn", "ffn")), ("decoder", SUBLAYERS))
    records = []
    for stack, sublayers in layout:
        for i in range(model.config.n_layers):
            for name in sublayers:
                t = trace.layer(stack, i)
                key = f"{name}_sublayer"
                records.append(SublayerTrace(
                    stack, i, name, t[f"{key}.x_in"], t[f"{key}.sublayer_in"], t[f"{key}.update"],
                    t[f"{key}.norm_in"], t[f"{key}.x_out"], (stack, i, name) not in off,
                ))
    return tuple(records)


def trace_stream(
    model: Transformer,
    src_ids: torch.Tensor,
    tgt_ids: torch.Tensor,
    *,
    residual_off: Collection[tuple[str, int, str]] = frozenset(),
    opts: ForwardOptions = ForwardOptions(),
) -> StreamTrace:
    """Run ``model(src_ids, tgt_ids)`` with a trace and return every sublayer connection.

    src_ids: (B, S), tgt_ids: (B, T) decoder input starting with <bos>. ``residual_off`` holds
    (stack, layer, sublayer) triples whose residual is dropped. With nothing off, the logits and
    memory equal the model's own forward.
    """
    off = frozenset(residual_off)
    trace = Trace(residual_off=off)
    with torch.no_grad():
        out = model.decode(tgt_ids, model.encode(src_ids, opts, trace), opts, trace)
    return StreamTrace(_sublayer_traces(trace, model, off), trace["encoder.embed.sum"], trace["decoder.embed.sum"],
                       out.memory, out.logits)


def greedy_stream(
    model: Transformer,
    src_ids: torch.Tensor,
    max_new: int,
    *,
    residual_off: Collection[tuple[str, int, str]] = frozenset(),
    opts: ForwardOptions = ForwardOptions(need_weights=False),
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> torch.Tensor:
    """Greedy decoding of one source (1, S) with ``residual_off`` switched off -> generated ids (<= max_new,).

    The one decoder loop (:func:`model.decoding.greedy_ids`, with the key/value cache): the encoder
    runs once, and decoding stops at <eos> (which is kept) or after ``max_new`` tokens.
    """
    trace = Trace(residual_off=frozenset(residual_off), record=False)
    return greedy_ids(model, src_ids, max_new, opts, trace=trace, bos_id=bos_id, eos_id=eos_id)[0]
