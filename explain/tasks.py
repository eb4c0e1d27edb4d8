"""What a checkpoint's task says about a sentence: its example, and the answer it should give; and what reading a
translation task in BPE pieces changes (vocabulary, length, unknown words)."""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from model import translation
from model.checkpoint import Checkpoint
from model.tasks import BPE_CORPUS_PAIRS, TRANSLATION_TASKS, Task, UnknownTaskError, bpe_task, get_task
from model.tokenizer import Tokenizer

FALLBACK_EXAMPLE = "hello world"
FALLBACK_BATCH = "hello world\nattention is all you need\nhi!"
# A few sentences of different lengths for the batch boxes (tokens, masks, LayerNorm): the translation
# models read their own side's language, the character models the fallback's English.
BATCH_EXAMPLES = {
    "en-zh": ("the cat ate two apples in the garden yesterday .", "did you see the dog ?",
              "tom will buy a red car tomorrow ."),
    "zh-en": ("猫昨天在花园里吃了两个苹果。", "你看见了狗吗？", "汤姆明天会买一辆红车。"),
}


def task_of(checkpoint: Checkpoint) -> Task | None:
    """The task a checkpoint was trained on, or None when its metadata names no known task."""
    try:
        return get_task(str(checkpoint.task.get("name")))
    except (UnknownTaskError, AttributeError, KeyError, ValueError):
        return None


def task_example(checkpoint: Checkpoint) -> str:
    """The example sentence of the checkpoint's task, one it handles well."""
    task = task_of(checkpoint)
    return task.example if task is not None else FALLBACK_EXAMPLE


def task_batch_example(checkpoint: Checkpoint) -> str:
    """A few example sentences of the checkpoint's task, one a line, in the language its source side reads."""
    task = task_of(checkpoint)
    return "\n".join(BATCH_EXAMPLES[task.name]) if task is not None and task.name in BATCH_EXAMPLES else FALLBACK_BATCH


def sentence_example(checkpoint: Checkpoint, fallback: str) -> str:
    """``fallback`` for the character models; a translation model's own example (in the language it reads)."""
    task = task_of(checkpoint)
    return task.example if task is not None and task.name in BATCH_EXAMPLES else fallback


def expected_output(checkpoint: Checkpoint, source: str) -> str | None:
    """The correct output of the checkpoint's task for ``source``, or None when there is none."""
    task = task_of(checkpoint)
    return task.target_for(source) if task is not None else None


def source_end_marks(checkpoint: Checkpoint) -> tuple[str, ...]:
    """The marks every source sentence of a translation model's training data ends with ("." and "?", or
    "。" and "？"); () for a model whose sources need none (the character tasks, an unknown task)."""
    task = task_of(checkpoint)
    return _end_marks(task.name) if task is not None and task.name in TRANSLATION_TASKS else ()


@functools.cache
def _end_marks(task: str) -> tuple[str, ...]:
    sources = [source.strip() for source, _ in get_task(task).sample_pairs(random.Random(0), 400)]
    return tuple(sorted({source[-1] for source in sources}))


# ------------------------------------------------------------------ a translation task in BPE pieces
UNSEEN_WORDS = ("catfish", "happiest", "lowest")  # English words the grammar never writes: the first one shown


@dataclass(frozen=True)
class SideTokens:
    """One side of a translation task, its own tokens (English words, Chinese characters) against BPE pieces:
    the vocabulary sizes (the special tokens counted, as the model's embedding table has them) and the mean
    tokens per sentence of the training pairs the merges were learnt from."""

    language: str  # "en" or "zh"
    vocab_own: int
    vocab_bpe: int
    mean_own: float
    mean_bpe: float


@dataclass(frozen=True)
class BpeChange:
    """What reading a translation task in BPE pieces changes: each side's numbers, and an English word the
    grammar never writes with its pieces (the word tokenizer reads it as ``<unk>``)."""

    source: SideTokens
    target: SideTokens
    unseen_word: str
    unseen_pieces: tuple[str, ...]


def _side(language: str, own: Tokenizer, bpe: Tokenizer, sentences: list[str]) -> SideTokens:
    n = max(1, len(sentences))
    return SideTokens(language, own.vocab_size, bpe.vocab_size, sum(len(own.encode(s)) for s in sentences) / n,
                      sum(len(bpe.encode(s)) for s in sentences) / n)


def bpe_change(task: str, seed: int) -> BpeChange:
    """The numbers of translation task ``task`` read in the BPE pieces a run with ``seed`` learns
    (:func:`model.tasks.bpe_task`), measured on the training pairs they were learnt from."""
    words, pieces = get_task(task), bpe_task(task, seed)
    pairs = words.sample_pairs(random.Random(seed), BPE_CORPUS_PAIRS)
    source_language, target_language = task.split("-")
    english = pieces.source_tokenizer() if source_language == "en" else pieces.target_tokenizer()
    known = set(translation.ENGLISH_WORDS)
    unseen = next(word for word in UNSEEN_WORDS if word not in known)
    return BpeChange(
        source=_side(source_language, words.source_tokenizer(), pieces.source_tokenizer(), [s for s, _ in pairs]),
        target=_side(target_language, words.target_tokenizer(), pieces.target_tokenizer(), [t for _, t in pairs]),
        unseen_word=unseen, unseen_pieces=tuple(english.token_strings(english.encode(unseen))))
