"""The BLEU page's numbers: a model's answers to fresh task samples, corpus BLEU beside exact match,
and one candidate worked n-gram by n-gram (seed 004's formula), as plain Python and pandas.

BLEU counts the tokens that sacrebleu's tokenizer writes, split at spaces: ``"char"`` for the
character tasks (so spaces are not tokens), ``"zh"`` for Chinese output (one token per Chinese
character), ``"13a"`` for English words. The corpus score is sacrebleu's own (through
:func:`model.bleu.corpus_bleu`); the worked sentence is counted here by hand, without smoothing,
and the tests check both against sacrebleu.

:func:`decode_chunk` takes the checkpoint first (the page calls it through
:func:`ui.cache.computed`, one chunk of :data:`CHUNK` samples at a time, so a larger N reuses the
chunks already decoded and the page can show its progress). The page decodes in turn with every
other visitor (:func:`decode_turns`): at most ``TP_HEAVY_DECODES`` (default 1) visitors' fresh samples
are decoded at once in the process, the others wait in arrival order and see their place, and a
decode whose visitor has gone stops at its next step (``should_stop``).
"""
from __future__ import annotations

import functools
import math
import os
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from sacrebleu.metrics import BLEU

from explain.tasks import task_of
from explain.turns import Turns
from model.bleu import TOKENIZE_FOR, corpus_bleu
from model.checkpoint import Checkpoint
from model.decoding import StopCheck, decode_bound, greedy_ids
from model.env import positive_int
from model.tokenizer import BOS_ID, EOS_ID
from model.transformer import ForwardOptions

MAX_ORDER = 4  # BLEU's n-grams: 1 to 4
CHUNK = 25  # samples decoded in one batch (and cached as one piece): the progress bar moves per chunk
NOISES: tuple[str, ...] = ("none", "swap", "short")  # what the page may do to the model's answers
TOKENIZATIONS: tuple[str, ...] = ("char", "13a", "zh")  # sacrebleu tokenizers the page offers
SAMPLE_COLUMNS = ("number", "source", "reference", "output", "exact", "bleu")
ORDER_COLUMNS = ("n", "matches", "total", "precision", "log_precision")
NGRAM_COLUMNS = ("ngram", "in_candidate", "in_reference", "clipped")
MINUS_INFINITY = "−∞"  # log 0, as the order table writes it
ENV_HEAVY_DECODES = "TP_HEAVY_DECODES"


# ------------------------------------------------------------------ tokenisation


def bleu_tokenize(checkpoint: Checkpoint) -> str:
    """The sacrebleu tokenizer for a checkpoint's outputs: a translation task ``xx-yy`` takes
    ``model.bleu.TOKENIZE_FOR[yy]`` (``"zh"`` for Chinese output, ``"13a"`` for English), another
    word-level target tokenizer ``"13a"``, and the character tasks ``"char"``."""
    task = str((getattr(checkpoint, "task", None) or {}).get("name", ""))
    target = getattr(checkpoint, "target_tokenizer", getattr(checkpoint, "tokenizer", None))
    language = task.rpartition("-")[2] if "-" in task else ""
    if language in TOKENIZE_FOR:
        return TOKENIZE_FOR[language]
    return "13a" if getattr(target, "unit", "char") == "word" else "char"


@functools.lru_cache(maxsize=16)
def _metric(tokenize: str, smooth_method: str = "exp") -> BLEU:
    """One sacrebleu BLEU object per tokenizer and smoothing (building one imports its tokenizer)."""
    return BLEU(tokenize=tokenize, smooth_method=smooth_method)


def bleu_tokens(text: str, tokenize: str) -> tuple[str, ...]:
    """The tokens BLEU counts in ``text``: sacrebleu's own steps (strip the end, tokenize, split at spaces)."""
    return tuple(_metric(tokenize).tokenizer(text.rstrip()).split())


# ------------------------------------------------------------------ the model's answers


@dataclass(frozen=True)
class Sample:
    """One fresh task sample and the model's greedy answer to it."""

    source: str
    reference: str
    output: str

    @property
    def exact(self) -> bool:
        return self.output == self.reference


