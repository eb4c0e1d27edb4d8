"""Byte-pair encoding (Sennrich, Haddow & Birch 2016), the sub-word units the Transformer paper's WMT 2014
English–German data was cut into: learn, from a corpus, which adjacent pair of pieces to merge next (the
most frequent one), then cut any text with the first k of those merges.

Hugging Face ``tokenizers`` learns the merges and cuts the text (its ``BPE`` model, built again from the
first k learnt merges); this module picks the corpus, keeps the merges as plain tuples (they pickle into
the page cache) and measures characters, whole words and BPE on the same sentences. Words are
pre-split at spaces with a ``▁`` in front of each (``Metaspace``, as SentencePiece writes them), so a piece
never spans two words and a sentence comes back from its pieces.
"""
from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from tokenizers import Tokenizer

from model import translation
from model.bpe_tokenizer import MIN_PAIR_COUNT, UNK, WORD_START, library_bpe, metaspace, train_library_bpe

CORPORA: tuple[str, ...] = ("english", "chinese", "typed")  # the grammar's two sides, or the visitor's text
MAX_MERGES = 300
DEFAULT_MERGES = 100
TRAIN_SENTENCES, HELD_OUT_SENTENCES, SAMPLE_SEED = 2000, 500, 0
TYPED_MAX_CHARS = 2000
SENTENCE_MAX_CHARS = 120
# Sennrich et al.'s own example: word counts low 5, lower 2, newest 6, widest 3.
TYPED_DEFAULT = ("low low low low low\nlower lower\nnewest newest newest newest newest newest\n"
                 "widest widest widest")
