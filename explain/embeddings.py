"""From token ids to the vectors the encoder reads: lookup, × √d_model, + positional encoding.

Every step uses the checkpoint's real weights.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from explain.text import typed_list, unit_of
from explain.tokens import target_tokenizer
from model.arrays import to_numpy
from model.checkpoint import Checkpoint
from model.tokenizer import Tokenizer


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


# ------------------------------------------------------------------ what an embedding means: cosine, neighbours, PCA

TABLE_SIDES: tuple[str, ...] = ("source", "target")  # the encoder's table (src_embed), the decoder's (tgt_embed)
NEIGHBOURS_K = 8
COMPARED_MAX = 12  # the most rows compared in one similarity heatmap (each cell still holds its number)
# The defaults, where a table has them. The Chinese side reads characters, so 苹果 (apple) is two rows: 苹 and 果.
PREFERRED_WORDS: tuple[str, ...] = ("cat", "dog", "apple", "猫", "狗", "苹", "果")
PREFERRED_WORD: tuple[str, ...] = ("dog", "狗")  # the picker's: en-zh's dog has one clear neighbour, dogs
DEFAULT_COUNT = 3  # without any preferred word: the table's first few ordinary tokens


@dataclass(frozen=True)
class EmbeddingTable:
    """One side's embedding table as the model holds it: ``vectors`` (n, d) float64, row k being token
    ``tokens[k]`` (id ``ids[k]``). The special tokens are left out unless asked for; ``unit`` is
    "word" or "char", what one row stands for."""

    side: str
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    vectors: np.ndarray
    unit: str


def table_tokenizer(ckpt: Checkpoint, side: str) -> Tokenizer:
    """The tokenizer whose tokens name the rows of ``side``'s table: the source's or the target's."""
    if side not in TABLE_SIDES:
        raise ValueError(f"side must be one of {TABLE_SIDES}, got {side!r}")
    return ckpt.tokenizer if side == "source" else target_tokenizer(ckpt)


def embedding_table(ckpt: Checkpoint, side: str, specials: bool = False) -> EmbeddingTable:
    """The encoder's table (``side="source"``) or the decoder's (``"target"``), raw: not × √d_model, which
    scales every row alike and changes neither a cosine nor the PCA's shares."""
    tokenizer = table_tokenizer(ckpt, side)
    embed = ckpt.model.src_embed if side == "source" else ckpt.model.tgt_embed
    matrix = to_numpy(embed.lookup.weight)
    names = tokenizer.token_strings(range(matrix.shape[0]))
    special = {tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id}
    ids = tuple(i for i in range(matrix.shape[0]) if specials or i not in special)
    return EmbeddingTable(side=side, tokens=tuple(names[i] for i in ids), ids=ids, vectors=matrix[list(ids)],
                          unit=unit_of(tokenizer))


def cosine_matrix(a: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """cos(a_i, b_j) = a_i · b_j / (|a_i| |b_j|) for every row pair (``b`` defaults to ``a``): the angle
    between two vectors, whatever their lengths. A zero row has no direction: its cosines are 0."""
    b = a if b is None else b

    def unit(x: torch.Tensor) -> torch.Tensor:
        norm = x.norm(dim=1, keepdim=True)
        return torch.where(norm > 0, x / norm.clamp_min(torch.finfo(x.dtype).tiny), torch.zeros_like(x))

    return (unit(a) @ unit(b).T).clamp(-1.0, 1.0)


def nearest(vectors: torch.Tensor, index: int, k: int) -> tuple[list[int], list[float]]:
    """The ``k`` rows of ``vectors`` most similar to row ``index`` by cosine, itself left out: their row
    numbers and cosines, most similar first (equal cosines in row order, so the answer is one)."""
    cosines = cosine_matrix(vectors[index:index + 1], vectors)[0]
    order = sorted((j for j in range(vectors.shape[0]) if j != index), key=lambda j: (-float(cosines[j]), j))[:k]
    return order, [float(cosines[j]) for j in order]


@dataclass(frozen=True)
class Pca2d:
    """A table's rows on its two principal axes: ``points`` (n, 2); ``shares`` the part of the centred
    table's total variance along each axis (at most 1 together)."""

    points: np.ndarray
    shares: tuple[float, float]


def pca_2d(vectors: torch.Tensor) -> Pca2d:
    """PCA by SVD of the centred table X = U S Vᵀ: the points are X V[:, :2] = U[:, :2] S[:2] and an axis's
    share is s² / Σ s². Each axis's sign is chosen so that its largest loading is positive (an SVD may
    return either), so the picture is the same on every run and every machine."""
    x = vectors.double()
    centred = x - x.mean(dim=0, keepdim=True)
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)
    axes = vh[:2]
    signs = torch.sign(axes.gather(1, axes.abs().argmax(dim=1, keepdim=True)))
    axes = axes * torch.where(signs == 0, torch.ones_like(signs), signs)
    points = torch.zeros(x.shape[0], 2, dtype=x.dtype)
    points[:, :axes.shape[0]] = centred @ axes.T
    total = float((s ** 2).sum())
    shares = [float(v) / total if total > 0 else 0.0 for v in (s[:2] ** 2)] + [0.0, 0.0]
    return Pca2d(points=points.numpy().copy(), shares=(shares[0], shares[1]))


