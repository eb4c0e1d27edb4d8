"""The output-and-loss page's numbers: the decoder's last vectors, the linear layer's logits, softmax
with a temperature, cross-entropy and perplexity, and label smoothing exactly as training applies it
(:func:`model.loss.label_smoothed_cross_entropy`).

:func:`output_view` takes the checkpoint first (the page calls it through :func:`ui.cache.computed`);
everything else works on the numpy arrays of the view it returns.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from explain.text import typed_list
from explain.tokens import target_tokenizer
from model.checkpoint import Checkpoint
from model.loss import label_smoothed_cross_entropy

TOP_K = 15  # tokens a distribution lists: the most likely ones, then the target if it is not among them
GREEDY_TEMPERATURE = 1e-6  # at or below this, softmax(logits / T) is the one-hot of the argmax
SEED_SOFTMAX_INPUT = (1.0, 2.0, 3.0)  # seed 004's softmax example
SEED_CE_LOGITS = ((2.0, 0.5), (0.5, 2.0))  # seed 004's cross-entropy example: two rows of two classes
SEED_CE_TARGET = (0, 1)
PAPER_EPSILON = 0.1  # the paper's label smoothing, and the shipped models'


@dataclass(frozen=True)
class OutputView:
    """One teacher-forced pass: at each position t the decoder reads ``input_tokens[:t+1]`` and should
    write ``target_tokens[t]``. Arrays are float64 and have one row per position."""

    src_tokens: list[str]
    input_tokens: list[str]  # <bos> + target: the target shifted right by one
    target_tokens: list[str]  # target + <eos>
    target_ids: list[int]
    vocab: list[str]  # the target vocabulary's token strings, by id
    pad_id: int
    hidden: np.ndarray  # (T, d_model): the decoder's last vector at each position
    logits: np.ndarray  # (T, V): model.generator(hidden)
    weight_shape: tuple[int, int]  # the generator's weight: (V, d_model)
    norm_first: bool  # pre-norm: the last vector comes out of the decoder's final normalisation
    trained_epsilon: float | None  # the label smoothing its training used, None when the checkpoint does not say

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)


@dataclass(frozen=True)
class Distribution:
    """One position's distribution as a page lists it: the ``TOP_K`` most likely tokens, most likely
    first, then the target when it is not among them (``target_rank`` says where it really stands)."""

    tokens: list[str]
    ids: list[int]
    logits: list[float]
    probs: list[float]
    target_index: int  # where the target is in the lists above
    target_rank: int  # 1 = the most likely token
    target_prob: float
    entropy: float  # nats, of the whole distribution
    top_prob: float


@dataclass(frozen=True)
class SeedCrossEntropy:
    """Seed 004's cross-entropy example computed two ways: from logits and from probabilities."""

    logits: list[list[float]]
    target: list[int]
    probs: list[list[float]]  # softmax of each row
    row_losses: list[float]  # -log p(target) of each row
    from_logits: float  # F.cross_entropy(logits, target), and the training loss with ε = 0
    training_loss: float  # model.loss.label_smoothed_cross_entropy(logits, target, ε = 0)
    from_probs: float  # NLLLoss(log(softmax(logits)), target)


# ------------------------------------------------------------------ the model's pass


