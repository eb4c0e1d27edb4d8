"""From token ids to the vectors the encoder reads: lookup, × √d_model, + positional encoding.

Every step uses the checkpoint's real weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.arrays import to_numpy
from model.checkpoint import Checkpoint


@dataclass(frozen=True)
class EmbeddingStages:
    """The four steps from ids to the encoder's input, each (T, d_model) float64.

    ``total == lookup * scale + positional``, which is ``model.embed(ids, "src")`` in eval mode.
    ``position_kind`` is the model's (``model.config.POSITION_KINDS``): only a "sinusoidal" model adds
    a table here; for "rope" (positions rotate Q and K inside every attention) and "none",
    ``positional`` is all zeros, as the model adds nothing.
    ``matrix`` is the whole source embedding table (V, d_model) and ``vocab`` its row labels.
    """

    tokens: list[str]
    ids: list[int]
    scale: float
    lookup: np.ndarray
    scaled: np.ndarray
    positional: np.ndarray
    total: np.ndarray
    matrix: np.ndarray
    vocab: list[str]
    position_kind: str = "sinusoidal"


@torch.inference_mode()
def embedding_stages(ckpt: Checkpoint, ids: tuple[int, ...]) -> EmbeddingStages:
    """Look ``ids`` up in the model's real source embedding, scale, add the model's PE table."""
    model = ckpt.model
    embed = model.src_embed
    matrix = to_numpy(embed.lookup.weight)  # (V, d)
    ids = list(ids)[: model.config.max_len]
    lookup = matrix[ids]  # (T, d)
    scale = float(embed.scale)
    position_kind = getattr(model.config, "position_kind", "sinusoidal")
    positional = to_numpy(model.pe[: len(ids)])  # (T, d)
    if position_kind != "sinusoidal":  # RoPE acts inside attention; "none" has no position at all
        positional = np.zeros_like(positional)
    scaled = lookup * scale
    return EmbeddingStages(
        tokens=ckpt.tokenizer.token_strings(ids), ids=ids, scale=scale, lookup=lookup, scaled=scaled,
        positional=positional, total=scaled + positional, matrix=matrix,
        vocab=ckpt.tokenizer.token_strings(range(matrix.shape[0])), position_kind=position_kind,
    )


def rms(values: np.ndarray) -> float:
    """Root mean square: the typical size of one entry."""
    return float(np.sqrt(np.mean(np.square(values)))) if values.size else 0.0
