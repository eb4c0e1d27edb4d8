"""Post-norm, pre-norm and no residual at initialisation: how large the gradient of each layer's weights is.

Transformers that differ only in their wiring, built from the same seed, read the same batch of a
task; one cross-entropy loss, one backward pass, and the gradient norm of each encoder and decoder
layer's parameters. The known result (Xiong et al., 2020, "On Layer Normalization in the Transformer
Architecture"): with post-norm the gradients grow towards the output end, which is why the paper's
post-norm model needs a learning-rate warmup; with pre-norm they are about the same in every layer.

The third wiring keeps post-norm's placement and drops every residual connection: each sublayer
connection computes ``Norm(Sublayer(x))``, so the sublayer's output replaces the stream. Then
∂L/∂x = ∂L/∂F · ∂F/∂x instead of ∂L/∂(x+F) · (1 + ∂F/∂x); :func:`one_plus_term` measures both
sides of that identity for one sublayer connection with autograd.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from explain.layernorm import SUBLAYERS_OF
from model.config import TransformerConfig
from model.loss import label_smoothed_cross_entropy
from model.tasks import get_task, make_batch
from model.tokenizer import CharTokenizer
from model.trace import Trace
from model.transformer import Transformer

PLACEMENTS = ("post", "pre")
NO_RESIDUAL = "no_residual"  # post-norm's placement with every residual connection switched off
GRADIENT_WIRINGS = (*PLACEMENTS, NO_RESIDUAL)
FLOAT32_EPS = float(np.finfo(np.float32).eps)  # the models compute in float32: about 7 significant digits
ONE_PLUS_WIRINGS = ("post", NO_RESIDUAL)  # the "1 +" term: the same placement with and without the skip
ONE_PLUS_ROWS = ("upstream", "skip", "through_f", "at_x", "gain")
TASK = "copy"  # the batch the models read; any task shows the same shape
N_LAYERS = 6  # per stack, as in the paper
BATCH_SIZE = 16
SIZES = dict(d_model=64, n_heads=4, d_ff=256)  # the shipped models' width
SEEDS = tuple(range(5))


@dataclass(frozen=True)
class GradientNorms:
    """Per-layer gradient norms at initialisation, encoder layers first, then decoder layers.

    ``stacks[i]``/``layers[i]`` name entry i (layer 0-based); ``norms[wiring]`` is (2·L,) float64:
    the L2 norm of the gradient of all that layer's parameters; ``loss[wiring]`` the loss; wirings
    are :data:`GRADIENT_WIRINGS`.
    """

    stacks: tuple[str, ...]
    layers: tuple[int, ...]
    norms: dict[str, np.ndarray]
    loss: dict[str, float]
    seed: int
    n_layers: int

    def decoder(self, placement: str) -> np.ndarray:
        """(L,) the decoder layers' gradient norms, first layer first."""
        return self.norms[placement][np.array(self.stacks) == "decoder"]

    def floor(self) -> float:
        """The smallest gradient norm float32 can tell from 0 here: FLOAT32_EPS × the largest on the chart.
        A layer below it gets only rounding noise (its gradient is 0 to the model's precision)."""
        return FLOAT32_EPS * max(float(np.max(norms)) for norms in self.norms.values())

    def below_floor(self, wiring: str) -> np.ndarray:
        """(2·L,) bool: which layers of ``wiring`` get a gradient below :meth:`floor`."""
        return self.norms[wiring] < self.floor()


def spread(norms: np.ndarray) -> float:
    """Largest over smallest: 1 when every layer gets the same gradient."""
    return float(np.max(norms) / np.min(norms))


def growth(norms: np.ndarray) -> float:
    """Last layer's over first layer's: above 1 when the gradient grows towards the output."""
    return float(norms[-1] / norms[0])


def layer_gradient_norms(model: Transformer) -> np.ndarray:
    """(2·L,) L2 norm of the gradient of each encoder layer's, then each decoder layer's, parameters."""
    norms = []
    for layer in [*model.encoder_layers, *model.decoder_layers]:
        grads = [p.grad.double().square().sum() for p in layer.parameters() if p.grad is not None]
        norms.append(float(torch.stack(grads).sum().sqrt()) if grads else 0.0)
    return np.array(norms)


