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
