"""The building blocks of one encoder or decoder layer."""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

import torch
from torch import nn
from torch.nn import functional as F

from model.config import NORM_KINDS, TransformerConfig, swiglu_hidden
from model.trace import Trace

NORM_EPS = 1e-5  # the eps of nn.LayerNorm, used by RMSNorm too


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
    """Position-wise feed-forward: the same two-layer ReLU MLP applied to every position alone.

    FFN(x) = max(0, x W1 + b1) W2 + b2, with W1 = ``linear1`` (d_model -> d_ff), W2 = ``linear2``.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) -> (B, T, d_ff): the activations between the two layers, before dropout."""
        return F.relu(self.linear1(x))

    def forward(self, x: torch.Tensor, trace: Trace | None = None, name: str = "ffn") -> torch.Tensor:
        """(B, T, d) -> (B, T, d_ff) -> (B, T, d); ``trace`` records hidden_pre, hidden and out under ``name``."""
        if trace is None or not trace.record:
            return self.linear2(self.dropout(self.hidden(x)))
        pre = self.linear1(x)  # (B, T, d_ff)
        hidden = F.relu(pre)
        out = self.linear2(self.dropout(hidden))  # (B, T, d)
        for key, value in (("hidden_pre", pre), ("hidden", hidden), ("out", out)):
            trace.put(f"{name}.{key}", value)
        return out


class SwiGLUFeedForward(nn.Module):
    """Gated feed-forward (Shazeer 2020, as in LLaMA): FFN(x) = (SiLU(x W1) ⊙ x V) W2, no biases.

    W1 = ``linear_gate`` (its SiLU is the gate), V = ``linear1`` (the values the gate scales),
    W2 = ``linear2``; SiLU(z) = z · sigmoid(z). ``hidden`` is :func:`model.config.swiglu_hidden`
    of d_ff, so the block has about as many parameters as the ReLU one.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        width = swiglu_hidden(d_ff)
        self.linear_gate = nn.Linear(d_model, width, bias=False)
        self.linear1 = nn.Linear(d_model, width, bias=False)
        self.linear2 = nn.Linear(width, d_model, bias=False)
        self.dropout = Dropout(dropout)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) -> (B, T, hidden): SiLU(x W1) ⊙ x V, before dropout."""
        return F.silu(self.linear_gate(x)) * self.linear1(x)

    def forward(self, x: torch.Tensor, trace: Trace | None = None, name: str = "ffn") -> torch.Tensor:
        """(B, T, d) -> (B, T, hidden) -> (B, T, d); ``trace`` records hidden_pre (x W1), value (x V), hidden, out."""
        if trace is None or not trace.record:
            return self.linear2(self.dropout(self.hidden(x)))
        pre, value = self.linear_gate(x), self.linear1(x)  # (B, T, hidden) each
        hidden = F.silu(pre) * value
        out = self.linear2(self.dropout(hidden))  # (B, T, d)
        for key, tensor in (("hidden_pre", pre), ("value", value), ("hidden", hidden), ("out", out)):
            trace.put(f"{name}.{key}", tensor)
        return out


def make_feed_forward(cfg: TransformerConfig) -> FeedForward | SwiGLUFeedForward:
    """The feed-forward block ``cfg.ffn_kind`` names, of width d_ff (ReLU) or swiglu_hidden(d_ff)."""
    kind = SwiGLUFeedForward if cfg.ffn_kind == "swiglu" else FeedForward
    return kind(cfg.d_model, cfg.d_ff, cfg.dropout)


class RMSNorm(nn.Module):
    """Root-mean-square normalisation (Zhang & Sennrich 2019): x / sqrt(mean(x²) + eps) · γ.

    Unlike LayerNorm it neither subtracts the mean nor adds a bias β: only the size of each
    vector is normalised, over its last dimension. ``weight`` is γ (starts at 1).
    """

    def __init__(self, d_model: int, eps: float = NORM_EPS) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + self.eps) * self.weight

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


def make_norm(kind: str, d_model: int) -> nn.LayerNorm | RMSNorm:
    """A LayerNorm (``kind`` "layer") or an RMSNorm ("rms") over vectors of size d_model."""
    if kind == "layer":
        return nn.LayerNorm(d_model, eps=NORM_EPS)
    if kind == "rms":
        return RMSNorm(d_model, eps=NORM_EPS)
    raise ValueError(f"The norm kind must be one of {', '.join(NORM_KINDS)}, got {kind!r}.")


def apply_norm(norm: nn.Module, x: torch.Tensor, trace: Trace | None = None, name: str = "norm") -> torch.Tensor:
    """norm(x), or the trace's replacement ``(x, weight, bias | None, eps)``; records in, stats and out under ``name``.

    The statistics are over the last dimension: LayerNorm's ``mean`` and ``var`` (population), or
    RMSNorm's ``rms`` = sqrt(mean(x²) + eps), the number it divides by.
    """
    if trace is None:
        return norm(x)
    replaced = trace.replace.get("norm")
    y = norm(x) if replaced is None else replaced(x, norm.weight, getattr(norm, "bias", None), norm.eps)
    if trace.record:
        trace.put(f"{name}.in", x)
        if isinstance(norm, RMSNorm):
            trace.put(f"{name}.rms", torch.sqrt(x.square().mean(dim=-1) + norm.eps))  # (B, T)
        else:
            trace.put(f"{name}.mean", x.mean(dim=-1))  # (B, T)
            trace.put(f"{name}.var", x.var(dim=-1, unbiased=False))
        trace.put(f"{name}.out", y)
    return y


class SublayerConnection(nn.Module):
    """Residual connection plus a normalisation (``norm``: LayerNorm or RMSNorm) around a sublayer.

    Post-norm (the paper): ``Norm(x + dropout(sublayer(x)))``.
    Pre-norm: ``x + dropout(sublayer(Norm(x)))``; it trains more easily in deep stacks but
    needs a final Norm after the stack.
    The sublayer returns (output, extra); ``extra`` (e.g. attention weights) is passed through.
    With ``residual=False`` the connection drops x: post-norm ``Norm(update)``, pre-norm ``update``.
    ``trace`` records x_in, sublayer_in, update, norm_in, x_out and the norm under ``name``.
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool, norm_kind: str = "layer") -> None:
        super().__init__()
        self.norm = make_norm(norm_kind, d_model)
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], tuple], trace: Trace | None = None,
                name: str = "sublayer", residual: bool = True) -> tuple:
        if trace is None and residual:  # the plain path (training)
            if self.norm_first:
                y, *extra = sublayer(self.norm(x))
                return (x + self.dropout(y), *extra)
            y, *extra = sublayer(x)
            return (self.norm(x + self.dropout(y)), *extra)
        if self.norm_first:
            sublayer_in = apply_norm(self.norm, x, trace, f"{name}.norm")
            y, *extra = sublayer(sublayer_in)
            update = self.dropout(y)
            norm_in = x
            x_out = x + update if residual else update
        else:
            sublayer_in = x
            y, *extra = sublayer(x)
            update = self.dropout(y)
            norm_in = x + update if residual else update
            x_out = apply_norm(self.norm, norm_in, trace, f"{name}.norm")
        if trace is not None and trace.record:
            for key, value in (("x_in", x), ("sublayer_in", sublayer_in), ("update", update), ("norm_in", norm_in),
                               ("x_out", x_out)):
                trace.put(f"{name}.{key}", value)
        return (x_out, *extra)