def init_model(norm_first: bool, seed: int, n_layers: int, vocab_size: int) -> Transformer:
    """An untrained model of this wiring, its weights drawn from ``seed`` without touching the random
    numbers of other threads. Both wirings draw the same layer weights from the same seed (a norm's
    γ and β start at 1 and 0 and draw nothing), so they differ only in where the norm sits."""
    config = TransformerConfig(src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, n_layers=n_layers,
                               dropout=0.0, norm_first=norm_first, **SIZES)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(config)


def connections(n_layers: int) -> tuple[tuple[str, int, str], ...]:
    """Every sublayer connection ``(stack, layer, sublayer)`` of ``n_layers`` + ``n_layers`` layers, forward order."""
    return tuple((stack, layer, sub) for stack, subs in SUBLAYERS_OF.items() for layer in range(n_layers)
                 for sub in subs)


def _loss(model: Transformer, batch, trace: Trace | None) -> torch.Tensor:
    """The cross-entropy (no label smoothing) of ``model`` on ``batch``, with ``trace``'s interventions if any."""
    logits = model(batch.src, batch.tgt_in, need_weights=False, trace=trace).logits
    return label_smoothed_cross_entropy(logits, batch.tgt_out, 0.0, model.config.pad_id)


def _one_wiring(wiring: str, seed: int, n_layers: int, batch) -> tuple[np.ndarray, float]:
    """Run ``batch`` through a fresh model of this wiring and backpropagate the loss: its per-layer
    gradient norms and the loss. Post-norm and pre-norm take the model's plain (training) path; no
    residual is post-norm with the trace's ``residual_off`` holding every connection."""
    model = init_model(wiring == "pre", seed, n_layers, batch.vocab_size)
    trace = Trace(record=False, residual_off=connections(n_layers)) if wiring == NO_RESIDUAL else None
    with torch.enable_grad():
        loss = _loss(model, batch, trace)
        loss.backward()
    return layer_gradient_norms(model), float(loss.detach())


@dataclass(frozen=True)
class _Batch:
    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    vocab_size: int


def task_batch(seed: int, size: int = BATCH_SIZE, task_name: str = TASK) -> _Batch:
    """``size`` samples of the task drawn with ``seed``, padded as training pads them."""
    task = get_task(task_name)
    tokenizer = CharTokenizer(task.alphabet)
    batch = make_batch(task, tokenizer, size, random.Random(seed))
    return _Batch(batch.src, batch.tgt_in, batch.tgt_out, tokenizer.vocab_size)


def init_gradient_norms(seed: int = 0, n_layers: int = N_LAYERS) -> GradientNorms:
    """Post-norm, pre-norm and no-residual models from the same seed, on the same batch: their per-layer
    gradient norms."""
    batch = task_batch(seed)
    norms, losses = {}, {}
    for wiring in GRADIENT_WIRINGS:
        norms[wiring], losses[wiring] = _one_wiring(wiring, seed, n_layers, batch)
    stacks = ("encoder",) * n_layers + ("decoder",) * n_layers
    return GradientNorms(stacks, tuple(range(n_layers)) * 2, norms, losses, seed, n_layers)


def gradient_csv(result: GradientNorms) -> str:
    """The chart's numbers: one row per layer, one column per wiring."""
    lines = ["stack,layer," + ",".join(f"{w}_norm" for w in GRADIENT_WIRINGS)]
    for i, (stack, layer) in enumerate(zip(result.stacks, result.layers)):
        lines.append(f"{stack},{layer + 1}," + ",".join(f"{result.norms[w][i]:.6g}" for w in GRADIENT_WIRINGS))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the "1 +" of one connection


