"""Reference answers where the model has no function of the exercise's signature (its LayerNorm is
``nn.LayerNorm``, its heads are split inside a method, its BLEU is sacrebleu's). Each computes what
the model's own code computes; the tests hold them to it (``tests/unit/test_exercises.py``)."""
from __future__ import annotations

import copy
import math
from collections import Counter

import torch
from torch import nn
from torch.nn import functional as F


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d_model) -> (B, H, T, d_k): each head gets its own d_k = d_model / H columns."""
    B, T, d = x.shape
    return x.view(B, T, n_heads, d // n_heads).transpose(1, 2)  # (B, H, T, d_k)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, d_k) -> (B, T, H * d_k): the heads side by side again (the concatenation)."""
    B, H, T, d_k = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d_k)  # (B, T, H, d_k) -> (B, T, d_model)


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Normalise each position's vector over its d_model features, then scale and shift (as nn.LayerNorm)."""
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = x.var(dim=-1, unbiased=False, keepdim=True)  # (..., 1), divided by d, not d - 1
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def feed_forward(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor,
                 b2: torch.Tensor) -> torch.Tensor:
    """FFN(x) = max(0, x W1 + b1) W2 + b2, the same at every position; W1 (d_model, d_ff), W2 (d_ff, d_model)."""
    hidden = F.relu(x @ w1 + b1)  # (..., d_ff)
    return hidden @ w2 + b2  # (..., d_model)


def shift_targets(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T+1) ids ``<bos> y1 .. yn <eos> <pad>..`` -> decoder input (B, T) and labels (B, T):
    at position t the decoder has read tokens 0..t and must predict token t + 1."""
    return ids[:, :-1], ids[:, 1:]


def modified_precision(candidate: list[str], reference: list[str], n: int) -> float:
    """BLEU's p_n: candidate n-grams found in the reference, each counted at most as often as the
    reference has it (clipped), over all candidate n-grams; 0.0 when the candidate has none."""
    cand = Counter(tuple(candidate[i:i + n]) for i in range(len(candidate) - n + 1))
    ref = Counter(tuple(reference[i:i + n]) for i in range(len(reference) - n + 1))
    total = sum(cand.values())
    clipped = sum(min(count, ref[gram]) for gram, count in cand.items())
    return clipped / total if total else 0.0


def brevity_penalty(c: int, r: int) -> float:
    """BP = 1 when the candidate is at least as long as the reference (c >= r), else exp(1 - r/c);
    0.0 for an empty candidate."""
    if c >= r:
        return 1.0
    return math.exp(1 - r / c) if c else 0.0


def clones(module: nn.Module, n: int) -> nn.ModuleList:
    """N separate layers of the same shape: a deep copy each, so each has its own parameters (the paper's
    "identical layers" that "use different parameters from layer to layer")."""
    return nn.ModuleList(copy.deepcopy(module) for _ in range(n))
