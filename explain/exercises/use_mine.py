""""Use mine": a learner's attention function inside a shipped model, beside the model's own.

:func:`attention_in_model` is trusted project code. In the server it runs with ``attention=None`` (the
model's own function); in the sandbox (``sandbox.runner.run(..., entry=ENTRY)``) the worker calls it
with the learner's function, which the model's forward then calls for every attention through the
trace's ``replace`` (model/trace.py). Only shipped checkpoints are read (``assets/checkpoints``, bound
read-only inside the sandbox), by a name checked here.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from explain.tokens import source_ids, target_ids
from model.checkpoint import load_checkpoint
from model.trace import Trace

CHECKPOINTS = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"
ENTRY = "explain.exercises.use_mine:attention_in_model"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,40}")


def _two(attention: Callable) -> Callable:
    """The learner's (output, weights[, more]) as the model's replaceable attention returns them."""
    def call(q, k, v, mask):
        result = attention(q, k, v, mask)
        if not isinstance(result, (tuple, list)) or len(result) < 2:
            raise TypeError("scaled_dot_product_attention must return (output, weights).")
        return result[0], result[1]
    return call


@torch.inference_mode()
def attention_in_model(attention: Callable | None, model: str, source: str, target: str,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One teacher-forced forward of shipped ``model`` on ``source`` / ``target`` with ``attention``
    computing every attention (None: the model's own). Returns (encoder self-attention (L, H, S, S),
    cross-attention (L, H, T, S), the predicted next token id at each target position (T,))."""
    if not _NAME.fullmatch(model):
        raise ValueError(f"Not a shipped model's name: {model!r}.")
    ckpt = load_checkpoint((CHECKPOINTS / f"{model}.pt").read_bytes(), map_location="cpu")  # no temp file: none is writable in the sandbox
    trace = Trace(replace={"attention": _two(attention)} if attention is not None else {})
    out = ckpt.model(source_ids(ckpt, source), target_ids(ckpt, target), trace=trace)
    layers = range(ckpt.model.config.n_layers)
    encoder = torch.stack([trace[f"encoder.{i}.self_attn.weights"][0] for i in layers])  # (L, H, S, S)
    cross = torch.stack([trace[f"decoder.{i}.cross_attn.weights"][0] for i in layers])  # (L, H, T, S)
    return (encoder.float().numpy(), cross.float().numpy(), out.logits[0].argmax(-1).numpy())
