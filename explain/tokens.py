"""A typed batch as the model gets it: tokens, ids and padding of each side, as plain data.

The source (encoder input), the decoder input (``<bos>`` + target) and the labels (target +
``<eos>``) of each sentence, padded to a common width; every cell knows its kind (a character,
a special token, an unknown character, padding). The tables are pandas frames of raw token
strings (a picture makes them visible and escapes them, see :mod:`figures.tokens`), with an
array naming the kind of every cell.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from model.checkpoint import Checkpoint
from model.tasks import DEFAULT_ALPHABET, UnknownTaskError, get_task
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, CharTokenizer, Tokenizer, split_words

SIDES: tuple[str, ...] = ("source", "decoder_in", "labels")
KINDS: tuple[str, ...] = ("char", "special", "unk", "pad")
SENTENCE_ROWS: tuple[str, ...] = ("chars", "source", "source_ids", "decoder_in", "decoder_in_ids", "labels",
                                  "labels_ids")


@dataclass(frozen=True)
class Row:
    """One padded sequence: display tokens, ids and the kind of each cell (see :data:`CELL_KINDS`)."""

    tokens: list[str]
    ids: list[int]
    kinds: list[str]

    @property
    def length(self) -> int:
        """Tokens before the padding."""
        return sum(kind != "pad" for kind in self.kinds)


@dataclass(frozen=True)
class SentenceBatch:
    """B sentences as three padded (B, S) / (B, T) / (B, T) batches; ``targets[b]`` None = no answer."""

    sentences: list[str]
    targets: list[str | None]
    source: list[Row]
    decoder_in: list[Row]
    labels: list[Row]

    def side(self, name: str) -> list[Row]:
        return {"source": self.source, "decoder_in": self.decoder_in, "labels": self.labels}[name]


def target_tokenizer(ckpt: Checkpoint) -> Tokenizer:
    """The tokenizer of a checkpoint's target side (its one tokenizer when it has no separate target one)."""
    return getattr(ckpt, "target_tokenizer", None) or ckpt.tokenizer


def source_ids(ckpt: Checkpoint, source: str) -> torch.Tensor:
    """(1, S) ids of ``source`` as the encoder reads it, cut to the model's positions (characters outside
    its alphabet become <unk>). The one place a page's sentence is tokenised for a forward pass."""
    ids = ckpt.tokenizer.encode(source)[:ckpt.model.config.max_len]
    return torch.tensor([ids], dtype=torch.long, device=ckpt.model.device)


def target_ids(ckpt: Checkpoint, target: str) -> torch.Tensor:
    """(1, T) decoder input ids: <bos> + ``target`` by the target side's tokenizer, cut to the model's positions."""
    ids = ([BOS_ID] + list(target_tokenizer(ckpt).encode(target)))[:ckpt.model.config.max_len]
    return torch.tensor([ids], dtype=torch.long, device=ckpt.model.device)


def _kind(token_id: int) -> str:
    if token_id == PAD_ID:
        return "pad"
    if token_id in (BOS_ID, EOS_ID):
        return "special"
    return "unk" if token_id == UNK_ID else "char"


def _padded(tokenizer: Tokenizer, sequences: list[list[int]]) -> list[Row]:
    width = max((len(s) for s in sequences), default=0)
    rows = []
    for ids in sequences:
        ids = ids + [PAD_ID] * (width - len(ids))
        rows.append(Row(tokens=tokenizer.token_strings(ids), ids=ids, kinds=[_kind(i) for i in ids]))
    return rows


def batch_target(task_name: str | None, sentence: str) -> str | None:
    """The task's correct answer to ``sentence`` (the copy task's when the task is unknown)."""
    try:
        task = get_task(task_name or "copy")
    except UnknownTaskError:
        task = get_task("copy")
    return task.target_for(sentence)