def trained_epsilon(checkpoint: Checkpoint) -> float | None:
    """The label smoothing ε the checkpoint's training used (its saved training config), or None."""
    history = getattr(checkpoint, "history", None)
    config = history.get("config") if isinstance(history, dict) else None
    value = config.get("label_smoothing") if isinstance(config, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1:
        return float(value)
    return None


@torch.inference_mode()
def output_view(checkpoint: Checkpoint, source: str, target: str) -> OutputView:
    """``source`` encoded, ``<bos>`` + ``target`` read by the decoder in one pass (teacher forcing):
    every position's last vector and logits, and what it should write (``target`` + ``<eos>``)."""
    model, src_tok, tgt_tok = checkpoint.model, checkpoint.tokenizer, target_tokenizer(checkpoint)
    limit = model.config.max_len
    src = src_tok.encode(source)[:limit]
    tgt = tgt_tok.encode(target)[: limit - 1]
    inputs, targets = [tgt_tok.bos_id] + tgt, tgt + [tgt_tok.eos_id]
    device = model.device
    out = model(torch.tensor([src], device=device), torch.tensor([inputs], device=device), need_weights=False)
    hidden, logits = out.decoder_state, out.logits
    vocab_size = model.config.tgt_vocab_size
    return OutputView(
        src_tokens=src_tok.token_strings(src),
        input_tokens=tgt_tok.token_strings(inputs),
        target_tokens=tgt_tok.token_strings(targets),
        target_ids=targets,
        vocab=tgt_tok.token_strings(range(vocab_size)),
        pad_id=int(model.config.pad_id),
        hidden=hidden[0].double().cpu().numpy(),
        logits=logits[0].double().cpu().numpy(),
        weight_shape=(int(model.generator.weight.shape[0]), int(model.generator.weight.shape[1])),
        norm_first=bool(model.config.norm_first),
        trained_epsilon=trained_epsilon(checkpoint),
    )


# ------------------------------------------------------------------ softmax, entropy, one position


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(logits / temperature) over the last axis; at temperature ≈ 0 all the mass on the argmax."""
    z = np.nan_to_num(np.asarray(logits, dtype=np.float64), nan=0.0, posinf=1e4, neginf=-1e4)
    if temperature <= GREEDY_TEMPERATURE:
        return (np.arange(z.shape[-1]) == z.argmax(axis=-1)[..., None]).astype(np.float64)
    scaled = z / temperature
    scaled -= scaled.max(axis=-1, keepdims=True)
    e = np.exp(scaled)
    return e / e.sum(axis=-1, keepdims=True)


def entropy(probs: np.ndarray) -> np.ndarray:
    """Entropy in nats over the last axis (0 · log 0 = 0)."""
    p = np.asarray(probs, dtype=np.float64)
    terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return np.sum(terms, axis=-1) + 0.0  # + 0.0: a sure distribution has entropy 0, not −0


def distribution(view: OutputView, position: int, temperature: float = 1.0, k: int = TOP_K) -> Distribution:
    """Position ``position``'s distribution at ``temperature``: its ``k`` most likely tokens, then the target."""
    row = view.logits[position]
    probs = softmax(row, temperature)
    order = np.lexsort((np.arange(len(row)), -row))  # most likely first; ties by id, as at every temperature
    target = view.target_ids[position]
    ids = [int(i) for i in order[:k]]
    if target not in ids:
        ids.append(target)
    return Distribution(
        tokens=[view.vocab[i] for i in ids], ids=ids, logits=[float(row[i]) for i in ids],
        probs=[float(probs[i]) for i in ids], target_index=ids.index(target),
        target_rank=int(np.flatnonzero(order == target)[0]) + 1, target_prob=float(probs[target]),
        entropy=float(entropy(probs)), top_prob=float(probs.max()),
    )


def temperature_sweep(logits: np.ndarray, target: int, temperatures: Sequence[float]) -> dict[str, np.ndarray]:
    """For each temperature: the entropy (nats), the top probability and the target's probability."""
    rows = np.stack([softmax(logits, temp) for temp in temperatures])
    return {"temperature": np.asarray(temperatures, dtype=np.float64), "entropy": entropy(rows),
            "top": rows.max(axis=-1), "target": rows[:, target]}


# ------------------------------------------------------------------ the seeds' worked numbers


def seed_softmax() -> list[float]:
    """Seed 004's example, softmax([1, 2, 3]), computed by torch."""
    return torch.tensor(SEED_SOFTMAX_INPUT).softmax(-1).tolist()


SCORES_DEFAULT = "1, 2, 3"
SCORES_MAX = 8  # numbers the "why softmax" view takes
SCORE_LIMIT = 50.0  # |score| at most this: e^50 is still a float, and the bars stay readable


@dataclass(frozen=True)
class SoftmaxVsRatio:
    """Scores x, shifted by a constant c, made into a distribution two ways: softmax and the plain ratio.

    ``ratio`` is (x_i + c) / Σ_j (x_j + c), None where that sum is 0 (a division by zero); ``ratio_at_0``
    is the same at c = 0. ``softmax`` is softmax(x + c), which equals softmax(x): e^c cancels."""
    scores: tuple[float, ...]
    shift: float
    softmax: tuple[float, ...]
    ratio: tuple[float, ...] | None
    ratio_at_0: tuple[float, ...] | None

    @property
    def negative(self) -> tuple[int, ...]:
        """The positions where the ratio gives a negative "probability"."""
        return tuple(i for i, r in enumerate(self.ratio or ()) if r < 0)

    def table(self) -> pd.DataFrame:
        """What the chart shows, for its CSV."""
        blank = [float("nan")] * len(self.scores)
        return pd.DataFrame({"x": self.scores, "x + c": [x + self.shift for x in self.scores],
                             "softmax(x + c)": self.softmax, "(x + c) / sum(x + c)": self.ratio or blank})


def parse_scores(text: str) -> tuple[tuple[float, ...] | None, str | None]:
    """Typed scores ("1, 2, 3"; commas, spaces or semicolons between) and the problem's code, if any:
    ``empty``, ``not_number`` (also NaN and ∞), ``too_many`` (over :data:`SCORES_MAX`), ``too_large``."""
    parts = typed_list(text)
    if not parts:
        return None, "empty"
    if len(parts) > SCORES_MAX:
        return None, "too_many"
    try:
        values = tuple(float(p.replace("−", "-")) for p in parts)
    except ValueError:
        return None, "not_number"
    if not all(math.isfinite(v) for v in values):
        return None, "not_number"
    if any(abs(v) > SCORE_LIMIT for v in values):
        return None, "too_large"
    return values, None


def _ratio(values: np.ndarray) -> tuple[float, ...] | None:
    total = float(values.sum())
    return None if abs(total) < 1e-12 else tuple(float(v) for v in values / total)


def softmax_vs_ratio(scores: Sequence[float], shift: float) -> SoftmaxVsRatio:
    """softmax(x + c) by torch, and the plain ratio, for the scores ``x`` and the constant ``c`` = ``shift``."""
    x = np.asarray(scores, dtype=np.float64)
    return SoftmaxVsRatio(
        scores=tuple(float(v) for v in x), shift=float(shift),
        softmax=tuple(torch.tensor(x + shift).softmax(-1).tolist()),
        ratio=_ratio(x + shift), ratio_at_0=_ratio(x))


def seed_cross_entropy() -> SeedCrossEntropy:
    """Seed 004's cross-entropy example, from logits (as training does) and from probabilities."""
    logits, target = torch.tensor(SEED_CE_LOGITS), torch.tensor(SEED_CE_TARGET)
    probs = logits.softmax(-1)
    row_losses = -probs.log().gather(1, target[:, None]).squeeze(1)
    return SeedCrossEntropy(
        logits=logits.tolist(), target=target.tolist(), probs=probs.tolist(), row_losses=row_losses.tolist(),
        from_logits=float(F.cross_entropy(logits, target)),
        training_loss=float(label_smoothed_cross_entropy(logits, target, epsilon=0.0, pad_id=None)),
        from_probs=float(F.nll_loss(probs.log(), target)),
    )


# ------------------------------------------------------------------ the loss of a sentence


def position_losses(view: OutputView, epsilon: float = 0.0) -> np.ndarray:
    """(T,) the training loss at each position (:func:`model.loss.label_smoothed_cross_entropy` of that
    position alone, with ``epsilon`` and the model's pad id); with ε = 0 it is −log p(target)."""
    logits = torch.from_numpy(view.logits)
    target = torch.tensor(view.target_ids)
    return np.array([float(label_smoothed_cross_entropy(logits[i:i + 1], target[i:i + 1], epsilon, view.pad_id))
                     for i in range(len(view.target_ids))])


def mean_loss(view: OutputView, epsilon: float = 0.0) -> float:
    """The training loss of the whole sentence: one call of the training code over every position."""
    return float(label_smoothed_cross_entropy(torch.from_numpy(view.logits), torch.tensor(view.target_ids),
                                              epsilon, view.pad_id))


def perplexity(losses: np.ndarray) -> float:
    """exp(mean cross-entropy): how many equally likely tokens the model is choosing among, on average."""
    return float(math.exp(float(np.mean(losses))))


def target_probs(view: OutputView) -> np.ndarray:
    """(T,) the probability the model gives the right token at each position (temperature 1)."""
    probs = softmax(view.logits)
    return probs[np.arange(len(view.target_ids)), view.target_ids]


def predicted_ids(view: OutputView) -> list[int]:
    """The most likely token at each position."""
    return [int(i) for i in view.logits.argmax(axis=-1)]


# ------------------------------------------------------------------ label smoothing


def spread_over(vocab_size: int, pad_id: int | None) -> int:
    """How many tokens share ε: every token but the right one and (when there is one) the padding."""
    return max(vocab_size - 1 - (pad_id is not None), 1)


def smoothed_target(vocab_size: int, target: int, epsilon: float, pad_id: int | None) -> np.ndarray:
    """(V,) the distribution training aims at: 1 − ε on ``target``, ε spread evenly over the
    :func:`spread_over` other tokens, 0 on the padding (as :func:`model.loss.label_smoothed_cross_entropy`)."""
    q = np.full(vocab_size, epsilon / spread_over(vocab_size, pad_id))
    if pad_id is not None:
        q[pad_id] = 0.0
    q[target] = 1.0 - epsilon
    return q


def smoothed_floor(vocab_size: int, epsilon: float, pad_id: int | None) -> float:
    """The lowest loss any model can reach against the smoothed target: its entropy, reached by
    predicting the smoothed target itself (0 when ε = 0: one-hot, a perfect model)."""
    q = smoothed_target(vocab_size, 0 if pad_id != 0 else 1, epsilon, pad_id)
    return float(entropy(q))


def loss_by_right_probability(p: np.ndarray, vocab_size: int, epsilon: float, pad_id: int | None) -> np.ndarray:
    """The smoothed loss of a model that gives the right token ``p`` and spreads 1 − p evenly over the
    other tokens that share ε: −(1−ε)·log p − ε·log((1−p)/n). Its minimum is at p = 1 − ε."""
    p = np.asarray(p, dtype=np.float64)
    n = spread_over(vocab_size, pad_id)
    with np.errstate(divide="ignore", invalid="ignore"):
        plain = -np.log(p)
        rest = np.where(epsilon > 0, -np.log((1.0 - p) / n), 0.0)
    return (1.0 - epsilon) * plain + epsilon * rest


@dataclass(frozen=True)
class TargetRows:
    """The targets a page lists at one position: the model's ``TOP_K`` most likely tokens, the right
    token and ``<pad>``, each with its one-hot target, smoothed target and model probability."""

    tokens: list[str]
    one_hot: list[float]
    smoothed: list[float]
    model: list[float]
    target_index: int
    shared: float  # what each token that shares ε gets: ε / (V − 2)
    n_shared: int  # how many share it


def target_rows(view: OutputView, position: int, epsilon: float, k: int = TOP_K) -> TargetRows:
    """Position ``position``'s one-hot and smoothed targets next to the model's probabilities."""
    dist = distribution(view, position, 1.0, k)
    ids = list(dist.ids)
    if view.pad_id not in ids:
        ids.append(view.pad_id)
    target = view.target_ids[position]
    q = smoothed_target(view.vocab_size, target, epsilon, view.pad_id)
    p = softmax(view.logits[position])
    n = spread_over(view.vocab_size, view.pad_id)
    return TargetRows(tokens=[view.vocab[i] for i in ids], one_hot=[float(i == target) for i in ids],
                      smoothed=[float(q[i]) for i in ids], model=[float(p[i]) for i in ids],
                      target_index=ids.index(target), shared=epsilon / n, n_shared=n)


# ------------------------------------------------------------------ tables (what the CSV downloads hold)

DISTRIBUTION_COLUMNS = ("id", "token", "logit", "probability", "target")
POSITION_COLUMNS = ("position", "reads", "should", "predicts", "p_right", "loss", "smoothed_loss")
TARGET_COLUMNS = ("id", "token", "one_hot", "smoothed", "model")


def distribution_table(view: OutputView, position: int, temperature: float, columns: dict[str, str]) -> pd.DataFrame:
    """Every token of the vocabulary at ``position``: its logit and its probability at ``temperature``.

    ``columns`` maps each of :data:`DISTRIBUTION_COLUMNS` to its shown header.
    """
    row = view.logits[position]
    probs = softmax(row, temperature)
    target = view.target_ids[position]
    frame = pd.DataFrame({"id": np.arange(len(row)), "token": view.vocab, "logit": np.round(row, 5),
                          "probability": np.round(probs, 6), "target": np.arange(len(row)) == target})
    return frame[list(DISTRIBUTION_COLUMNS)].rename(columns=columns)


def positions_table(view: OutputView, epsilon: float, columns: dict[str, str], *,
                    show: Callable[[str], str] = str) -> pd.DataFrame:
    """Position by position: what the decoder reads, should write and does write, p(right), the plain
    loss and the loss with label smoothing ``epsilon``. ``columns`` maps :data:`POSITION_COLUMNS` to headers."""
    predicted = predicted_ids(view)
    frame = pd.DataFrame({
        "position": np.arange(len(view.target_ids)),
        "reads": [show(tok) for tok in view.input_tokens],
        "should": [show(tok) for tok in view.target_tokens],
        "predicts": [show(view.vocab[i]) for i in predicted],
        "p_right": np.round(target_probs(view), 4),
        "loss": np.round(position_losses(view), 4),
        "smoothed_loss": np.round(position_losses(view, epsilon), 4),
    })
    return frame[list(POSITION_COLUMNS)].rename(columns=columns)


def targets_table(view: OutputView, position: int, epsilon: float, columns: dict[str, str]) -> pd.DataFrame:
    """Every token at ``position``: the one-hot target, the smoothed target (``epsilon``) and the model's
    probability. ``columns`` maps :data:`TARGET_COLUMNS` to headers."""
    target = view.target_ids[position]
    one_hot = np.zeros(view.vocab_size)
    one_hot[target] = 1.0
    frame = pd.DataFrame({"id": np.arange(view.vocab_size), "token": view.vocab, "one_hot": one_hot,
                          "smoothed": np.round(smoothed_target(view.vocab_size, target, epsilon, view.pad_id), 6),
                          "model": np.round(softmax(view.logits[position]), 6)})
    return frame[list(TARGET_COLUMNS)].rename(columns=columns)
