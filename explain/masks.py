"""The masks of one sentence of a batch, and what they do to the model's real attention.

Masks are bool, **True = may attend** (see :mod:`model.masks`). A switch that is off means the
model gets no mask at all, which the views show as a matrix of True. ``kind`` is one of
:data:`SELF_ATTENTION_KINDS`: the encoder's self-attention (the padding mask acts on it) or the decoder's (the
look-ahead mask, and the padding of the decoder input).

A view draws a sentence as the lesson needs it, not as wide as the batch: its real tokens and at
most :data:`SHOWN_PADS` of its ``<pad>`` positions (:meth:`PairTokens.cropped`, :meth:`HeadMap.cropped`,
:meth:`RowSteps.cropped`). The model still runs on the whole padded sentence, so every number
(a leak's share, a row's weights) is that of the real padded input; only the picture is cropped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explain.tokens import SentenceBatch
from model.arrays import layer_stack
from model.checkpoint import Checkpoint
from model.masks import decoder_mask, look_ahead_mask, padding_mask

SEED_EXAMPLE_IDS = (1, 2, 3, 0, 0)  # seed 004's target batch [[1, 2, 3, 0, 0]], 0 = <pad>
SELF_ATTENTION_KINDS: tuple[str, ...] = ("encoder", "decoder")
SHOWN_PADS = 3  # <pad> positions a view draws: enough to see what the padding mask hides, not a wall of them


@dataclass(frozen=True)
class PairTokens:
    """The chosen sentence of the batch: source and decoder-input tokens and ids, with their padding."""

    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    src_ids: tuple[int, ...]
    tgt_ids: tuple[int, ...]
    src_pads: int
    tgt_pads: int

    def tokens(self, kind: str) -> tuple[str, ...]:
        """The tokens that ``kind``'s self-attention reads: the source or the decoder input."""
        return self.src_tokens if kind == "encoder" else self.tgt_tokens

    def pads(self, kind: str) -> int:
        """How many ``<pad>`` end ``kind``'s side."""
        return self.src_pads if kind == "encoder" else self.tgt_pads

    def real(self, kind: str) -> np.ndarray:
        """(n,) bool: which of ``kind``'s positions hold a real token (padding comes last)."""
        n = len(self.tokens(kind))
        return np.arange(n) < n - self.pads(kind)

    def drawn(self, kind: str) -> int:
        """How many of ``kind``'s positions a view draws: the real tokens and at most :data:`SHOWN_PADS` ``<pad>``."""
        pads = self.pads(kind)
        return len(self.tokens(kind)) - pads + min(pads, SHOWN_PADS)

    def not_drawn(self, kind: str) -> int:
        """How many of ``kind``'s ``<pad>`` positions a view leaves out."""
        return len(self.tokens(kind)) - self.drawn(kind)

    def cropped(self) -> PairTokens:
        """This pair as a view draws it: each side cut after its first :data:`SHOWN_PADS` ``<pad>``."""
        s, t = self.drawn("encoder"), self.drawn("decoder")
        return PairTokens(self.src_tokens[:s], self.tgt_tokens[:t], self.src_ids[:s], self.tgt_ids[:t],
                          min(self.src_pads, SHOWN_PADS), min(self.tgt_pads, SHOWN_PADS))


def pair_tokens(batch: SentenceBatch, index: int) -> PairTokens:
    """Sentence ``index`` of ``batch``, padded as in the batch."""
    src, tgt = batch.source[index], batch.decoder_in[index]
    return PairTokens(tuple(src.tokens), tuple(tgt.tokens), tuple(src.ids), tuple(tgt.ids),
                      len(src.ids) - src.length, len(tgt.ids) - tgt.length)


def flipped(kind: str, use_padding: bool, use_look_ahead: bool) -> tuple[bool, bool]:
    """The switches with the one that acts on ``kind``'s self-attention flipped."""
    if kind == "encoder":
        return not use_padding, use_look_ahead
    return use_padding, not use_look_ahead


@dataclass(frozen=True)
class MaskSet:
    """The masks of one (source, decoder input) pair as the switches make them.

    ``padding`` is (S, S): the stored (1, 1, 1, S) row broadcast over the queries. ``look_ahead``
    and ``combined`` are (T, T). A switched-off mask is all True. ``printouts`` holds PyTorch's
    own printing of the tensors the model builds (``"None"`` when a switch is off).
    """

    padding: np.ndarray
    look_ahead: np.ndarray
    combined: np.ndarray
    printouts: dict[str, str]


def _printout(mask: torch.Tensor | None) -> str:
    return "None" if mask is None else str(mask)


def _square(mask: torch.Tensor | None, size: int) -> np.ndarray:
    """A (1, 1, 1|size, size) mask as (size, size) bool; no mask is all True."""
    if mask is None:
        return np.ones((size, size), bool)
    return np.broadcast_to(mask.reshape(-1, size).numpy(), (size, size)).copy()


def mask_set(src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], pad_id: int, use_padding: bool,
             use_look_ahead: bool) -> MaskSet:
    """Build the masks with :mod:`model.masks`, exactly as :class:`model.transformer.Transformer` does."""
    src = torch.tensor([list(src_ids)])
    tgt = torch.tensor([list(tgt_ids)])
    S, T = len(src_ids), len(tgt_ids)
    pad = padding_mask(src, pad_id) if use_padding else None  # (1, 1, 1, S)
    ahead = look_ahead_mask(T) if use_look_ahead else None  # (T, T)
    if use_padding and use_look_ahead:
        combined = decoder_mask(tgt, pad_id)  # (1, 1, T, T)
    elif use_padding:
        combined = padding_mask(tgt, pad_id)  # (1, 1, 1, T)
    elif use_look_ahead:
        combined = ahead[None, None]
    else:
        combined = None
    return MaskSet(
        padding=_square(pad, S),
        look_ahead=_square(ahead, T),
        combined=_square(combined, T),
        printouts={"padding": _printout(pad), "look_ahead": _printout(ahead), "combined": _printout(combined)},
    )


