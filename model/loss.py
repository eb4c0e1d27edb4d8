"""Cross-entropy with label smoothing that ignores padding."""
from __future__ import annotations

import torch
from torch.nn import functional as F


def label_smoothed_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, epsilon: float = 0.1, pad_id: int | None = 0
) -> torch.Tensor:
    """Mean loss over the non-padding target positions.

    logits: (..., V), target: (...). The true class gets 1 - epsilon; epsilon is spread evenly over
    the other classes, the padding class excluded (it is never a right answer). With epsilon = 0
    this is plain cross-entropy. Positions whose target is ``pad_id`` do not count.
    """
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"Label smoothing epsilon must be in [0, 1), got {epsilon}.")
    V = logits.size(-1)
    log_probs = F.log_softmax(logits.reshape(-1, V).float(), dim=-1)  # (N, V)
    target = target.reshape(-1)  # (N,)
    nll = -log_probs.gather(1, target[:, None]).squeeze(1)  # (N,)
    if epsilon > 0:
        others = V - 1 - (pad_id is not None)
        spread = -log_probs.sum(dim=-1) + log_probs.gather(1, target[:, None]).squeeze(1)
        if pad_id is not None:
            spread = spread + log_probs[:, pad_id]
        loss = (1 - epsilon) * nll + epsilon / max(others, 1) * spread
    else:
        loss = nll
    if pad_id is None:
        return loss.mean()
    keep = target != pad_id
    return (loss * keep).sum() / keep.sum().clamp(min=1)