# The visitor's sentence until typed: words the corpus never had (happiest, catfish; lowest, newer), and
# Chinese whose words BPE finds by itself (明天早上, 公园里).
DEFAULT_SENTENCES = {"english": "the happiest dogs ate the catfish .", "typed": "lowest newer",
                     "chinese": "小猫明天早上在公园里喝牛奶。"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def normalize(text: str, corpus: str) -> str:
    """``text`` as the corpus writes its sentences: English lower case with punctuation split off
    (:func:`model.translation.normalize_english`), Chinese without spaces, typed text with single spaces.
    A typed ``▁`` becomes a space (it is the word mark) and lone surrogates go (no text holds them)."""
    text = _SURROGATE.sub("", text.replace(WORD_START, " "))
    if corpus == "english":
        return translation.normalize_english(text)
    if corpus == "chinese":
        return translation.normalize_chinese(text)
    return " ".join(text.split())


def corpus_sentences(corpus: str, typed: str = "") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(training sentences, sentences measured on). The grammar's: a seeded sample of en-zh pairs
    (:data:`TRAIN_SENTENCES` to learn from, the next :data:`HELD_OUT_SENTENCES` held out), one side of
    each. Typed text: its non-empty lines, learnt from and measured on."""
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {CORPORA}, got {corpus!r}")
    if corpus == "typed":
        lines = tuple(line for line in (normalize(raw, corpus) for raw in typed[:TYPED_MAX_CHARS].splitlines())
                      if line)
        return lines, lines
    rng = random.Random(SAMPLE_SEED)
    side = 0 if corpus == "english" else 1
    sentences = tuple(translation.sample_en_zh(rng)[side] for _ in range(TRAIN_SENTENCES + HELD_OUT_SENTENCES))
    return sentences[:TRAIN_SENTENCES], sentences[TRAIN_SENTENCES:]


def train_tokenizer(sentences: Iterable[str], max_merges: int = MAX_MERGES) -> Tokenizer:
    """The library's BPE trained on ``sentences`` (in memory, offline): at most ``max_merges`` merges of
    pairs seen at least :data:`MIN_PAIR_COUNT` times, every character of the corpus in its alphabet."""
    return train_library_bpe(sentences, max_merges)


def prefix_tokenizer(alphabet: Iterable[str], merges: Iterable[tuple[str, str]]) -> Tokenizer:
    """The library's BPE that knows ``alphabet`` and applies only ``merges`` (the first k learnt); ``<unk>`` is
    id 0 (the Training page's :class:`model.bpe_tokenizer.BpeTokenizer` builds it the same way, its four
    special tokens first)."""
    return library_bpe(alphabet, merges)


@dataclass(frozen=True)
class LearntBpe:
    """What one corpus taught: the ``alphabet`` (single characters, ``▁`` among them), the ``merges`` in the
    order learnt, the whole ``words`` seen (a word vocabulary to compare with, None for Chinese: it writes
    no spaces), and, on the ``measured`` sentences, for every k = 0 … len(merges): the vocabulary size
    (``vocab_sizes[k]``, ``<unk>`` not counted) and the mean pieces per sentence (``mean_pieces[k]``)."""

    corpus: str
    alphabet: tuple[str, ...]
    merges: tuple[tuple[str, str], ...]
    words: frozenset[str] | None
    measured: tuple[str, ...]
    vocab_sizes: tuple[int, ...]
    mean_pieces: tuple[float, ...]
    unknown_chars: int  # pieces of the measured sentences that are <unk> (the same at every k)
    mean_words: float
    unknown_words: int

    @property
    def max_k(self) -> int:
        return len(self.merges)


def learn_bpe(corpus: str, typed: str = "") -> LearntBpe:
    """Train on ``corpus`` (``typed``: the visitor's text, for "typed"), and measure every prefix of the
    merges on the held-out sentences (each distinct word cut once, weighted by its count)."""
    train, measured = corpus_sentences(corpus, typed)
    model = json.loads(train_tokenizer(train).to_str())["model"]
    merges = tuple((a, b) for a, b in model["merges"])
    alphabet = tuple(token for token, _ in sorted(model["vocab"].items(), key=lambda item: item[1])
                     if len(token) == 1)
    pre = metaspace()
    counts = Counter(word for sentence in measured for word, _ in pre.pre_tokenize_str(sentence))
    n = max(1, len(measured))
    vocab, pieces, known = set(alphabet), [], set(alphabet)
    sizes = [len(vocab)]
    for k in range(len(merges) + 1):
        bpe = prefix_tokenizer(alphabet, merges[:k]).model
        pieces.append(sum(count * len(bpe.tokenize(word)) for word, count in counts.items()) / n)
        if k < len(merges):
            vocab.add("".join(merges[k]))
            sizes.append(len(vocab))
    unknown_chars = sum(count * sum(ch not in known for ch in word) for word, count in counts.items())
    words = None if corpus == "chinese" else frozenset(w for sentence in train for w in sentence.split())
    measured_words = [w for sentence in measured for w in sentence.split()]
    return LearntBpe(corpus=corpus, alphabet=alphabet, merges=merges, words=words, measured=measured,
                     vocab_sizes=tuple(sizes), mean_pieces=tuple(pieces), unknown_chars=unknown_chars,
                     mean_words=len(measured_words) / n,
                     unknown_words=0 if words is None else sum(w not in words for w in measured_words))


@dataclass(frozen=True)
class Piece:
    """One token of a cut sentence: ``token`` as the vocabulary writes it (``▁the``, ``<unk>``), ``surface``
    the text it stands for (a space for ``▁``; an unknown character itself), ``unknown`` whether it is <unk>."""

    token: str
    surface: str
    unknown: bool


def segment(learnt: LearntBpe, k: int, text: str) -> tuple[Piece, ...]:
    """``text`` (normalised) cut by the library with the first ``k`` merges (k = 0: characters)."""
    k = max(0, min(k, learnt.max_k))
    encoding = prefix_tokenizer(learnt.alphabet, learnt.merges[:k]).encode(text)
    return tuple(Piece(token, text[start:end] if token_id == 0 else token.replace(WORD_START, " "), token_id == 0)
                 for token, token_id, (start, end) in zip(encoding.tokens, encoding.ids, encoding.offsets))


def word_pieces(learnt: LearntBpe, text: str) -> tuple[Piece, ...] | None:
    """``text`` cut at spaces into the training sentences' words, a word they lack being <unk>; None
    for Chinese (no spaces: a word vocabulary would first need a word segmenter)."""
    if learnt.words is None:
        return None
    return tuple(Piece(w if w in learnt.words else UNK, " " + w, w not in learnt.words) for w in text.split())


def detokenize(pieces: Iterable[Piece]) -> str:
    """The text back from its pieces: their surfaces joined, less the space the first ``▁`` stands for."""
    joined = "".join(piece.surface for piece in pieces)
    return joined[1:] if joined.startswith(" ") else joined


@dataclass(frozen=True)
class Tokenization:
    """One way of cutting text, measured: its vocabulary size (``<unk>`` not counted), mean pieces per
    measured sentence and <unk> among them, and the visitor's sentence cut that way."""

    name: str  # "chars", "words" or "bpe"
    vocab_size: int
    mean_pieces: float
    unknown: int
    sentence: tuple[Piece, ...]

    @property
    def sentence_unknown(self) -> int:
        return sum(piece.unknown for piece in self.sentence)


def compare(learnt: LearntBpe, k: int, sentence: str) -> tuple[Tokenization, ...]:
    """Characters (BPE with no merge), whole words (where the corpus has spaces) and BPE with ``k``
    merges, on the same held-out sentences and on ``sentence`` (normalised)."""
    k = max(0, min(k, learnt.max_k))
    rows = [Tokenization("chars", learnt.vocab_sizes[0], learnt.mean_pieces[0], learnt.unknown_chars,
                         segment(learnt, 0, sentence))]
    words = word_pieces(learnt, sentence)
    if words is not None:
        rows.append(Tokenization("words", len(learnt.words), learnt.mean_words, learnt.unknown_words, words))
    rows.append(Tokenization("bpe", learnt.vocab_sizes[k], learnt.mean_pieces[k], learnt.unknown_chars,
                             segment(learnt, k, sentence)))
    return tuple(rows)
