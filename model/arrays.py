"""The one place where what the model returns per layer becomes plain numpy for the pages.

The model returns attention (and, on request, Q/K/V and scores) as one tensor per layer, each
``(B, H, T_q, T_k)`` (or ``(B, H, T, d_k)``). The views want one array per sentence:
``(L, H, T_q, T_k)`` float64 on the CPU, whatever device the model ran on.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch


def layer_stack(per_layer: Sequence[torch.Tensor], row: int = 0) -> np.ndarray:
    """``per_layer``'s tensors ``(B, H, ...)`` stacked for batch row ``row``: ``(L, H, ...)`` float64."""
    return torch.stack([layer[row] for layer in per_layer]).double().cpu().numpy()


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """``tensor`` as float64 numpy on the CPU (a view's numbers, not its gradients)."""
    return tensor.detach().double().cpu().numpy()
