"""The building blocks of one encoder or decoder layer."""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F


class TokenEmbedding(nn.Module):
    """Token ids (B, T) -> vectors (B, T, d) scaled by sqrt(d_model).

    The scale keeps the learned vectors on the same footing as the positional encoding, whose
    entries lie in [-1, 1], when the two are added.
    """

    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__()
        self.lookup = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lookup(ids) * self.scale


class FeedForward(nn.Module):
    """Position-wise feed-forward: the same two-layer ReLU MLP applied to every position alone."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(F.relu(self.linear1(x))))  # (B, T, d) -> (B, T, d_ff) -> (B, T, d)


class SublayerConnection(nn.Module):
    """Residual connection plus LayerNorm around a sublayer.

    Post-norm (the paper): ``LayerNorm(x + dropout(sublayer(x)))``.
    Pre-norm: ``x + dropout(sublayer(LayerNorm(x)))``; it trains more easily in deep stacks but
    needs a final LayerNorm after the stack.
    The sublayer returns (output, extra); ``extra`` (e.g. attention weights) is passed through.
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], tuple]) -> tuple:
        if self.norm_first:
            y, *extra = sublayer(self.norm(x))
            return (x + self.dropout(y), *extra)
        y, *extra = sublayer(x)
        return (self.norm(x + self.dropout(y)), *extra)
