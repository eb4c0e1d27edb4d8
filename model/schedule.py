"""The warmup learning-rate schedule of the paper (often called the Noam schedule)."""
from __future__ import annotations

import torch


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).

    Rises linearly for ``warmup`` steps, peaks at step = warmup with
    factor * d_model^-0.5 * warmup^-0.5, then decays as step^-0.5. Step 0 is treated as step 1
    (the formula is undefined there), so the first update already has a small positive rate.
    """
    if warmup < 1:
        raise ValueError(f"warmup must be at least 1 step, got {warmup}.")
    if d_model < 1:
        raise ValueError(f"d_model must be positive, got {d_model}.")
    step = max(int(step), 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def noam_scheduler(
    optimizer: torch.optim.Optimizer, d_model: int, warmup: int, factor: float = 1.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR driving ``optimizer`` (whose base lr must be 1) along noam_lr.

    LambdaLR calls the lambda with 0 before the first step, so the i-th optimizer step runs at
    noam_lr(i + 1): the schedule's step numbers start at 1, as in the paper.
    """
    for group in optimizer.param_groups:
        if group["lr"] != 1.0:
            raise ValueError("noam_scheduler multiplies the base lr, so the optimizer's lr must be 1.0.")
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: noam_lr(i + 1, d_model, warmup, factor))