def seed_example() -> tuple[str, np.ndarray]:
    """Seed 004's combined-mask example, computed: (PyTorch's printout, (5, 5) bool)."""
    mask = decoder_mask(torch.tensor([SEED_EXAMPLE_IDS]), 0)
    return str(mask), mask[0, 0].numpy()


@dataclass(frozen=True)
class MaskedAttention:
    """Self-attention of one padded sentence pair. Arrays are (L, H, T_q, T_k) float64.

    ``*_mask`` is the mask the forward pass used ((S, S) / (T, T), all True when none was);
    ``*_hideable`` marks the cells the full mask would hide, whether or not it was on.
    """

    encoder: np.ndarray
    decoder: np.ndarray
    encoder_scores: np.ndarray
    decoder_scores: np.ndarray
    encoder_mask: np.ndarray
    decoder_mask: np.ndarray
    encoder_hideable: np.ndarray
    decoder_hideable: np.ndarray


@torch.inference_mode()
def masked_attention(ckpt: Checkpoint, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], use_padding: bool,
                     use_look_ahead: bool) -> MaskedAttention:
    """One forward pass of the model on (source, decoder input), padding included, with the switches."""
    model = ckpt.model
    limit = model.config.max_len
    src_ids, tgt_ids = tuple(src_ids)[:limit], tuple(tgt_ids)[:limit]
    src = torch.tensor([src_ids], device=model.device)
    tgt = torch.tensor([tgt_ids], device=model.device)
    out = model(src, tgt, use_padding, use_look_ahead, need_details=True)
    used = mask_set(src_ids, tgt_ids, model.config.pad_id, use_padding, use_look_ahead)
    full = mask_set(src_ids, tgt_ids, model.config.pad_id, True, True)
    return MaskedAttention(
        encoder=layer_stack(out.encoder_attention),
        decoder=layer_stack(out.decoder_attention),
        encoder_scores=layer_stack([d.scores for d in out.encoder_details]),
        decoder_scores=layer_stack([d.scores for d in out.decoder_details]),
        encoder_mask=used.padding,
        decoder_mask=used.combined,
        encoder_hideable=~full.padding,
        decoder_hideable=~full.combined,
    )


@dataclass(frozen=True)
class HeadMap:
    """One head's self-attention of one kind, with its masks. Every array is (T, T).

    ``mask``: what the pass used (True = may attend); ``hideable``: what the full mask would hide.
    """

    weights: np.ndarray
    mask: np.ndarray
    hideable: np.ndarray

    @property
    def leaks(self) -> np.ndarray:
        """(T, T) bool: cells the full mask would hide but this pass let through."""
        return self.hideable & self.mask

    def cropped(self, n: int) -> HeadMap:
        """The first ``n`` queries and keys (see :meth:`PairTokens.drawn`)."""
        return HeadMap(self.weights[:n, :n], self.mask[:n, :n], self.hideable[:n, :n])


def head_map(attention: MaskedAttention, kind: str, layer: int, head: int) -> HeadMap:
    """Head ``head`` of layer ``layer`` of ``kind``'s self-attention in ``attention``."""
    if kind == "encoder":
        return HeadMap(attention.encoder[layer, head], attention.encoder_mask, attention.encoder_hideable)
    return HeadMap(attention.decoder[layer, head], attention.decoder_mask, attention.decoder_hideable)


def leak_share(weights: np.ndarray, hideable: np.ndarray, query_real: np.ndarray) -> float:
    """Average attention weight a real query puts on the cells the full mask would hide.

    weights, hideable: (T_q, T_k); query_real: (T_q,) bool. 0 when the mask is on.
    """
    rows = np.asarray(query_real, bool)
    if not rows.any():
        return 0.0
    return float((weights * hideable)[rows].sum(axis=1).mean())


@dataclass(frozen=True)
class RowSteps:
    """One query row from scores to weights, each (T_k,): raw scores, masked scores (−inf where
    hidden), softmax weights, and which keys the mask allowed."""

    raw: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    allowed: np.ndarray

    def cropped(self, n: int) -> RowSteps:
        """The first ``n`` keys (see :meth:`PairTokens.drawn`); the weights stay those of the whole row."""
        return RowSteps(self.raw[:n], self.masked[:n], self.weights[:n], self.allowed[:n])


def row_steps(attention: MaskedAttention, kind: str, layer: int, head: int, query: int) -> RowSteps:
    """Row ``query`` of head ``head`` of layer ``layer`` of ``kind``'s self-attention, step by step."""
    scores = attention.encoder_scores if kind == "encoder" else attention.decoder_scores
    weights = attention.encoder if kind == "encoder" else attention.decoder
    mask = attention.encoder_mask if kind == "encoder" else attention.decoder_mask
    raw = scores[layer, head, query]
    allowed = mask[query]
    return RowSteps(raw=raw, masked=np.where(allowed, raw, -np.inf), weights=weights[layer, head, query],
                    allowed=allowed)
