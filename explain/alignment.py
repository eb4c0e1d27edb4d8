"""How well each cross-attention head follows the correct word alignment of a sentence pair.

The gold alignment says which source tokens each target token translates. For the translation
tasks it comes from the grammar that wrote the data (:func:`model.translation.alignment_of`: the
sentence is read back into the grammar, so a typed sentence has one whenever the grammar can write
it); copying aligns output j with source j, reversing with source n−1−j, sorting with every source
position that holds the same character. The dates task has none.

Cross-attention's row j (decoder input ``<bos>`` + target[:j]) is the step that *writes* target
token j, so the gold cells of row j are the source positions target[j] translates; the last row
writes ``<eos>`` and has none. A head's **alignment score** is the weight its rows put on their gold
cells, averaged over the rows that have any: 1 when all of every such row's weight is on the right
source tokens, ``|gold_j| / S`` per row for a head that spreads its weight evenly.

:func:`alignment_score` and :func:`head_alignment_scores` take plain arrays, so a training probe can
call them on any (T, S) or (L, H, T, S) cross-attention with a :func:`gold_cells` matrix.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from explain.attention import attention_view
from explain.tasks import task_of
from model.checkpoint import Checkpoint
from model.translation import alignment_of

ALIGNED_TASKS: tuple[str, ...] = ("copy", "reverse", "sort", "en-zh", "zh-en")  # the tasks with a gold alignment
SCORE_COLUMNS = ["layer", "head", "score"]


@dataclass(frozen=True)
class GoldAlignment:
    """The correct alignment of one pair: ``links[j]`` = the source positions that ``target[j]`` translates.

    Tokens are the task's own (characters, English words, Chinese characters), without ``<bos>``/``<eos>``;
    ``target_text`` is the correct output as the task writes it.
    """

    source: tuple[str, ...]
    target: tuple[str, ...]
    links: tuple[tuple[int, ...], ...]
    target_text: str


def task_alignment(task: str, source: str) -> GoldAlignment | None:
    """The gold alignment of ``source`` and its correct output for ``task`` (copy, reverse, sort, en-zh,
    zh-en); None for another task, an empty source, or a sentence the translation grammar cannot write."""
    if not isinstance(source, str) or not source:
        return None
    if task in ("en-zh", "zh-en"):
        found = alignment_of(source, task)
        if found is None:
            return None
        text = "".join(found.target) if task == "en-zh" else " ".join(found.target)
        return GoldAlignment(found.source, found.target, found.links, text)
    chars, n = tuple(source), len(source)
    if task == "copy":
        target, links = chars, tuple((j,) for j in range(n))
    elif task == "reverse":
        target, links = chars[::-1], tuple((n - 1 - j,) for j in range(n))
    elif task == "sort":
        target = tuple(sorted(chars))
        links = tuple(tuple(i for i, ch in enumerate(chars) if ch == out) for out in target)
    else:
        return None
    return GoldAlignment(chars, target, links, "".join(target))


def gold_cells(links: Sequence[Sequence[int]], n_rows: int, n_cols: int) -> np.ndarray:
    """(n_rows, n_cols) bool: True where cross-attention row j should look, row j writing target token j.

    Rows past ``len(links)`` (the one that writes ``<eos>``) and positions past ``n_cols`` stay False.
    """
    cells = np.zeros((n_rows, n_cols), dtype=bool)
    for row, positions in enumerate(links[:n_rows]):
        cells[row, [p for p in positions if 0 <= p < n_cols]] = True
    return cells


def alignment_score(weights: np.ndarray, gold: np.ndarray) -> float | np.ndarray:
    """The weight on the gold cells, averaged over the rows that have any gold cell.

    ``weights``: (..., T, S) attention (rows sum to 1); ``gold``: (T, S) bool (:func:`gold_cells`).
    A float for one (T, S) map, else an array of the leading shape (e.g. (L, H)). 1.0 for a map that
    puts all of each such row's weight on its gold cells (the row-normalised alignment itself); NaN
    where no row has a gold cell. Weights that are not numbers count as 0.
    """
    w = np.nan_to_num(np.asarray(weights, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    gold = np.asarray(gold, dtype=bool)
    rows = gold.any(axis=-1)  # (T,)
    if not rows.any():
        score = np.full(w.shape[:-2], np.nan)
    else:
        score = (w * gold).sum(axis=-1)[..., rows].mean(axis=-1)
    return float(score) if np.ndim(score) == 0 else score


def uniform_score(gold: np.ndarray) -> float:
    """The score of a head that spreads every row evenly over the S source tokens (the level of chance)."""
    gold = np.asarray(gold, dtype=bool)
    return alignment_score(np.full(gold.shape, 1.0 / max(gold.shape[-1], 1)), gold)


def head_alignment_scores(maps: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """(L, H) :func:`alignment_score` of every head of ``maps`` (L, H, T, S)."""
    return np.asarray(alignment_score(maps, gold), dtype=float).reshape(np.shape(maps)[:2])


def best_heads(scores: np.ndarray, count: int = 3) -> list[tuple[int, int, float]]:
    """The ``count`` best-aligned heads of ``scores`` (L, H) as (layer, head, score), 1-based, best first
    (on a tie, the earlier layer and head)."""
    scores = np.nan_to_num(np.asarray(scores, dtype=float), nan=-1.0)
    order = np.argsort(-scores, axis=None, kind="stable")[:count]
    return [(int(i) // scores.shape[1] + 1, int(i) % scores.shape[1] + 1, float(scores.flat[i])) for i in order]


def score_frame(scores: np.ndarray) -> pd.DataFrame:
    """One row per head: layer, head (1-based) and its alignment score (rounded to 4 places)."""
    L, H = np.shape(scores)
    return pd.DataFrame([(layer + 1, head + 1, round(float(scores[layer, head]), 4))
                         for layer in range(L) for head in range(H)], columns=SCORE_COLUMNS)


@dataclass(frozen=True)
class HeadAlignment:
    """Every cross-attention head of a model scored against the gold alignment of one source sentence.

    The maps are those of the correct output (teacher forcing), so the rows are the gold target's
    steps even where the model's own answer differs.
    """

    gold: GoldAlignment
    cells: np.ndarray  # (T, S) bool: T = len(gold.target) + 1 decoder rows, S source tokens
    scores: np.ndarray  # (L, H)
    chance: float  # the score of an evenly spread head
    best: list[tuple[int, int, float]]


def head_alignment(ckpt: Checkpoint, source: str) -> HeadAlignment | None:
    """The gold alignment of ``source`` for the checkpoint's task and every cross-attention head's score;
    None where there is none (another task, a sentence the grammar cannot write, a sentence cut by the
    model's positions)."""
    task = task_of(ckpt)
    gold = task_alignment(task.name, source) if task is not None else None
    if gold is None:
        return None
    view = attention_view(ckpt, source, gold.target_text)
    n_rows, n_cols = view.cross.shape[-2:]
    if n_cols != len(gold.source) or n_rows != len(gold.target) + 1:
        return None
    cells = gold_cells(gold.links, n_rows, n_cols)
    if not cells.any():
        return None
    scores = head_alignment_scores(view.cross, cells)
    return HeadAlignment(gold, cells, scores, uniform_score(cells), best_heads(scores))
