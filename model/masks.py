"""Attention masks. One polarity everywhere: bool, **True = may attend**.

That is the seeds' convention and ``F.scaled_dot_product_attention``'s; it is the opposite of
``nn.MultiheadAttention`` / ``nn.Transformer``, whose bool masks mean "do not attend".
"""
from __future__ import annotations

import torch


def padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """(B, S) token ids -> (B, 1, 1, S) bool, True where the key is a real token (not padding)."""
    return (ids != pad_id)[:, None, None, :]


def look_ahead_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(size, size) bool, lower-triangular: query i may attend to keys 0..i, never to the future."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def decoder_mask(tgt_ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """(B, T) target ids -> (B, 1, T, T) bool: look-ahead AND padding of the keys."""
    T = tgt_ids.size(1)
    return look_ahead_mask(T, device=tgt_ids.device)[None, None] & padding_mask(tgt_ids, pad_id)


# -- cheaper attention: fixed patterns of which (query, key) pairs are computed ----------------------------
# Each returns (size, size) bool, True = may attend, for one sequence of ``size`` positions. The model
# gets one by AND-ing it into the mask it already uses (see explain.masks.restricted_answers).


def _distance(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(size, size) |i - j|: how far key j is from query i."""
    i = torch.arange(size, device=device)
    return (i[:, None] - i[None, :]).abs()


def window_mask(size: int, radius: int, device: torch.device | str | None = None) -> torch.Tensor:
    """A sliding window: query i sees keys i - radius .. i + radius (the paper's restricted self-attention)."""
    return _distance(size, device) <= radius


def block_mask(size: int, block: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Blocks: positions 0..block-1, block..2·block-1, ... each see only their own block."""
    i = torch.arange(size, device=device) // max(int(block), 1)
    return i[:, None] == i[None, :]


def strided_mask(size: int, stride: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Strided (the Sparse Transformer's pattern): the stride - 1 neighbours on each side and every
    stride-th position beyond them, i.e. |i - j| < stride or |i - j| a multiple of stride."""
    d = _distance(size, device)
    return (d < stride) | (d % max(int(stride), 1) == 0)


def global_window_mask(size: int, n_global: int, radius: int,
                       device: torch.device | str | None = None) -> torch.Tensor:
    """A window of ``radius`` plus the first ``n_global`` positions as global tokens (Longformer's
    pattern): they see every position and every position sees them."""
    i = torch.arange(size, device=device)
    is_global = i < n_global
    return window_mask(size, radius, device) | is_global[:, None] | is_global[None, :]
