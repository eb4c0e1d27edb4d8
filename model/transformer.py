"""The encoder-decoder Transformer of "Attention Is All You Need", built to be looked into.

Every forward RETURNS its attention (and, on request, scores and Q/K/V) instead of keeping it
on the modules, so one eval model can serve many classroom sessions at once. Given a
:class:`model.trace.Trace`, a forward also records every named intermediate and applies the
trace's interventions (heads off, residuals off, √d_k off, a replaced function); see model/trace.py.
Given a :class:`DecoderCache`, the decoder computes only the positions it has not seen yet.
Masks are bool, **True = may attend**.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection

import torch
from torch import nn

from model.attention import AttentionDetails, KVCache, MultiHeadAttention
from model.config import TransformerConfig
from model.layers import Dropout, SublayerConnection, TokenEmbedding, apply_norm, make_feed_forward, make_norm
from model.masks import look_ahead_mask, padding_mask
from model.positional import positional_encoding
from model.trace import ATTENTION_KINDS, ForwardOptions, Trace, resolve

__all__ = [
    "ATTENTION_KINDS", "DecoderCache", "DecoderLayer", "EncoderLayer", "EncoderOutput", "ForwardOptions", "Trace",
    "Transformer", "TransformerOutput",
]


@dataclass(frozen=True)
class EncoderOutput:
    memory: torch.Tensor  # (B, S, d)
    src_mask: torch.Tensor | None  # (B, 1, 1, S) bool or None when the padding mask is off
    attention: tuple[torch.Tensor, ...]  # per layer (B, H, S, S); () unless weights were asked for
    details: tuple[AttentionDetails, ...]  # per layer; () unless details were asked for


@dataclass(frozen=True)
class TransformerOutput:
    """logits (B, T, V_tgt) plus per-layer attention tuples, one (B, H, T_q, T_k) tensor per layer."""

    logits: torch.Tensor
    encoder_attention: tuple[torch.Tensor, ...]
    decoder_attention: tuple[torch.Tensor, ...]
    cross_attention: tuple[torch.Tensor, ...]
    encoder_details: tuple[AttentionDetails, ...] = ()
    decoder_details: tuple[AttentionDetails, ...] = ()
    cross_details: tuple[AttentionDetails, ...] = ()
    memory: torch.Tensor | None = None  # (B, S, d) encoder output
    decoder_state: torch.Tensor | None = None  # (B, T, d) the vectors the output layer (generator) turns into logits


@dataclass
class DecoderCache:
    """The decoder's keys and values so far: per layer, one self-attention and one cross-attention cache.

    ``length`` is how many target positions are cached. Self-attention K/V grow by the new positions
    at every step; cross-attention K/V of the memory are computed at the first step and reused.
    """

    self_attn: list[KVCache] = field(default_factory=list)
    cross_attn: list[KVCache] = field(default_factory=list)

    @classmethod
    def empty(cls, n_layers: int) -> "DecoderCache":
        return cls([KVCache() for _ in range(n_layers)], [KVCache() for _ in range(n_layers)])

    @property
    def length(self) -> int:
        return self.self_attn[0].length if self.self_attn else 0

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep batch rows ``rows`` (B',) in that order, e.g. the parents beam search extends."""
        for cache in (*self.self_attn, *self.cross_attn):
            cache.reorder(rows)


def _attention(cfg: TransformerConfig) -> MultiHeadAttention:
    """One multi-head attention of the config: with RoPE's rotation when position_kind is "rope"."""
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.pe_base if cfg.position_kind == "rope" else None,
                              cfg.head_dim)


def _sublayer(cfg: TransformerConfig) -> SublayerConnection:
    return SublayerConnection(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.norm_kind)