def sentence_batch(sentences: list[str], tokenizer: Tokenizer, task_name: str | None,
                   target_tokenizer: Tokenizer | None = None) -> SentenceBatch:
    """The batch the model would get for ``sentences`` (already cleaned by ``prepare_sentences``).

    The targets go through ``target_tokenizer`` (default: ``tokenizer``, as for the character tasks).
    """
    targets = [batch_target(task_name, s) for s in sentences]
    target_tokenizer = tokenizer if target_tokenizer is None else target_tokenizer
    return SentenceBatch(
        sentences=list(sentences),
        targets=targets,
        source=_padded(tokenizer, [tokenizer.encode(s) for s in sentences]),
        decoder_in=_padded(target_tokenizer, [target_tokenizer.encode(t or "", add_bos=True) for t in targets]),
        labels=_padded(target_tokenizer, [target_tokenizer.encode(t or "", add_eos=True) for t in targets]),
    )


def batch_of(ckpt: Checkpoint, sentences: tuple[str, ...]) -> SentenceBatch:
    """The batch of ``sentences`` that this model gets, through its own two tokenizers (never its
    task's: an uploaded model may name a task and bring other words, and its ids are what it reads).
    The targets are the task's answers (the copy task's for a task this app does not know)."""
    return sentence_batch(list(sentences), ckpt.tokenizer, ckpt.task.get("name"), target_tokenizer(ckpt))


def fallback_batch(sentences: tuple[str, ...]) -> SentenceBatch:
    """The batch of ``sentences`` under the default task alphabet, for showing tokens with no model."""
    return sentence_batch(list(sentences), fallback_tokenizer(), "copy")


@functools.lru_cache(maxsize=1)
def fallback_tokenizer() -> CharTokenizer:
    """The default task alphabet's tokenizer, for showing tokens when no model is available."""
    return CharTokenizer(DEFAULT_ALPHABET)


def side_frames(rows: list[Row], row_labels: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """(tokens, ids, kinds) of one side of the batch: B rows, one column per position 0..S-1."""
    width = len(rows[0].ids) if rows else 0
    columns = list(range(width))
    tokens = pd.DataFrame([r.tokens for r in rows], index=row_labels, columns=columns, dtype=object)
    ids = pd.DataFrame([r.ids for r in rows], index=row_labels, columns=columns)
    kinds = np.array([r.kinds for r in rows], dtype=object).reshape(len(rows), width)
    return tokens, ids, kinds


def sentence_frame(batch: SentenceBatch, index: int, labels: dict[str, str],
                   unit: str = "char") -> tuple[pd.DataFrame, np.ndarray]:
    """Characters (or words, for ``unit`` "word") → tokens → ids of sentence ``index``, one column per
    position, as text cells: a word model's first row holds the words as the tokenizer splits them, so word i
    stands above token i.

    ``labels`` names the rows, one for each of :data:`SENTENCE_ROWS`. Padding is left out (it is
    the batch's, not the sentence's); short rows end in empty cells. Returns the frame and the
    kinds of its cells.
    """
    sentence = split_words(batch.sentences[index]) if unit == "word" else list(batch.sentences[index])
    parts = (batch.source[index], batch.decoder_in[index], batch.labels[index])
    width = max([len(sentence)] + [row.length for row in parts])
    cells: list[list[str]] = []
    kinds: list[list[str]] = []

    def add(values: list[str], row_kinds: list[str]) -> None:
        cells.append(values + [""] * (width - len(values)))
        kinds.append(row_kinds + ["char"] * (width - len(row_kinds)))

    add(sentence, ["char"] * len(sentence))
    for row in parts:
        n = row.length
        add(row.tokens[:n], row.kinds[:n])
        add([str(i) for i in row.ids[:n]], row.kinds[:n])
    frame = pd.DataFrame(cells, index=[labels[k] for k in SENTENCE_ROWS], columns=list(range(width)), dtype=object)
    return frame, np.array(kinds, dtype=object).reshape(len(cells), width)
