"""Dropout on one sublayer's update, as the model applies it while training (the paper, §5.4).

The paper drops numbers of each sublayer's output before the residual connection adds it, and of
the embeddings plus positions. This module takes one token's update from a real forward pass (eval
mode: what the answer pages show) and runs it through the model's own ``Dropout`` in training mode
with a seeded generator: the numbers it zeroes, the 1/(1−p) it multiplies the kept ones by, and the
average over many masks, which comes back to the update itself (inverted dropout keeps the
expected value, so eval mode needs no rescaling).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from explain.residual import decoder_target
from explain.tokens import source_ids, target_ids
from model.checkpoint import Checkpoint
from model.layers import Dropout, dropout_generator
from model.stream import trace_stream

DRAWS = 2000  # masks averaged to show the expected value
P_MAX = 0.9  # the view's highest drop probability (p must stay below 1: the rescale divides by 1 − p)
TABLE_COLUMNS = ["dimension", "eval", "kept", "train"]


@dataclass(frozen=True)
class DropoutView:
    """One update through dropout: ``update`` (eval mode, d numbers), ``kept`` (the 0/1 mask drawn),
    ``train`` (update · kept / (1 − p)), and ``average`` (the mean of :data:`DRAWS` train-mode draws)."""

    p: float
    update: np.ndarray
    kept: np.ndarray
    train: np.ndarray
    average: np.ndarray

    @property
    def dropped(self) -> int:
        return int((self.kept == 0).sum())

    @property
    def scale(self) -> float:
        return 1.0 / (1.0 - self.p)

    @property
    def average_gap(self) -> float:
        """The largest |mean of the draws − update|: near 0, the expected value kept."""
        return float(np.abs(self.average - self.update).max())

    def table(self) -> pd.DataFrame:
        return pd.DataFrame({"dimension": np.arange(len(self.update)), "eval": self.update,
                             "kept": self.kept.astype(int), "train": self.train}, columns=TABLE_COLUMNS)


def through_dropout(update: np.ndarray, p: float, seed: int, draws: int = DRAWS) -> DropoutView:
    """``update`` through dropout with probability ``p`` in training mode: ``draws`` masks drawn by the
    model's own ``Dropout`` (from a generator seeded ``seed``; the first is the one shown), each kept
    number multiplied by 1/(1 − p), and their average."""
    if not 0 <= p < 1:
        raise ValueError(f"p must be in [0, 1), got {p}")
    layer = Dropout(p).train()
    generator = torch.Generator().manual_seed(seed)
    with dropout_generator(generator), torch.no_grad():
        # Dropout of ones is keep / (1 − p): the masks themselves, whatever numbers the update holds.
        masks = (layer(torch.ones(draws, len(update), dtype=torch.float64)) * (1 - p)).round()
    y = torch.as_tensor(update, dtype=torch.float64)
    outs = y * masks / (1 - p)
    return DropoutView(p=p, update=y.numpy().copy(), kept=masks[0].numpy(), train=outs[0].numpy(),
                       average=outs.mean(dim=0).numpy())


@torch.inference_mode()
def sublayer_update(ckpt: Checkpoint, source: str, stack: str, layer: int, sublayer: str, position: int) -> np.ndarray:
    """The update that sublayer ``(stack, layer, sublayer)`` (layer 0-based) adds for token ``position``
    on ``source`` (the decoder reading the task's answer, or the model's own), in eval mode."""
    target = decoder_target(ckpt, source)
    trace = trace_stream(ckpt.model, source_ids(ckpt, source), target_ids(ckpt, target.text))
    for s in trace.sublayers:
        if (s.stack, s.layer, s.sublayer) == (stack, layer, sublayer):
            return s.update[0, position].double().cpu().numpy()
    raise KeyError((stack, layer, sublayer))