def _attend(attention: MultiHeadAttention, memory, mask, run: Trace, kind: str, layer: int, name: str,
            need_weights: bool, need_details: bool, cache: KVCache | None = None, start: int = 0):
    """The attention sublayer as a function of the stream it reads, with ``run``'s interventions."""
    keep = run.head_keep(kind, layer, attention.n_heads, attention.in_proj.weight.device)
    return lambda h: attention(
        h, memory, mask, need_weights=need_weights, need_details=need_details, scale_scores=run.scale_scores,
        head_keep=keep, trace=run, name=name, cache=cache, start=start,
    )


def _connection_trace(run: Trace) -> Trace | None:
    """The trace a sublayer connection needs: None (its plain path) unless it records, drops a residual
    or uses a replaced norm."""
    return run if run.record or run.residual_off or "norm" in run.replace else None


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each inside a residual + normalisation."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = _attention(cfg)
        self.feed_forward = make_feed_forward(cfg)
        self.attn_sublayer = _sublayer(cfg)
        self.ff_sublayer = _sublayer(cfg)

    def forward(self, x, mask, run: Trace, index: int, need_weights: bool = False, need_details: bool = False):
        """x: (B, S, d), mask: (B, 1, 1, S) or None -> (x, weights (B, H, S, S) | None, details | None)."""
        name = f"encoder.{index}"
        connection = _connection_trace(run)
        x, weights, details = self.attn_sublayer(
            x, _attend(self.self_attn, None, mask, run, "encoder", index, f"{name}.self_attn", need_weights,
                       need_details),
            connection, f"{name}.self_attn_sublayer", run.residual("encoder", index, "self_attn"),
        )
        x, = self.ff_sublayer(
            x, lambda h: (self.feed_forward(h, connection, f"{name}.ffn"),),
            connection, f"{name}.ffn_sublayer", run.residual("encoder", index, "ffn"),
        )
        return x, weights, details


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, then feed-forward."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = _attention(cfg)
        self.cross_attn = _attention(cfg)
        self.feed_forward = make_feed_forward(cfg)
        self.self_attn_sublayer = _sublayer(cfg)
        self.cross_attn_sublayer = _sublayer(cfg)
        self.ff_sublayer = _sublayer(cfg)

    def forward(self, y, memory, tgt_mask, src_mask, run: Trace, index: int, need_weights: bool = False,
                need_details: bool = False, cache: DecoderCache | None = None, start: int = 0):
        """y: (B, T, d), memory: (B, S, d), tgt_mask: (B|1, 1, T|1, start+T), src_mask: (B, 1, 1, S).

        With ``cache``, y holds only the new positions start..start+T-1 and the cache the earlier ones.
        """
        name = f"decoder.{index}"
        connection = _connection_trace(run)
        self_cache = cache.self_attn[index] if cache is not None else None
        cross_cache = cache.cross_attn[index] if cache is not None else None
        y, self_w, self_d = self.self_attn_sublayer(
            y, _attend(self.self_attn, None, tgt_mask, run, "decoder", index, f"{name}.self_attn", need_weights,
                       need_details, self_cache, start),
            connection, f"{name}.self_attn_sublayer", run.residual("decoder", index, "self_attn"),
        )
        y, cross_w, cross_d = self.cross_attn_sublayer(
            y, _attend(self.cross_attn, memory, src_mask, run, "cross", index, f"{name}.cross_attn", need_weights,
                       need_details, cross_cache, start),
            connection, f"{name}.cross_attn_sublayer", run.residual("decoder", index, "cross_attn"),
        )
        y, = self.ff_sublayer(
            y, lambda h: (self.feed_forward(h, connection, f"{name}.ffn"),),
            connection, f"{name}.ffn_sublayer", run.residual("decoder", index, "ffn"),
        )
        return y, (self_w, self_d), (cross_w, cross_d)


def _collect(items) -> tuple:
    return tuple(item for item in items if item is not None)


