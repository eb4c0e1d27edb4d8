"""Post-norm vs pre-norm at initialisation: how large the gradient of each layer's weights is.

Two Transformers that differ only in where the norm sits (``norm_first``), built from the same seed,
read the same batch of a task; one cross-entropy loss, one backward pass, and the gradient norm of
each encoder and decoder layer's parameters. The known result (Xiong et al., 2020, "On Layer
Normalization in the Transformer Architecture"): with post-norm the gradients grow towards the
output end, which is why the paper's post-norm model needs a learning-rate warmup; with pre-norm
they are about the same in every layer.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import torch

from model.config import TransformerConfig
from model.loss import label_smoothed_cross_entropy
from model.tasks import get_task, make_batch
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

PLACEMENTS = ("post", "pre")
TASK = "copy"  # the batch the models read; any task shows the same shape
N_LAYERS = 6  # per stack, as in the paper
BATCH_SIZE = 16
SIZES = dict(d_model=64, n_heads=4, d_ff=256)  # the shipped models' width
SEEDS = tuple(range(5))


@dataclass(frozen=True)
class GradientNorms:
    """Per-layer gradient norms at initialisation, encoder layers first, then decoder layers.

    ``stacks[i]``/``layers[i]`` name entry i (layer 0-based); ``norms[placement]`` is (2·L,) float64:
    the L2 norm of the gradient of all that layer's parameters; ``loss[placement]`` the loss.
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


def _one_wiring(norm_first: bool, seed: int, n_layers: int, batch) -> tuple[np.ndarray, float]:
    """Run ``batch`` through a fresh model of this wiring and backpropagate the loss: its per-layer
    gradient norms and the loss."""
    model = init_model(norm_first, seed, n_layers, batch.vocab_size)
    config = model.config
    with torch.enable_grad():
        logits = model(batch.src, batch.tgt_in, need_weights=False).logits
        loss = label_smoothed_cross_entropy(logits, batch.tgt_out, 0.0, config.pad_id)
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
    """Post-norm and pre-norm models from the same seed, on the same batch: their per-layer gradient norms."""
    batch = task_batch(seed)
    norms, losses = {}, {}
    for placement in PLACEMENTS:
        norms[placement], losses[placement] = _one_wiring(placement == "pre", seed, n_layers, batch)
    stacks = ("encoder",) * n_layers + ("decoder",) * n_layers
    return GradientNorms(stacks, tuple(range(n_layers)) * 2, norms, losses, seed, n_layers)


def gradient_csv(result: GradientNorms) -> str:
    """The chart's numbers: one row per layer, one column per wiring."""
    lines = ["stack,layer," + ",".join(f"{p}_norm" for p in PLACEMENTS)]
    for i, (stack, layer) in enumerate(zip(result.stacks, result.layers)):
        lines.append(f"{stack},{layer + 1}," + ",".join(f"{result.norms[p][i]:.6g}" for p in PLACEMENTS))
    return "\n".join(lines) + "\n"