def has_samples(checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's task can draw fresh (source, reference) pairs."""
    return task_of(checkpoint) is not None


def decode_chunk(checkpoint: Checkpoint, seed: int, chunk: int, should_stop: StopCheck | None = None
                 ) -> tuple[Sample, ...]:
    """Samples ``chunk·CHUNK`` to ``(chunk+1)·CHUNK − 1`` of the task's seeded stream
    (``random.Random(seed)``), each with the model's greedy answer, decoded as one batch.

    The stream does not depend on N, so the first 50 samples of N = 100 are those of N = 50. (A
    batch of 25 costs about half one of 50: the work is in the tensors, not in the per-step overhead.)
    ``should_stop`` is asked before each step (:class:`model.decoding.DecodingStopped` when it says True).
    """
    task = task_of(checkpoint)
    if task is None:
        return ()
    pairs = task.sample_pairs(random.Random(seed), (chunk + 1) * CHUNK)[chunk * CHUNK:]
    source_side = checkpoint.tokenizer
    target_side = getattr(checkpoint, "target_tokenizer", source_side)
    model = checkpoint.model
    src, _ = source_side.encode_batch([s for s, _ in pairs], max_len=model.config.max_len)
    limit = decode_bound(src.size(1), model.config.max_len)
    out = greedy_ids(model, src.to(model.device), limit, ForwardOptions(need_weights=False), bos_id=BOS_ID,
                     eos_id=EOS_ID, should_stop=should_stop)
    return tuple(Sample(s, r, target_side.decode(row)) for (s, r), row in zip(pairs, out.tolist()))


def heavy_decodes(environ=os.environ) -> int:
    """How many visitors' fresh samples may be decoded at once in the process: ``TP_HEAVY_DECODES``, else 1."""
    return positive_int(environ, ENV_HEAVY_DECODES, 1)


@functools.cache
def decode_turns() -> Turns:
    """The process's one line for decoding samples that are not cached yet."""
    return Turns(heavy_decodes())


def chunks_for(n: int) -> int:
    """How many chunks hold ``n`` samples."""
    return max(0, math.ceil(n / CHUNK))


def _units(text: str, tokenize: str) -> list[str]:
    """``text`` cut where the page may change it: words for ``"13a"``, else characters."""
    return text.split(" ") if tokenize == "13a" else list(text)


def _joined(units: Sequence[str], tokenize: str) -> str:
    return (" " if tokenize == "13a" else "").join(units)


def corrupt(samples: tuple[Sample, ...], noise: str, seed: int, tokenize: str) -> tuple[Sample, ...]:
    """The samples with their answers changed as ``noise`` says, reproducibly from ``seed``.

    ``"swap"``: one token of every answer becomes another token of the references (every answer
    is then wrong); ``"short"``: every answer loses its last quarter (at least one unit), so the
    candidates are shorter than the references; ``"none"``: as the model wrote them.
    """
    if noise == "none":
        return samples
    if noise not in NOISES:
        raise ValueError(f"Unknown noise {noise!r}; use one of {NOISES}.")
    pool = sorted({u for s in samples for u in _units(s.reference, tokenize) if u.strip()})
    changed = []
    for i, sample in enumerate(samples):
        units = _units(sample.output, tokenize)
        if noise == "short":
            units = units[: len(units) - max(1, len(units) // 4)]
        else:
            units = _swapped(units, pool, random.Random(f"{seed}:{i}"))
        changed.append(Sample(sample.source, sample.reference, _joined(units, tokenize)))
    return tuple(changed)


def _swapped(units: list[str], pool: Sequence[str], rng: random.Random) -> list[str]:
    """``units`` with one non-space unit replaced by a different one of ``pool`` (unchanged if impossible)."""
    places = [i for i, u in enumerate(units) if u.strip()]
    if not places:
        return units
    i = rng.choice(places)
    others = [u for u in pool if u != units[i]]
    if not others:
        return units
    return [*units[:i], rng.choice(others), *units[i + 1:]]


def default_pick(samples: Sequence[Sample]) -> int:
    """The sample the worked view opens on: the first wrong answer, else the first."""
    return next((i for i, s in enumerate(samples) if not s.exact), 0)


# ------------------------------------------------------------------ corpus BLEU


@dataclass(frozen=True)
class CorpusScore:
    """sacrebleu's corpus BLEU (0–100) with its parts, and exact match (0–1) on the same answers."""

    bleu: float
    precisions: tuple[float, ...]  # p_1..p_4 in percent
    matches: tuple[int, ...]  # clipped n-gram matches, summed over the corpus
    totals: tuple[int, ...]  # candidate n-grams, summed over the corpus
    bp: float
    hyp_len: int  # c: candidate tokens, summed
    ref_len: int  # r: reference tokens, summed
    exact_match: float
    n: int
    tokenize: str

    @property
    def ratio(self) -> float:
        """c / r, the length ratio (0 when there are no reference tokens)."""
        return self.hyp_len / self.ref_len if self.ref_len else 0.0


def corpus_score(samples: tuple[Sample, ...], tokenize: str) -> CorpusScore:
    """Corpus BLEU of the answers against the references and exact match.

    The score is :func:`model.bleu.corpus_bleu` (sacrebleu with its defaults); its parts (precisions,
    counts, BP, lengths) come from the same sacrebleu computation's ``BLEUScore``.
    """
    hyps = [s.output for s in samples]
    refs = [s.reference for s in samples]
    score = _metric(tokenize).corpus_score(hyps, [refs])
    return CorpusScore(
        bleu=corpus_bleu(hyps, refs, tokenize), precisions=tuple(float(p) for p in score.precisions),
        matches=tuple(int(c) for c in score.counts), totals=tuple(int(t) for t in score.totals),
        bp=float(score.bp), hyp_len=int(score.sys_len), ref_len=int(score.ref_len),
        exact_match=sum(s.exact for s in samples) / len(samples) if samples else 0.0, n=len(samples),
        tokenize=tokenize)


@dataclass(frozen=True)
class ScoredSamples:
    """The answers as the page shows them (after ``noise``), their corpus score and each one's own BLEU."""

    samples: tuple[Sample, ...]
    corpus: CorpusScore
    bleus: tuple[float, ...]


def score_samples(triples: tuple[tuple[str, str, str], ...], noise: str, seed: int, tokenize: str) -> ScoredSamples:
    """``(source, reference, output)`` triples, changed by :func:`corrupt` and scored (corpus and per sentence)."""
    samples = corrupt(tuple(Sample(*triple) for triple in triples), noise, seed, tokenize)
    return ScoredSamples(samples, corpus_score(samples, tokenize), sentence_bleus(samples, tokenize))


# ------------------------------------------------------------------ one sentence by hand


@dataclass(frozen=True)
class NgramCount:
    """One distinct n-gram of the candidate: how often it occurs there and in the reference, and
    Count_clip = min(count, max reference count)."""

    ngram: tuple[str, ...]
    in_candidate: int
    in_reference: int

    @property
    def clipped(self) -> int:
        return min(self.in_candidate, self.in_reference)


@dataclass(frozen=True)
class OrderCount:
    """Every n-gram of one order n: p_n = Σ Count_clip / Σ Count (0 when the candidate has none)."""

    n: int
    ngrams: tuple[NgramCount, ...]

    @property
    def matches(self) -> int:
        return sum(g.clipped for g in self.ngrams)

    @property
    def total(self) -> int:
        return sum(g.in_candidate for g in self.ngrams)

    @property
    def precision(self) -> float:
        return self.matches / self.total if self.total else 0.0


@dataclass(frozen=True)
class WorkedSentence:
    """A candidate against its reference, counted by hand: the four orders, BP and BLEU (0–100, unsmoothed)."""

    candidate: tuple[str, ...]
    reference: tuple[str, ...]
    orders: tuple[OrderCount, ...]
    tokenize: str

    @property
    def c(self) -> int:
        return len(self.candidate)

    @property
    def r(self) -> int:
        return len(self.reference)

    @property
    def bp(self) -> float:
        """BP = 1 when c ≥ r, else exp(1 − r/c) (0 for an empty candidate)."""
        if self.c >= self.r:
            return 1.0
        return math.exp(1 - self.r / self.c) if self.c else 0.0

    @property
    def missing(self) -> tuple[int, ...]:
        """The orders n whose precision is 0 (no match, or no n-gram at all): each makes BLEU 0."""
        return tuple(o.n for o in self.orders if o.matches == 0)

    @property
    def log_mean(self) -> float | None:
        """(1/4) Σ log p_n, or None when a p_n is 0 (log 0 = −∞)."""
        if self.missing:
            return None
        return sum(math.log(o.precision) for o in self.orders) / len(self.orders)

    @property
    def bleu(self) -> float:
        """BLEU = BP · exp((1/4) Σ log p_n), times 100 as sacrebleu writes it; 0 when a p_n is 0."""
        mean = self.log_mean
        return 0.0 if mean is None else 100 * self.bp * math.exp(mean)


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    """How often each n-gram (a tuple of n consecutive tokens) occurs in ``tokens``."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def work_sentence(candidate: str, reference: str, tokenize: str) -> WorkedSentence:
    """``candidate`` against ``reference``, tokenized as sacrebleu does and counted n-gram by n-gram."""
    cand, ref = bleu_tokens(candidate, tokenize), bleu_tokens(reference, tokenize)
    orders = []
    for n in range(1, MAX_ORDER + 1):
        in_ref = ngrams(ref, n)
        orders.append(OrderCount(n, tuple(NgramCount(g, k, in_ref.get(g, 0)) for g, k in ngrams(cand, n).items())))
    return WorkedSentence(cand, ref, tuple(orders), tokenize)


@dataclass(frozen=True)
class LibrarySentence:
    """sacrebleu's score of one sentence with one smoothing method (0–100; precisions in percent)."""

    bleu: float
    precisions: tuple[float, ...]
    bp: float
    smooth_method: str


def library_sentence(candidate: str, reference: str, tokenize: str, smooth_method: str) -> LibrarySentence:
    """sacrebleu's BLEU of one candidate: its corpus score of a one-line corpus, which is what
    ``sentence_score`` computes (without the warning it logs about ``effective_order``)."""
    score = _metric(tokenize, smooth_method).corpus_score([candidate], [[reference]])
    return LibrarySentence(float(score.score), tuple(float(p) for p in score.precisions), float(score.bp),
                           smooth_method)


# ------------------------------------------------------------------ tables


def order_table(worked: WorkedSentence, columns: dict[str, str]) -> pd.DataFrame:
    """One row per order n: matches (Σ Count_clip), total (Σ Count), p_n and log p_n (text: ``"−∞"`` when p_n = 0).

    ``columns`` maps each of :data:`ORDER_COLUMNS` to its shown header.
    """
    rows = [{"n": o.n, "matches": o.matches, "total": o.total, "precision": round(o.precision, 4),
             "log_precision": f"{math.log(o.precision):.4f}" if o.precision > 0 else MINUS_INFINITY}
            for o in worked.orders]
    return pd.DataFrame(rows, columns=list(ORDER_COLUMNS)).rename(columns=columns)


def ngram_table(worked: WorkedSentence, n: int, columns: dict[str, str]) -> pd.DataFrame:
    """The distinct n-grams of order ``n`` in the candidate, in order of first appearance.

    ``columns`` maps each of :data:`NGRAM_COLUMNS` to its shown header; an n-gram is written with
    its tokens separated by spaces (sacrebleu's tokens never hold one).
    """
    rows = [{"ngram": " ".join(g.ngram), "in_candidate": g.in_candidate, "in_reference": g.in_reference,
             "clipped": g.clipped} for g in worked.orders[n - 1].ngrams]
    return pd.DataFrame(rows, columns=list(NGRAM_COLUMNS)).rename(columns=columns)


def sentence_bleus(samples: tuple[Sample, ...], tokenize: str) -> tuple[float, ...]:
    """Each sample's own BLEU, worked as :func:`work_sentence` does (unsmoothed: 0 under 4 tokens)."""
    return tuple(work_sentence(s.output, s.reference, tokenize).bleu for s in samples)


def sample_table(samples: tuple[Sample, ...], bleus: Sequence[float], columns: dict[str, str]) -> pd.DataFrame:
    """One row per sample: number (from 1), source, reference, answer, exact (✓/✗), its sentence BLEU.

    ``columns`` maps each of :data:`SAMPLE_COLUMNS` to its shown header.
    """
    rows = [{"number": i + 1, "source": s.source, "reference": s.reference, "output": s.output,
             "exact": "✓" if s.exact else "✗", "bleu": round(b, 1)} for i, (s, b) in enumerate(zip(samples, bleus))]
    return pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS)).rename(columns=columns)


def telling_sample(samples: Sequence[Sample], bleus: Sequence[float]) -> tuple[int, str] | None:
    """A sample where exact match and BLEU disagree most, and how: ``"wrong_high"`` (a wrong answer
    with the highest sentence BLEU above 0) first, else ``"right_zero"`` (a right answer whose
    sentence BLEU is 0: fewer than 4 tokens). None when they agree everywhere."""
    wrong = [(b, i) for i, (s, b) in enumerate(zip(samples, bleus)) if not s.exact and b > 0]
    if wrong:
        return max(wrong, key=lambda x: (x[0], -x[1]))[1], "wrong_high"
    right_zero = next((i for i, (s, b) in enumerate(zip(samples, bleus)) if s.exact and b == 0), None)
    return (right_zero, "right_zero") if right_zero is not None else None