class Transformer(nn.Module):
    """Encoder-decoder Transformer. ``Transformer(cfg)(src_ids, tgt_ids)`` -> TransformerOutput."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        cfg = config
        self.src_embed = TokenEmbedding(cfg.src_vocab_size, cfg.d_model)
        self.tgt_embed = TokenEmbedding(cfg.tgt_vocab_size, cfg.d_model)
        self.register_buffer("pe", positional_encoding(cfg.max_len, cfg.d_model, cfg.pe_base), persistent=False)
        self.embed_dropout = Dropout(cfg.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_layers))
        # Pre-norm leaves the residual stream un-normalised, so each stack ends with a norm.
        self.encoder_norm = make_norm(cfg.norm_kind, cfg.d_model) if cfg.norm_first else None
        self.decoder_norm = make_norm(cfg.norm_kind, cfg.d_model) if cfg.norm_first else None
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @property
    def device(self) -> torch.device:
        return self.generator.weight.device

    # -- pieces -----------------------------------------------------------------------------
    def embed(self, ids: torch.Tensor, side: str, use_positional_encoding: bool = True, *,
              trace: Trace | None = None, start: int = 0) -> torch.Tensor:
        """(B, T) ids -> (B, T, d): token embedding * sqrt(d_model) (+ the sinusoidal table), dropout.

        The table is added only when the model's position_kind is "sinusoidal" (RoPE rotates Q and K
        inside attention instead; "none" has no position signal). ``start``: position of the first
        id (the decoder cache's length). ``trace`` may replace the table and records the pieces.
        """
        T = ids.size(1)
        if start + T > self.config.max_len:
            raise ValueError(
                f"The sequence has {start + T} tokens but this model handles at most {self.config.max_len}."
            )
        token = (self.src_embed if side == "src" else self.tgt_embed)(ids)  # (B, T, d)
        table = None
        if use_positional_encoding and self.config.position_kind == "sinusoidal":
            replaced = trace.replace.get("positional") if trace is not None else None
            if replaced is None:
                table = self.pe[start:start + T]  # (T, d)
            else:
                table = replaced(start + T, self.config.d_model, self.config.pe_base)
                table = None if table is None else table.to(token)[start:start + T]
        x = self.embed_dropout(token if table is None else token + table)
        if trace is not None and trace.record:
            stack = "encoder" if side == "src" else "decoder"
            trace.put(f"{stack}.embed.token", token)
            trace.put(f"{stack}.embed.position", table)
            trace.put(f"{stack}.embed.sum", x)
        return x

    def _head_keep(self, opts: ForwardOptions, kind: str, layer: int) -> torch.Tensor | None:
        """(H,) keep-vector of ``opts.ablate_heads`` for one attention (kept for callers of the old name)."""
        return resolve(opts, None).head_keep(kind, layer, self.config.n_heads, self.device)

    def encode(self, src_ids: torch.Tensor, opts: ForwardOptions = ForwardOptions(),
               trace: Trace | None = None) -> EncoderOutput:
        """src_ids: (B, S) -> EncoderOutput with memory (B, S, d); ``trace`` records and intervenes."""
        run = resolve(opts, trace)
        build = run.replace.get("padding_mask", padding_mask)
        src_mask = build(src_ids, self.config.pad_id)  # (B, 1, 1, S) or None
        run.put("encoder.mask", src_mask)
        x = self.embed(src_ids, "src", trace=run)
        weights, details = [], []
        for i, layer in enumerate(self.encoder_layers):
            x, w, det = layer(x, src_mask, run, i, opts.need_weights, opts.need_details)
            weights.append(w)
            details.append(det)
        if self.encoder_norm is not None:
            x = apply_norm(self.encoder_norm, x, run, "encoder.final_norm")
        run.put("memory", x)
        return EncoderOutput(x, src_mask, _collect(weights), _collect(details))

    def target_mask(self, tgt_ids: torch.Tensor, opts: ForwardOptions = ForwardOptions(),
                    trace: Trace | None = None) -> torch.Tensor | None:
        """Decoder self-attention mask (B|1, 1, T, T): look-ahead AND padding, either, or None (from the switches)."""
        run = resolve(opts, trace)
        ahead = run.replace.get("look_ahead_mask", look_ahead_mask)(tgt_ids.size(1), tgt_ids.device)  # (T, T)
        pad = run.replace.get("padding_mask", padding_mask)(tgt_ids, self.config.pad_id)  # (B, 1, 1, T)
        if ahead is None:
            return pad
        ahead = ahead[None, None]  # (1, 1, T, T)
        return ahead if pad is None else ahead & pad

    def decode(
        self,
        tgt_ids: torch.Tensor,
        encoded: EncoderOutput,
        opts: ForwardOptions = ForwardOptions(),
        trace: Trace | None = None,
        cache: DecoderCache | None = None,
    ) -> TransformerOutput:
        """tgt_ids: (B, T) decoder input (starting with <bos>) -> logits (B, T, V_tgt) and attention.

        With ``cache`` (from :meth:`DecoderCache.empty`), tgt_ids is still the whole prefix, but only
        the positions the cache does not hold yet are computed (their keys and values are added to
        it): logits and attention are then for those positions only, (B, T - cached, ...). A cache
        is only right with the look-ahead mask on (otherwise earlier positions see later ones).
        """
        run = resolve(opts, trace)
        start = 0 if cache is None else cache.length
        tgt_mask = self.target_mask(tgt_ids, trace=run)
        if tgt_mask is not None and start:
            tgt_mask = tgt_mask[:, :, start:] if tgt_mask.size(2) > 1 else tgt_mask  # rows of the new queries
        run.put("decoder.mask", tgt_mask)
        y = self.embed(tgt_ids[:, start:], "tgt", trace=run, start=start)
        self_w, self_d, cross_w, cross_d = [], [], [], []
        for i, layer in enumerate(self.decoder_layers):
            y, (sw, sd), (cw, cd) = layer(
                y, encoded.memory, tgt_mask, encoded.src_mask, run, i, opts.need_weights, opts.need_details,
                cache, start,
            )
            self_w.append(sw), self_d.append(sd), cross_w.append(cw), cross_d.append(cd)
        if self.decoder_norm is not None:
            y = apply_norm(self.decoder_norm, y, run, "decoder.final_norm")
        logits = self.generator(y)  # (B, T, V_tgt)
        run.put("decoder.state", y)
        run.put("logits", logits)
        return TransformerOutput(
            logits=logits,
            encoder_attention=encoded.attention,
            decoder_attention=_collect(self_w),
            cross_attention=_collect(cross_w),
            encoder_details=encoded.details,
            decoder_details=_collect(self_d),
            cross_details=_collect(cross_d),
            memory=encoded.memory,
            decoder_state=y,
        )

    def forward(
        self,
        src_ids: torch.Tensor,
        tgt_ids: torch.Tensor,
        use_padding_mask: bool = True,
        use_look_ahead_mask: bool = True,
        *,
        use_positional_encoding: bool = True,
        scale_scores: bool = True,
        need_weights: bool = True,
        need_details: bool = False,
        ablate_heads: Collection[tuple[str, int, int]] = (),
        trace: Trace | None = None,
    ) -> TransformerOutput:
        """src_ids: (B, S), tgt_ids: (B, T) -> TransformerOutput (logits (B, T, V_tgt) + attention).

        ``need_weights=False`` takes the fast SDPA path and returns empty attention tuples (for
        training); otherwise the explicit path returns every attention map. ``need_details`` adds
        the pre-softmax scores and Q/K/V per layer and head. ``trace`` (model.trace.Trace) records
        every named intermediate and applies its interventions.
        """
        opts = ForwardOptions(
            use_padding_mask=use_padding_mask,
            use_look_ahead_mask=use_look_ahead_mask,
            use_positional_encoding=use_positional_encoding,
            scale_scores=scale_scores,
            need_weights=need_weights,
            need_details=need_details,
            ablate_heads=tuple(ablate_heads),
        )
        return self.decode(tgt_ids, self.encode(src_ids, opts, trace), opts, trace)
