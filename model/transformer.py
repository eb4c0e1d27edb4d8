"""The encoder-decoder Transformer of "Attention Is All You Need", built to be looked into.

Every forward RETURNS its attention (and, on request, scores and Q/K/V) instead of keeping it
on the modules, so one eval model can serve many classroom sessions at once.
Masks are bool, **True = may attend**.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

import torch
from torch import nn

from model.attention import AttentionDetails, MultiHeadAttention
from model.config import TransformerConfig
from model.layers import Dropout, SublayerConnection, TokenEmbedding, make_feed_forward, make_norm
from model.masks import look_ahead_mask, padding_mask
from model.positional import positional_encoding

ATTENTION_KINDS = ("encoder", "decoder", "cross")


@dataclass(frozen=True)
class ForwardOptions:
    """Switches that change what a forward pass computes or returns (not the weights).

    ablate_heads: (kind, layer, head) triples to switch off, kind in ATTENTION_KINDS.
    use_positional_encoding=False switches off whichever position signal the model has: the
    sinusoidal table added to the embeddings, or RoPE's rotation of Q and K.
    """

    use_padding_mask: bool = True
    use_look_ahead_mask: bool = True
    use_positional_encoding: bool = True
    scale_scores: bool = True
    need_weights: bool = True
    need_details: bool = False
    ablate_heads: Collection[tuple[str, int, int]] = ()


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


def _attention(cfg: TransformerConfig) -> MultiHeadAttention:
    """One multi-head attention of the config: with RoPE's rotation when position_kind is "rope"."""
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.pe_base if cfg.position_kind == "rope" else None)


def _sublayer(cfg: TransformerConfig) -> SublayerConnection:
    return SublayerConnection(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.norm_kind)


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each inside a residual + normalisation."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = _attention(cfg)
        self.feed_forward = make_feed_forward(cfg)
        self.attn_sublayer = _sublayer(cfg)
        self.ff_sublayer = _sublayer(cfg)

    def forward(self, x, mask, opts: ForwardOptions, head_keep=None):
        """x: (B, S, d), mask: (B, 1, 1, S) or None -> (x, weights (B, H, S, S) | None, details | None)."""
        x, weights, details = self.attn_sublayer(
            x,
            lambda h: self.self_attn(
                h, None, mask, need_weights=opts.need_weights, need_details=opts.need_details,
                scale_scores=opts.scale_scores, head_keep=head_keep, use_rope=opts.use_positional_encoding,
            ),
        )
        x, = self.ff_sublayer(x, lambda h: (self.feed_forward(h),))
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

    def forward(self, y, memory, tgt_mask, src_mask, opts: ForwardOptions, self_keep=None, cross_keep=None):
        """y: (B, T, d), memory: (B, S, d), tgt_mask: (B|1, 1, T|1, T), src_mask: (B, 1, 1, S)."""
        kw = dict(need_weights=opts.need_weights, need_details=opts.need_details, scale_scores=opts.scale_scores,
                  use_rope=opts.use_positional_encoding)
        y, self_w, self_d = self.self_attn_sublayer(
            y, lambda h: self.self_attn(h, None, tgt_mask, head_keep=self_keep, **kw)
        )
        y, cross_w, cross_d = self.cross_attn_sublayer(
            y, lambda h: self.cross_attn(h, memory, src_mask, head_keep=cross_keep, **kw)
        )
        y, = self.ff_sublayer(y, lambda h: (self.feed_forward(h),))
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
    def embed(self, ids: torch.Tensor, side: str, use_positional_encoding: bool = True) -> torch.Tensor:
        """(B, T) ids -> (B, T, d): token embedding * sqrt(d_model) (+ the sinusoidal table), dropout.

        The table is added only when the model's position_kind is "sinusoidal" (RoPE rotates Q and K
        inside attention instead; "none" has no position signal).
        """
        T = ids.size(1)
        if T > self.config.max_len:
            raise ValueError(
                f"The sequence has {T} tokens but this model handles at most {self.config.max_len}."
            )
        x = (self.src_embed if side == "src" else self.tgt_embed)(ids)
        if use_positional_encoding and self.config.position_kind == "sinusoidal":
            x = x + self.pe[:T]
        return self.embed_dropout(x)

    def _head_keep(self, opts: ForwardOptions, kind: str, layer: int) -> torch.Tensor | None:
        off = [h for k, l, h in opts.ablate_heads if k == kind and l == layer]
        if not off:
            return None
        keep = torch.ones(self.config.n_heads, device=self.device)
        keep[off] = 0.0
        return keep

    def encode(self, src_ids: torch.Tensor, opts: ForwardOptions = ForwardOptions()) -> EncoderOutput:
        """src_ids: (B, S) -> EncoderOutput with memory (B, S, d)."""
        src_mask = padding_mask(src_ids, self.config.pad_id) if opts.use_padding_mask else None
        x = self.embed(src_ids, "src", opts.use_positional_encoding)
        weights, details = [], []
        for i, layer in enumerate(self.encoder_layers):
            x, w, det = layer(x, src_mask, opts, self._head_keep(opts, "encoder", i))
            weights.append(w)
            details.append(det)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return EncoderOutput(x, src_mask, _collect(weights), _collect(details))

    def target_mask(self, tgt_ids: torch.Tensor, opts: ForwardOptions) -> torch.Tensor | None:
        """Decoder self-attention mask from the switches: look-ahead AND padding, either, or None."""
        mask = None
        if opts.use_look_ahead_mask:
            mask = look_ahead_mask(tgt_ids.size(1), device=tgt_ids.device)[None, None]  # (1, 1, T, T)
        if opts.use_padding_mask:
            pad = padding_mask(tgt_ids, self.config.pad_id)  # (B, 1, 1, T)
            mask = pad if mask is None else mask & pad
        return mask

    def decode(
        self,
        tgt_ids: torch.Tensor,
        encoded: EncoderOutput,
        opts: ForwardOptions = ForwardOptions(),
    ) -> TransformerOutput:
        """tgt_ids: (B, T) decoder input (starting with <bos>) -> logits (B, T, V_tgt) and traces."""
        tgt_mask = self.target_mask(tgt_ids, opts)
        y = self.embed(tgt_ids, "tgt", opts.use_positional_encoding)
        self_w, self_d, cross_w, cross_d = [], [], [], []
        for i, layer in enumerate(self.decoder_layers):
            y, (sw, sd), (cw, cd) = layer(
                y, encoded.memory, tgt_mask, encoded.src_mask, opts,
                self._head_keep(opts, "decoder", i), self._head_keep(opts, "cross", i),
            )
            self_w.append(sw), self_d.append(sd), cross_w.append(cw), cross_d.append(cd)
        if self.decoder_norm is not None:
            y = self.decoder_norm(y)
        return TransformerOutput(
            logits=self.generator(y),
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
    ) -> TransformerOutput:
        """src_ids: (B, S), tgt_ids: (B, T) -> TransformerOutput (logits (B, T, V_tgt) + attention).

        ``need_weights=False`` takes the fast SDPA path and returns empty attention tuples (for
        training); otherwise the explicit path returns every attention map. ``need_details`` adds
        the pre-softmax scores and Q/K/V per layer and head.
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
        return self.decode(tgt_ids, self.encode(src_ids, opts), opts)
