"""The building blocks of one encoder or decoder layer."""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

import torch
from torch import nn
from torch.nn import functional as F


_local = threading.local()


@contextmanager
def dropout_generator(generator: torch.Generator | None) -> Iterator[None]:
    """Make every ``Dropout`` in this thread draw from ``generator`` inside the block.

    Several training runs share one process (a classroom); with the global RNG their dropout
    masks would interleave and a run would not replay the same way twice. A per-run generator,
    set per thread, keeps each run's randomness its own.
    """
    previous = getattr(_local, "generator", None)
    _local.generator = generator
    try:
        yield
    finally:
        _local.generator = previous


class Dropout(nn.Module):
    """Inverted dropout that uses the generator set by ``dropout_generator`` for this thread, if any."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        generator = getattr(_local, "generator", None)
        if generator is None:
            return F.dropout(x, self.p, training=True)
        keep = torch.empty_like(x).bernoulli_(1 - self.p, generator=generator)
        return x * keep / (1 - self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


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
        self.dropout = Dropout(dropout)

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
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], tuple]) -> tuple:
        if self.norm_first:
            y, *extra = sublayer(self.norm(x))
            return (x + self.dropout(y), *extra)
        y, *extra = sublayer(x)
        return (self.norm(x + self.dropout(y)), *extra)
