"""A typed batch as the model gets it: tokens, ids and padding of each side, as plain data.

The source (encoder input), the decoder input (``<bos>`` + target) and the labels (target +
``<eos>``) of each sentence, padded to a common width; every cell knows its kind (a character,
a special token, an unknown character, padding).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from model.tasks import DEFAULT_ALPHABET, UnknownTaskError, get_task
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, CharTokenizer

SIDES: tuple[str, ...] = ("source", "decoder_in", "labels")
KINDS: tuple[str, ...] = ("char", "special", "unk", "pad")


@dataclass(frozen=True)
class Row:
    """One padded sequence: display tokens, ids and the kind of each cell (see :data:`KINDS`)."""

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


def _kind(token_id: int) -> str:
    if token_id == PAD_ID:
        return "pad"
    if token_id in (BOS_ID, EOS_ID):
        return "special"
    return "unk" if token_id == UNK_ID else "char"


def _padded(tokenizer: CharTokenizer, sequences: list[list[int]]) -> list[Row]:
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


def sentence_batch(sentences: list[str], tokenizer: CharTokenizer, task_name: str | None) -> SentenceBatch:
    """The batch the model would get for ``sentences`` (already cleaned by ``prepare_sentences``)."""
    targets = [batch_target(task_name, s) for s in sentences]
    return SentenceBatch(
        sentences=list(sentences),
        targets=targets,
        source=_padded(tokenizer, [tokenizer.encode(s) for s in sentences]),
        decoder_in=_padded(tokenizer, [tokenizer.encode(t or "", add_bos=True) for t in targets]),
        labels=_padded(tokenizer, [tokenizer.encode(t or "", add_eos=True) for t in targets]),
    )


@functools.lru_cache(maxsize=1)
def fallback_tokenizer() -> CharTokenizer:
    """The default task alphabet's tokenizer, for showing tokens when no model is available."""
    return CharTokenizer(DEFAULT_ALPHABET)