def random_cosine_spread(d: int) -> float:
    """1/√d: the typical size of the cosine of two random directions in d dimensions (its mean is 0)."""
    return 1.0 / float(np.sqrt(d))


RANDOM_SEED = 0  # the random table every trained one is compared with


@dataclass(frozen=True)
class RandomTable:
    """What a table of random numbers of the same shape (n, d) shows, for comparison: ``nearest``, the mean
    over its rows of each row's largest cosine with another row (a trained table's neighbours no closer
    than this are no closer than chance), and ``shares``, its two PCA axes' shares of the variance."""

    nearest: float
    shares: tuple[float, float]


@functools.lru_cache(maxsize=16)  # a few shapes (each shipped table's), asked for by every neighbour view
def random_table(n: int, d: int) -> RandomTable:
    """A standard-normal (n, d) table (``nn.Embedding``'s own initialisation) drawn from a generator of its
    own at :data:`RANDOM_SEED`, so the answer is always the same and the global random state is untouched."""
    vectors = torch.empty(n, d, dtype=torch.float64).normal_(generator=torch.Generator().manual_seed(RANDOM_SEED))
    cosines = cosine_matrix(vectors).fill_diagonal_(-1.0)
    nearest = float(cosines.max(dim=1).values.mean()) if n > 1 else 0.0
    return RandomTable(nearest=nearest, shares=pca_2d(vectors).shares)


def default_word(tokens: tuple[str, ...]) -> str | None:
    """The word the picker starts on: dog (狗) where the table has it, else its first token."""
    return next((w for w in PREFERRED_WORD if w in tokens), tokens[0] if tokens else None)


def default_words(tokens: tuple[str, ...]) -> list[str]:
    """The words the heatmap starts on: the preferred ones the table has (cat, dog, apple; 猫, 狗, 苹, 果),
    or its first few tokens where it has fewer than two of them (a character task)."""
    found = [w for w in PREFERRED_WORDS if w in tokens]
    return found if len(found) >= 2 else list(tokens[:DEFAULT_COUNT])


@dataclass(frozen=True)
class Neighbours:
    """``word``'s nearest rows in its table by cosine, most similar first; ``spread`` is 1/√d_model and
    ``chance`` a random table's typical nearest cosine (:class:`RandomTable`)."""

    word: str
    tokens: tuple[str, ...]
    cosines: tuple[float, ...]
    spread: float
    chance: float


@torch.inference_mode()
def word_neighbours(ckpt: Checkpoint, side: str, word: str, specials: bool = False,
                    k: int = NEIGHBOURS_K) -> Neighbours:
    """The ``k`` tokens of ``side``'s table nearest to ``word`` (a token of that table) by cosine."""
    table = embedding_table(ckpt, side, specials)
    rows, cosines = nearest(torch.from_numpy(table.vectors), table.tokens.index(word), k)
    n, d = table.vectors.shape
    return Neighbours(word=word, tokens=tuple(table.tokens[j] for j in rows), cosines=tuple(cosines),
                      spread=random_cosine_spread(d), chance=random_table(n, d).nearest)


@torch.inference_mode()
def word_similarities(ckpt: Checkpoint, side: str, words: tuple[str, ...]) -> np.ndarray:
    """(n, n) cosines between the rows of ``words`` (tokens of ``side``'s table, specials allowed)."""
    table = embedding_table(ckpt, side, specials=True)
    rows = torch.from_numpy(table.vectors[[table.tokens.index(w) for w in words]])
    return cosine_matrix(rows).numpy().copy()


@dataclass(frozen=True)
class TablePca:
    """Every row of ``side``'s table on the table's two principal axes (:func:`pca_2d`); ``random_shares``
    are a random table's of the same shape (:class:`RandomTable`)."""

    tokens: tuple[str, ...]
    points: np.ndarray
    shares: tuple[float, float]
    d_model: int
    random_shares: tuple[float, float]

    def table(self) -> pd.DataFrame:
        """The map's points, for a CSV: one row per token."""
        return pd.DataFrame({"token": self.tokens, "pc1": self.points[:, 0], "pc2": self.points[:, 1]})


@torch.inference_mode()
def table_pca(ckpt: Checkpoint, side: str, specials: bool = False) -> TablePca:
    """The PCA map of ``side``'s table (the special tokens left out unless asked for)."""
    table = embedding_table(ckpt, side, specials)
    found = pca_2d(torch.from_numpy(table.vectors))
    n, d = table.vectors.shape
    return TablePca(tokens=table.tokens, points=found.points, shares=found.shares, d_model=d,
                    random_shares=random_table(n, d).shares)
