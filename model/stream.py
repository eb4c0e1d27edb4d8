"""The residual stream, sublayer by sublayer: what each connection reads, adds and passes on.

Seed 001's view of a layer: every sublayer (self-attention, cross-attention, feed-forward) computes
an *update* that its residual connection adds to the token's vector. :func:`trace_stream` walks
the model's own modules in the order ``Transformer.encode``/``decode`` run them and records, per
sublayer connection, the stream entering, the update and the stream leaving. A connection in
``residual_off`` drops its residual: post-norm ``Norm(update)`` instead of ``Norm(x + update)``,
pre-norm ``update`` instead of ``x + update``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection

import torch

from model.layers import SublayerConnection
from model.masks import padding_mask
from model.tokenizer import BOS_ID, EOS_ID
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


def _connect(
    connection: SublayerConnection,
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor],
    where: tuple[str, int, str],
    residual: bool,
) -> SublayerTrace:
    """Run one sublayer connection as SublayerConnection.forward does, keeping every intermediate."""
    if connection.norm_first:
        sublayer_in = connection.norm(x)
        update = connection.dropout(sublayer(sublayer_in))
        norm_in = x
        x_out = x + update if residual else update
    else:
        sublayer_in = x
        update = connection.dropout(sublayer(sublayer_in))
        norm_in = x + update if residual else update
        x_out = connection.norm(norm_in)
    stack, layer, name = where
    return SublayerTrace(stack, layer, name, x, sublayer_in, update, norm_in, x_out, residual)


def _attention_call(attention, memory, mask, opts: ForwardOptions, keep) -> Callable[[torch.Tensor], torch.Tensor]:
    """The attention sublayer as the layer calls it (same path: explicit or SDPA), returning only its output."""
    def call(h: torch.Tensor) -> torch.Tensor:
        out, _, _ = attention(
            h, memory, mask, need_weights=opts.need_weights, need_details=False, scale_scores=opts.scale_scores,
            head_keep=keep, use_rope=opts.use_positional_encoding,
        )
        return out
    return call


def _encode(model: Transformer, src_ids, off: set, opts: ForwardOptions, traces: list):
    """The encoder, sublayer by sublayer: appends to ``traces``; returns (embedded, memory, src_mask)."""
    src_mask = padding_mask(src_ids, model.config.pad_id) if opts.use_padding_mask else None
    x = embedded = model.embed(src_ids, "src", opts.use_positional_encoding)
    for i, layer in enumerate(model.encoder_layers):
        keep = model._head_keep(opts, "encoder", i)
        steps = (
            ("self_attn", layer.attn_sublayer, _attention_call(layer.self_attn, None, src_mask, opts, keep)),
            ("ffn", layer.ff_sublayer, layer.feed_forward),
        )
        for name, connection, call in steps:
            where = ("encoder", i, name)
            traces.append(_connect(connection, x, call, where, where not in off))
            x = traces[-1].x_out
    memory = model.encoder_norm(x) if model.encoder_norm is not None else x
    return embedded, memory, src_mask


def _decode(model: Transformer, tgt_ids, memory, src_mask, off: set, opts: ForwardOptions, traces: list):
    """The decoder, sublayer by sublayer: appends to ``traces``; returns (embedded, logits)."""
    tgt_mask = model.target_mask(tgt_ids, opts)
    y = embedded = model.embed(tgt_ids, "tgt", opts.use_positional_encoding)
    for i, layer in enumerate(model.decoder_layers):
        self_keep, cross_keep = model._head_keep(opts, "decoder", i), model._head_keep(opts, "cross", i)
        steps = (
            ("self_attn", layer.self_attn_sublayer, _attention_call(layer.self_attn, None, tgt_mask, opts, self_keep)),
            ("cross_attn", layer.cross_attn_sublayer,
             _attention_call(layer.cross_attn, memory, src_mask, opts, cross_keep)),
            ("ffn", layer.ff_sublayer, layer.feed_forward),
        )
        for name, connection, call in steps:
            where = ("decoder", i, name)
            traces.append(_connect(connection, y, call, where, where not in off))
            y = traces[-1].x_out
    if model.decoder_norm is not None:
        y = model.decoder_norm(y)
    return embedded, model.generator(y)


def trace_stream(
    model: Transformer,
    src_ids: torch.Tensor,
    tgt_ids: torch.Tensor,
    *,
    residual_off: Collection[tuple[str, int, str]] = frozenset(),
    opts: ForwardOptions = ForwardOptions(),
) -> StreamTrace:
    """Run ``model(src_ids, tgt_ids)`` layer by layer and record every sublayer connection.

    src_ids: (B, S), tgt_ids: (B, T) decoder input starting with <bos>. ``residual_off`` holds
    (stack, layer, sublayer) triples whose residual is dropped. With nothing off, the logits and
    memory equal the model's own forward.
    """
    off = set(residual_off)
    traces: list[SublayerTrace] = []
    with torch.no_grad():
        embedded_src, memory, src_mask = _encode(model, src_ids, off, opts, traces)
        embedded_tgt, logits = _decode(model, tgt_ids, memory, src_mask, off, opts, traces)
    return StreamTrace(tuple(traces), embedded_src, embedded_tgt, memory, logits)


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

    Like :func:`model.training.greedy_batch`: the encoder runs once, and decoding stops at <eos>
    (which is kept) or after ``max_new`` tokens.
    """
    off = set(residual_off)
    with torch.no_grad():
        _, memory, src_mask = _encode(model, src_ids, off, opts, [])
        ys = torch.full((1, 1), bos_id, dtype=torch.long, device=src_ids.device)
        for _ in range(max_new):
            _, logits = _decode(model, ys, memory, src_mask, off, opts, [])
            next_id = logits[:, -1].argmax(-1)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            if int(next_id) == eos_id:
                break
    return ys[0, 1:]