@dataclass(frozen=True)
class OnePlus:
    """The gradient at one sublayer connection ``x → Norm(x + F(x))`` (or ``Norm(F(x))`` without the skip),
    as L2 norms over the whole batch, for each wiring of :data:`ONE_PLUS_WIRINGS`.

    ``upstream[w]``: ‖∂L/∂(x+F)‖ (without the skip: ‖∂L/∂F‖), what reaches the sum from above;
    ``through_f[w]``: ‖∂L/∂(x+F) · ∂F/∂x‖, the part that goes back through the sublayer;
    ``at_x[w]``: ‖∂L/∂x‖, what x gets: upstream + through F with the skip, through F alone without;
    ``identity_error[w]``: the largest |∂L/∂x − (skip · ∂L/∂(x+F) + ∂L/∂(x+F) · ∂F/∂x)|, entry by entry.
    """

    connection: tuple[str, int, str]
    upstream: dict[str, float]
    through_f: dict[str, float]
    at_x: dict[str, float]
    identity_error: dict[str, float]

    def gain(self, wiring: str) -> float:
        """‖∂L/∂x‖ ÷ ‖∂L/∂(x+F)‖: what the connection passes back of the gradient that reaches it (0 when none does)."""
        return self.at_x[wiring] / self.upstream[wiring] if self.upstream[wiring] else 0.0

    def resolved(self, wiring: str) -> bool:
        """Whether what reaches this connection in ``wiring`` is more than float32 rounding of the largest
        upstream gradient here; when not, that wiring's numbers (and its gain) are noise."""
        return self.upstream[wiring] >= FLOAT32_EPS * max(self.upstream.values())

    def table(self) -> pd.DataFrame:
        """Rows :data:`ONE_PLUS_ROWS` × columns :data:`ONE_PLUS_WIRINGS`: upstream, what the skip (the 1)
        passes back (NaN without one), through F, at x, and the gain."""
        columns = {}
        for wiring in ONE_PLUS_WIRINGS:
            skip = self.upstream[wiring] if wiring != NO_RESIDUAL else np.nan
            columns[wiring] = [self.upstream[wiring], skip, self.through_f[wiring], self.at_x[wiring],
                               self.gain(wiring)]
        return pd.DataFrame(columns, index=list(ONE_PLUS_ROWS))


def one_plus_term(seed: int, connection: tuple[str, int, str], n_layers: int = N_LAYERS) -> OnePlus:
    """∂L/∂x = ∂L/∂(x+F) · (1 + ∂F/∂x) measured at ``connection`` of the post-norm model with and without
    residual connections (same seed, same batch as :func:`init_gradient_norms`).

    The trace records the connection's input x, its update F(x) and the sum the norm reads; autograd gives
    ∂L/∂x and ∂L/∂(x+F) from the loss, and ∂L/∂(x+F) · ∂F/∂x as the vector-Jacobian product of F(x) with
    ∂L/∂(x+F). x feeds nothing but this connection, so the identity holds exactly (up to float32 rounding).
    """
    stack, layer, sub = connection
    name = f"{stack}.{layer}.{sub}_sublayer"
    batch = task_batch(seed)
    upstream, through_f, at_x, error = {}, {}, {}, {}
    for wiring in ONE_PLUS_WIRINGS:
        skip = wiring != NO_RESIDUAL
        model = init_model(False, seed, n_layers, batch.vocab_size)
        trace = Trace(residual_off=() if skip else connections(n_layers))
        with torch.enable_grad():
            loss = _loss(model, batch, trace)
            x, update, total = (trace[f"{name}.{key}"] for key in ("x_in", "update", "norm_in"))
            grad_x, grad_total = torch.autograd.grad(loss, (x, total), retain_graph=True)
            via_f, = torch.autograd.grad(update, x, grad_total)
        expected = (grad_total if skip else 0.0) + via_f
        upstream[wiring], through_f[wiring] = float(grad_total.double().norm()), float(via_f.double().norm())
        at_x[wiring], error[wiring] = float(grad_x.double().norm()), float((grad_x - expected).abs().max())
    return OnePlus(connection, upstream, through_f, at_x, error)
