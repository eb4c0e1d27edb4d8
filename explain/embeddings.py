"""From token ids to the vectors the encoder reads: lookup, × √d_model, + positional encoding.

Every step uses the checkpoint's real weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explain.text import typed_list
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


# ------------------------------------------------------------------ a lookup is a product with a one-hot matrix

LOOKUP_ROWS, LOOKUP_DIM, LOOKUP_SEED = 5, 3, 42  # nn.Embedding(5, 3) after torch.manual_seed(42)
LOOKUP_IDS_DEFAULT = "0, 2, 4"
LOOKUP_IDS_MAX = 6


@dataclass(frozen=True)
class LookupIsProduct:
    """``E[ids]`` (what ``nn.Embedding`` does) and ``one_hot(ids) @ E``, for a small table E.

    ``one_hot`` is (n, V), ``weight`` (V, d), ``lookup`` and ``product`` (n, d); ``difference`` is the
    largest |lookup − product| (0: every product term but one is a multiplication by 0)."""
    ids: tuple[int, ...]
    weight: np.ndarray
    one_hot: np.ndarray
    lookup: np.ndarray
    product: np.ndarray

    @property
    def difference(self) -> float:
        return float(np.abs(self.lookup - self.product).max()) if self.ids else 0.0


def parse_ids(text: str, rows: int = LOOKUP_ROWS) -> tuple[tuple[int, ...] | None, str | None]:
    """Typed ids ("0, 2, 4") and the problem's code, if any: ``empty``, ``not_int``, ``out_of_range``
    (not 0 … rows − 1) or ``too_many`` (over :data:`LOOKUP_IDS_MAX`)."""
    parts = typed_list(text)
    if not parts:
        return None, "empty"
    if len(parts) > LOOKUP_IDS_MAX:
        return None, "too_many"
    if not all(p.isascii() and p.lstrip("-").isdigit() and len(p) <= 6 for p in parts):
        return None, "not_int"
    ids = tuple(int(p) for p in parts)
    if any(not 0 <= i < rows for i in ids):
        return None, "out_of_range"
    return ids, None


@torch.inference_mode()
def lookup_is_product(ids: tuple[int, ...]) -> LookupIsProduct:
    """The table ``nn.Embedding(5, 3)`` gets after ``torch.manual_seed(42)`` (drawn from a generator of its
    own, so the server's global random state is never touched), looked up and multiplied."""
    generator = torch.Generator().manual_seed(LOOKUP_SEED)
    weight = torch.empty(LOOKUP_ROWS, LOOKUP_DIM).normal_(generator=generator)  # nn.Embedding's own initialisation
    embedding = torch.nn.Embedding.from_pretrained(weight)
    index = torch.tensor(ids, dtype=torch.long)
    one_hot = torch.nn.functional.one_hot(index, LOOKUP_ROWS).to(weight.dtype)
    return LookupIsProduct(ids=tuple(ids), weight=weight.numpy().copy(), one_hot=one_hot.numpy().copy(),
                           lookup=embedding(index).numpy().copy(), product=(one_hot @ weight).numpy().copy())
