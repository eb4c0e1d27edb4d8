"""Sinusoidal positional encoding (the paper's) and rotary embedding (RoPE, for comparison)."""
from __future__ import annotations

import math

import torch


def positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """(max_len, d_model) float table: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(same).

    Even columns hold sines, odd columns cosines; the pair (2i, 2i+1) turns at angular frequency
    base^(-2i/d), i.e. with wavelength ``2*pi * base^(2i/d)`` positions.
    """
    if max_len < 1 or d_model < 2 or d_model % 2:
        raise ValueError(f"Need max_len >= 1 and an even d_model >= 2, got max_len={max_len}, d_model={d_model}.")
    if base <= 1:
        raise ValueError(f"The base must be greater than 1, got {base}.")
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (P, 1)
    frequency = torch.exp(-math.log(base) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
    angle = position * frequency  # (P, d/2)
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table.float()


def wavelength(pair_index: int, d_model: int, base: float = 10000.0) -> float:
    """Positions per full turn of dimension pair (2i, 2i+1): 2*pi * base^(2i/d_model)."""
    return 2 * math.pi * base ** (2 * pair_index / d_model)


def rope_rotate(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding: rotate each pair (2i, 2i+1) of x by angle position * base^(-2i/d).

    x: (..., P, d) with d even; positions: (P,). Because rotations compose, the dot product of a
    rotated query at p and a rotated key at q depends only on q - p (and the vectors), not on p.
    """
    d = x.size(-1)
    if d % 2:
        raise ValueError(f"RoPE rotates pairs of dimensions, so the size must be even, got {d}.")
    frequency = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    angle = positions.to(torch.float32)[:, None] * frequency  # (P, d/2)
    cos, sin = angle.cos(), angle.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.empty_like(x)
    rotated[..., 0::2] = even * cos - odd * sin
    rotated[..., 1::2] = even * sin + odd * cos
    return rotated


def rope_rotate_sequence(x: torch.Tensor, base: float = 10000.0, start: int = 0) -> torch.Tensor:
    """RoPE of a sequence at positions start..start+P-1: x (..., P, d) -> the same shape, as attention uses it.

    Every pair (2i, 2i+1) turns by ``rope_rotate``; when d is odd (a head of odd size) the last
    dimension has no partner and is left as it is, so it carries no position. ``start`` > 0 is for
    the decoder's key/value cache: the new tokens sit after the ``start`` already in the cache.
    """
    P, d = x.shape[-2:]
    positions = torch.arange(start, start + P, device=x.device)
    paired = d - d % 2
    if paired == d:
        return rope_rotate(x, positions, base)
    if paired == 0:
        return x
    return torch.cat([rope_rotate(x[..., :paired], positions, base), x[..., paired:]], dim=-1)
