"""Scaled dot-product attention and multi-head attention, with traces you can look into.

Masks are bool with **True = may attend**, broadcastable to (B, H, T_q, T_k).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from model.positional import rope_rotate_sequence
from model.trace import Trace


@dataclass
class KVCache:
    """One attention's keys and values kept between decoding steps, (B, H, T_k, d_k) each (after RoPE).

    Self-attention appends the new positions' keys and values at every step; cross-attention stores
    the memory's once and reuses them. ``reorder`` follows beam search's choice of parent rows.
    """

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.size(-2)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions' k, v (B, H, t, d_k); returns all of them, (B, H, T_k, d_k)."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep rows ``rows`` (B',) of the batch, in that order (beam search's parents)."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, rows), self.v.index_select(0, rows)


@dataclass(frozen=True)
class AttentionDetails:
    """Everything inside one attention call, per head. Shapes: (B, H, T, d_k) and (B, H, T_q, T_k)."""

    q: torch.Tensor  # after RoPE's rotation when the model uses RoPE, so scores = q k^T (/ sqrt(d_k)) always
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor  # QK^T (/ sqrt(d_k) when scaling), before the mask and the softmax


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last dim with masked positions exactly 0.

    Masked scores are set to the dtype's most negative finite value (never -inf, never added
    twice), and the weights are zeroed afterwards, so a row whose every key is masked gives all
    zeros instead of NaN, in forward and in backward.
    """
    if mask is None:
        return scores.softmax(dim=-1)
    weights = scores.masked_fill(~mask, torch.finfo(scores.dtype).min).softmax(dim=-1)
    # Every other masked weight is already exactly 0 (exp underflows); only rows with no key at
    # all came out uniform and must be zeroed.
    has_key = mask.any(dim=-1, keepdim=True)
    return weights * has_key


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale_scores: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The explicit path: softmax(Q K^T / sqrt(d_k), masked) @ V.

    q: (B, H, T_q, d_k), k and v: (B, H, T_k, d_k), mask: bool broadcastable to (B, H, T_q, T_k).
    Returns (output (B, H, T_q, d_k), weights (B, H, T_q, T_k), scores (B, H, T_q, T_k)).
    """
    scores = q @ k.transpose(-2, -1)  # (B, H, T_q, T_k)
    if scale_scores:
        scores = scores / math.sqrt(q.size(-1))
    weights = masked_softmax(scores, mask)
    return weights @ v, weights, scores


def fast_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale_scores: bool = True,
) -> torch.Tensor:
    """The fast path through ``F.scaled_dot_product_attention``; same result as the explicit one.

    A query row whose keys are all masked is let through to SDPA unmasked (so no NaN can appear)
    and its output is set to 0, exactly what the explicit path gives (all-zero weights).
    """
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, scale=None if scale_scores else 1.0)
    has_key = mask.any(dim=-1, keepdim=True)  # (B|1, H|1, T_q|1, 1)
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask | ~has_key, scale=None if scale_scores else 1.0
    )
    return out * has_key


class MultiHeadAttention(nn.Module):
    """H heads of scaled dot-product attention over learned projections, concatenated and mixed.

    Each head has width ``d_k`` (default d_model / n_heads, the paper's split; set apart, the heads together
    are H·d_k wide and W^O maps that back to d_model).
    The Q, K, V projections are stored as one (3·H·d_k, d) matrix, as in ``nn.MultiheadAttention``:
    self-attention projects once, cross-attention projects queries from the decoder and keys and
    values from the encoder memory with the two slices. As in the paper, dropout is applied to
    sublayer outputs, not to the attention weights, so the weights shown are the ones used.

    With ``rope_base`` set (the RoPE variant), every head's queries are rotated by their positions
    and its keys by theirs, after the head split and before the scores, on both paths; no weights
    are added.
    """

    def __init__(self, d_model: int, n_heads: int, rope_base: float | None = None, d_k: int | None = None) -> None:
        super().__init__()
        if d_k is None and d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must split evenly across n_heads ({n_heads}).")
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_model // n_heads if d_k is None else d_k  # one head's width
        self.width = n_heads * self.d_k  # the heads side by side: d_model, unless d_k is set apart
        self.rope_base = rope_base
        self.in_proj = nn.Linear(d_model, 3 * self.width)
        self.out_proj = nn.Linear(self.width, d_model)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, H, T, d_k)

    def _rotate(self, x: torch.Tensor, start: int, trace: Trace | None) -> torch.Tensor:
        """RoPE at positions start.. (the trace may replace the rotation); x unchanged without RoPE."""
        if self.rope_base is None:
            return x
        rotate = trace.replace.get("rope", rope_rotate_sequence) if trace is not None else rope_rotate_sequence
        return rotate(x, self.rope_base, start)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        need_weights: bool = False,
        need_details: bool = False,
        scale_scores: bool = True,
        head_keep: torch.Tensor | None = None,
        use_rope: bool = True,
        trace: Trace | None = None,
        name: str = "attn",
        cache: KVCache | None = None,
        start: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor | None, AttentionDetails | None]:
        """x: (B, T, d) queries; memory: (B, S, d) keys/values source (None = self-attention).

        head_keep: (H,) float, 1 keeps a head and 0 switches it off (its output is zeroed before
        the heads are mixed). ``use_rope=False`` skips the rotation of a RoPE model (no effect
        otherwise). ``trace`` records this call's q, k, v, scores, weights, heads, concat and out
        under ``name`` and may replace the attention function or the rotation (model.trace).
        ``cache``: self-attention appends this call's keys and values to it and attends over all of
        them; cross-attention computes the memory's once and then reuses them. ``start``: position of
        x's first query (the cache's length), where RoPE rotates it.
        Returns (output (B, T, d), weights (B, H, T, S) or None, details or None).
        The explicit path runs when weights or details are asked for (or recorded), SDPA otherwise.
        """
        B, T, d = x.shape
        w, b = self.in_proj.weight, self.in_proj.bias
        if memory is None:
            q, k, v = self.in_proj(x).chunk(3, dim=-1)  # 3 x (B, T, d)
            q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)  # (B, H, T, d_k)
            if use_rope:
                q, k = self._rotate(q, start, trace), self._rotate(k, start, trace)
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H, start + T, d_k)
        else:
            n = self.width
            q = self._split_heads(F.linear(x, w[:n], b[:n]))  # (B, H, T, d_k)
            if use_rope:
                q = self._rotate(q, start, trace)
            if cache is not None and cache.k is not None:
                k, v = cache.k, cache.v  # (B, H, S, d_k), computed at the first step
            else:
                k, v = F.linear(memory, w[n:], b[n:]).chunk(2, dim=-1)  # 2 x (B, S, H*d_k)
                k, v = self._split_heads(k), self._split_heads(v)  # (B, H, S, d_k)
                if use_rope:
                    k = self._rotate(k, 0, trace)
                if cache is not None:
                    cache.append(k, v)
        record = trace is not None and trace.record
        replaced = trace.replace.get("attention") if trace is not None else None
        weights = details = scores = None
        if replaced is not None:
            out, weights = replaced(q, k, v, mask)
        elif need_weights or need_details or record:
            out, weights, scores = scaled_dot_product_attention(q, k, v, mask, scale_scores=scale_scores)
        else:
            out = fast_attention(q, k, v, mask, scale_scores=scale_scores)
        if need_details and scores is not None:
            details = AttentionDetails(q=q, k=k, v=v, scores=scores)
        if head_keep is not None:
            out = out * head_keep.to(out.dtype)[None, :, None, None]
        concat = out.transpose(1, 2).reshape(B, T, self.width)  # (B, T, H*d_k)
        result = self.out_proj(concat)  # (B, T, d)
        if record:
            for key, value in (("q", q), ("k", k), ("v", v), ("scores", scores), ("weights", weights),
                               ("heads", out), ("concat", concat), ("out", result)):
                trace.put(f"{name}.{key}", value)
        return result, (weights if need_weights or need_details else None), details
