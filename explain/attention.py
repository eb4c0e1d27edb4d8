"""Attention of a checkpoint on typed text, and what the attention page reads from it, as plain data.

The forward passes (:func:`attention_view`, :func:`greedy_answer`) take a checkpoint and never
change it: the shipped models are shared read-only by every session. Everything else is pure
numpy/pandas on their results: one kind's maps and tokens, statistics of the weights, the heads to
switch off, answer probabilities and CSV exports. Attention arrays are ``(L, H, T_q, T_k)``:
layers, heads, query positions, key positions; every row of a map is a softmax over the keys and
sums to 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from explain.tokens import source_ids, target_ids, target_tokenizer
from model.arrays import layer_stack, to_numpy
from model.checkpoint import Checkpoint
from model.decoding import Pick, decode_bound, decode_loop, safe_logprobs
from model.tokenizer import BOS_ID, EOS_ID
from model.trace import Trace
from model.transformer import ATTENTION_KINDS, EncoderOutput, ForwardOptions


KINDS = ATTENTION_KINDS  # encoder self-attention, decoder self-attention, cross-attention
DETAILS = ("q", "k", "v", "scores", "heads", "concat", "out")
"""What ``need_details`` adds per kind, from the forward's trace (:mod:`model.trace`): q, k, v (L, H, T, d_k),
scores (L, H, T_q, T_k), heads = weights · v (L, H, T_q, d_k), concat (L, T_q, H·d_k) and out = concat W^O + b
(L, T_q, d_model)."""


def attention_name(kind: str, layer: int) -> str:
    """The trace's name of attention ``kind`` in ``layer`` (0-based), e.g. ``"decoder.1.cross_attn"``."""
    stack, sublayer = {"encoder": ("encoder", "self_attn"), "decoder": ("decoder", "self_attn"),
                       "cross": ("decoder", "cross_attn")}[kind]
    return f"{stack}.{layer}.{sublayer}"


@dataclass(frozen=True)
class AttentionView:
    """One forward pass, as plain data. Attention arrays are (L, H, T_q, T_k) float64."""

    src_tokens: list[str]
    tgt_tokens: list[str]  # decoder input: <bos> + target
    answer: str | None  # the model's greedy output for the source; None when the view was given its target
    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray
    next_token_probs: np.ndarray  # (T, V) softmax of the logits
    vocab: list[str]
    details: dict = field(default_factory=dict)  # kind -> {name: (L, ...) array} for name in DETAILS


def _greedy(ckpt: Checkpoint, src: torch.Tensor, encoded: EncoderOutput, opts: ForwardOptions) -> str:
    """The greedy answer to ``src`` (1, S) from its encoder output, by the model's one decoder loop (with its
    key/value cache): the most likely token at each step, until <eos> or ``decode_bound`` tokens."""
    limit, n_src = ckpt.model.config.max_len, src.size(1)
    if not n_src:
        return ""

    def pick(step) -> Pick:
        next_id = step.logprobs.argmax(-1)  # (1,)
        return Pick(next_id, stop=int(next_id[0]) == EOS_ID)

    start = torch.full((1, 1), BOS_ID, dtype=torch.long, device=src.device)  # (1, 1)
    out = decode_loop(ckpt.model, encoded, start, min(decode_bound(n_src, limit), limit - 1), pick,
                      opts=replace(opts, need_weights=False))  # (1, 1 + generated): the steps need no maps
    return target_tokenizer(ckpt).decode(out[0, 1:].tolist())


def _options(use_padding_mask: bool, use_look_ahead_mask: bool, use_positional_encoding: bool, scale_scores: bool,
             ablate_heads: tuple[tuple[str, int, int], ...]) -> ForwardOptions:
    """The switches of a view as forward options, with the weights on: the explicit path, which every
    view's maps come from (and the answer too, so a view and :func:`greedy_answer` always agree)."""
    return ForwardOptions(use_padding_mask=use_padding_mask, use_look_ahead_mask=use_look_ahead_mask,
                          use_positional_encoding=use_positional_encoding, scale_scores=scale_scores,
                          need_weights=True, ablate_heads=tuple(ablate_heads))


@torch.inference_mode()
def greedy_answer(
    ckpt: Checkpoint,
    source: str,
    *,
    use_padding_mask: bool = True,
    use_look_ahead_mask: bool = True,
    use_positional_encoding: bool = True,
    scale_scores: bool = True,
    ablate_heads: tuple[tuple[str, int, int], ...] = (),
) -> str:
    """The model's greedy answer to ``source`` (characters outside its alphabet become <unk>), with
    the switches of :func:`attention_view`: always the answer of ``attention_view(ckpt, source, ...)``.

    At most ``decode_bound`` tokens: the source's length plus a margin, whatever ``max_len`` says.
    The source goes through ``ckpt.tokenizer``, the answer is written by ``ckpt.target_tokenizer``.
    """
    opts = _options(use_padding_mask, use_look_ahead_mask, use_positional_encoding, scale_scores, ablate_heads)
    src = source_ids(ckpt, source)  # (1, S)
    return _greedy(ckpt, src, ckpt.model.encode(src, opts), opts) if src.size(1) else ""


@torch.inference_mode()
def attention_view(
    ckpt: Checkpoint,
    source: str,
    target: str | None = None,
    *,
    use_padding_mask: bool = True,
    use_look_ahead_mask: bool = True,
    use_positional_encoding: bool = True,
    scale_scores: bool = True,
    ablate_heads: tuple[tuple[str, int, int], ...] = (),
    need_details: bool = False,
) -> AttentionView:
    """Every attention map of one forward pass of ``source`` and ``target``.

    The source is tokenised once and the encoder runs once: its output feeds the greedy decoding
    (only when no ``target`` is given: the answer becomes the target) and the decoder's forward.
    """
    tgt_tok, model = target_tokenizer(ckpt), ckpt.model
    opts = _options(use_padding_mask, use_look_ahead_mask, use_positional_encoding, scale_scores, ablate_heads)
    trace = Trace() if need_details else None  # the details are what the forward records
    src = source_ids(ckpt, source)  # (1, S)
    encoded = model.encode(src, opts, trace)
    answer = None
    if target is None:
        answer = target = _greedy(ckpt, src, encoded, opts)
    tgt = target_ids(ckpt, target)  # (1, T): <bos> + target
    out = model.decode(tgt, encoded, opts, trace)
    details = {}
    if trace is not None:
        layers = range(model.config.n_layers)
        details = {kind: {name: layer_stack([trace[f"{attention_name(kind, i)}.{name}"] for i in layers])
                          for name in DETAILS} for kind in KINDS}
    return AttentionView(
        src_tokens=ckpt.tokenizer.token_strings(src[0].tolist()),
        tgt_tokens=tgt_tok.token_strings(tgt[0].tolist()),
        answer=answer,
        encoder=layer_stack(out.encoder_attention),
        decoder=layer_stack(out.decoder_attention),
        cross=layer_stack(out.cross_attention),
        next_token_probs=to_numpy(safe_logprobs(out.logits[0]).exp()),
        vocab=tgt_tok.token_strings(range(tgt_tok.vocab_size)),
        details=details,
    )


# ------------------------------------------------------------------ one kind of attention of a view

def attention_maps(view: AttentionView, kind: str) -> np.ndarray:
    """(L, H, T_q, T_k) weights of ``kind`` (one of :data:`KINDS`) in ``view``."""
    return {"encoder": view.encoder, "decoder": view.decoder, "cross": view.cross}[kind]


def query_key_tokens(view: AttentionView, kind: str) -> tuple[list[str], list[str]]:
    """(query tokens, key tokens) of ``kind``: the encoder reads the source, the decoder its input,
    cross-attention the decoder's input (queries) against the source (keys)."""
    if kind == "encoder":
        return list(view.src_tokens), list(view.src_tokens)
    if kind == "decoder":
        return list(view.tgt_tokens), list(view.tgt_tokens)
    return list(view.tgt_tokens), list(view.src_tokens)


def blocked_cells(kind: str, n_queries: int, n_keys: int) -> np.ndarray | None:
    """(T_q, T_k) bool, True where the look-ahead mask hides a key (decoder only); else None."""
    if kind != "decoder":
        return None
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)


# ------------------------------------------------------------------ statistics of weights


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """(...,) entropy in bits of every row (last axis) of ``weights`` (..., T_k); 0 · log 0 counts as 0.

    A row that puts all its weight on one key has entropy 0; a uniform row over n keys has log2(n).
    """
    w = np.asarray(weights, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log2(np.where(w > 0, w, 1.0)), 0.0)
    return terms.sum(axis=-1)


def mean_peak(weights: np.ndarray) -> float:
    """The largest weight of each row of ``weights`` (T_q, T_k), averaged over the rows (1 = one key each)."""
    return float(np.asarray(weights, dtype=float).max(axis=-1).mean())


def focus(weights: np.ndarray) -> np.ndarray:
    """(...,) mean over the rows of each row's largest weight, for ``weights`` (..., T_q, T_k).

    1 when every query puts all its weight on one key, whichever key that is (a diagonal, an
    anti-diagonal, the first token); 1/T_k when every row is uniform.
    """
    w = np.asarray(weights, dtype=float)
    if w.shape[-1] == 0 or w.shape[-2] == 0:
        return np.zeros(w.shape[:-2])
    return w.max(axis=-1).mean(axis=-1)


def most_focused_head(maps: np.ndarray) -> tuple[int, int]:
    """(layer, head), 1-based, of the head of ``maps`` (L, H, T_q, T_k) with the highest :func:`focus`
    (the first such head on a tie; weights that are not numbers count as 0)."""
    scores = focus(np.nan_to_num(np.asarray(maps, dtype=float), nan=0.0, posinf=0.0, neginf=0.0))
    if scores.size == 0:
        return 1, 1
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(layer) + 1, int(head) + 1


def mean_distance(weights: np.ndarray) -> np.ndarray:
    """(..., T_q) expected |query position − key position| under each row of ``weights`` (..., T_q, T_k)."""
    w = np.asarray(weights, dtype=float)
    tq, tk = w.shape[-2:]
    distance = np.abs(np.arange(tq)[:, None] - np.arange(tk)[None, :])  # (T_q, T_k)
    return (w * distance).sum(axis=-1)


def diagonal_share(weights: np.ndarray) -> np.ndarray:
    """(...,) mean weight a query puts on the key at its own position (rows past T_k are skipped)."""
    w = np.asarray(weights, dtype=float)
    n = min(w.shape[-2], w.shape[-1])
    return np.diagonal(w[..., :n, :n], axis1=-2, axis2=-1).mean(axis=-1)


STAT_COLUMNS = ["layer", "head", "focus", "entropy", "max_entropy", "distance", "diagonal"]


def head_statistics(maps: np.ndarray) -> pd.DataFrame:
    """One row per (layer, head) of ``maps`` (L, H, T_q, T_k), 1-based, with

    ``focus`` (mean of each row's largest weight, 0..1: how sharp the head is, wherever it looks),
    ``entropy`` (mean row entropy, bits), ``max_entropy`` (log2 of the number of keys),
    ``distance`` (mean attended distance, positions) and ``diagonal`` (mean weight on the same
    position, 0..1). Weights that are not numbers (a model whose arithmetic overflowed) count as 0,
    so every statistic is a finite number.
    """
    maps = np.nan_to_num(np.asarray(maps, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    L, H, _, tk = maps.shape
    entropy = row_entropy(maps).mean(axis=-1)  # (L, H)
    distance = mean_distance(maps).mean(axis=-1)  # (L, H)
    diagonal = diagonal_share(maps)  # (L, H)
    sharp = focus(maps)  # (L, H)
    rows = [
        {"layer": layer + 1, "head": head + 1, "focus": round(float(sharp[layer, head]), 3),
         "entropy": round(float(entropy[layer, head]), 3),
         "max_entropy": round(math.log2(tk), 3) if tk else 0.0,
         "distance": round(float(distance[layer, head]), 3), "diagonal": round(float(diagonal[layer, head]), 3)}
        for layer in range(L) for head in range(H)
    ]
    return pd.DataFrame(rows, columns=STAT_COLUMNS)


# ------------------------------------------------------------------ switching heads off

KIND_CODES: dict[str, str] = {"encoder": "enc", "decoder": "dec", "cross": "cross"}  # short, for URLs
KIND_OF_CODE: dict[str, str] = {code: kind for kind, code in KIND_CODES.items()}


@dataclass(frozen=True)
class HeadId:
    """One attention head: ``kind`` in :data:`KINDS`, ``layer`` and ``head`` 1-based (as shown)."""

    kind: str
    layer: int
    head: int

    @property
    def code(self) -> str:
        """``enc-1-2``: the form used in the URL and as a widget option."""
        return f"{KIND_CODES[self.kind]}-{self.layer}-{self.head}"

    @classmethod
    def parse(cls, code: str) -> "HeadId":
        kind, layer, head = code.split("-")
        return cls(KIND_OF_CODE[kind], int(layer), int(head))

    def as_ablation(self) -> tuple[str, int, int]:
        """The 0-based triple that ``attention_view(..., ablate_heads=)`` wants."""
        return (self.kind, self.layer - 1, self.head - 1)


def all_heads(n_layers: int, n_heads: int) -> list[str]:
    """Codes of every head of a model, encoder first, then decoder, then cross-attention."""
    return [HeadId(kind, layer, head).code for kind in KINDS
            for layer in range(1, n_layers + 1) for head in range(1, n_heads + 1)]


def ablation_triples(codes: Sequence[str]) -> tuple[tuple[str, int, int], ...]:
    """Sorted 0-based ablation triples of head codes (sorted: one cache key per set of heads)."""
    return tuple(sorted(HeadId.parse(code).as_ablation() for code in codes))


def answer_ids(tokenizer, answer: str) -> list[int]:
    """Token ids of ``answer`` followed by <eos>: what the decoder must predict to write it.

    ``tokenizer`` is the target side's (``ckpt.target_tokenizer``).
    """
    return list(tokenizer.encode(answer)) + [tokenizer.eos_id]


def sequence_probability(view: AttentionView, ids: Sequence[int]) -> tuple[float, np.ndarray]:
    """(product, per-position probabilities (len(ids),)) the model gives ``ids`` (target + <eos>) in ``view``.

    ``view`` must have been computed with that target as the decoder input (``<bos>`` + target),
    so position i's prediction is read from the true prefix (teacher forcing).
    """
    probs = view.next_token_probs  # (T, V)
    per_token = np.array([probs[i, t] for i, t in enumerate(ids) if i < len(probs)], dtype=float)
    return float(np.prod(per_token)) if per_token.size else 0.0, per_token


WHY_SCALE_COLUMNS = ["d_k", "var_raw", "var_scaled", "peak_raw", "peak_scaled"]


def why_scale(d_ks: Sequence[int] = (4, 16, 64, 256), keys: int = 10, rows: int = 2_000, seed: int = 0) -> pd.DataFrame:
    """Why the paper divides by √d_k, with the vectors of an untrained model: q and k with independent entries of
    mean 0 and variance 1. Per d_k: the variance of q·k over ``rows`` × ``keys`` pairs (d_k: a sum of d_k products
    of variance 1), the variance after the division (1), and the mean largest softmax weight of a row of ``keys``
    scores either way (near 1: a saturated softmax, whose gradient is almost 0)."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for d_k in d_ks:
        q = torch.randn(rows, 1, d_k, generator=generator, dtype=torch.float64)
        k = torch.randn(rows, keys, d_k, generator=generator, dtype=torch.float64)
        raw = (q * k).sum(-1)  # (rows, keys)
        scaled = raw / math.sqrt(d_k)
        out.append({"d_k": d_k, "var_raw": float(raw.var()), "var_scaled": float(scaled.var()),
                    "peak_raw": float(raw.softmax(-1).max(-1).values.mean()),
                    "peak_scaled": float(scaled.softmax(-1).max(-1).values.mean())})
    return pd.DataFrame(out, columns=WHY_SCALE_COLUMNS)


def format_probability(p: float, *, sign: bool = False) -> str:
    """``0.276`` for ordinary probabilities, three significant digits in plain decimals for the tiny ones
    of long or unlikely answers (``0.000000310``: a class does not read ``3.10e-07``)."""
    decimals = 3
    if p != 0 and abs(p) < 0.001:
        decimals = 2 - math.floor(math.log10(abs(p)))
    return f"{p:+.{decimals}f}" if sign else f"{p:.{decimals}f}"


# ------------------------------------------------------------------ CSV export

LONG_COLUMNS = ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight"]


def attention_csv(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str]) -> str:
    """(T_q, T_k) weights as CSV: one row per query, one column per key, labelled ``position:token``.

    The position prefix keeps repeated tokens apart and stops a spreadsheet from reading a token
    such as ``=`` as the start of a formula.
    """
    frame = pd.DataFrame(
        np.round(np.asarray(weights, dtype=float), 6),
        index=[f"{i}:{tok}" for i, tok in enumerate(query_tokens)],
        columns=[f"{j}:{tok}" for j, tok in enumerate(key_tokens)],
    )
    frame.index.name = "query\\key"
    return frame.to_csv()


def _long_rows(maps: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], heads: Sequence[int],
               layer: int) -> list[tuple]:
    """Rows of :data:`LONG_COLUMNS` for ``heads`` (1-based) of one layer's ``maps`` (H, T_q, T_k)."""
    return [(layer, head, i, query_tokens[i], j, key_tokens[j], round(float(maps[head - 1, i, j]), 6))
            for head in heads for i in range(maps.shape[1]) for j in range(maps.shape[2])]


def long_attention_csv(maps: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str],
                       heads: Sequence[int], layer: int) -> str:
    """Weights of ``heads`` (1-based) of one layer, ``maps`` (H, T_q, T_k), one line per (head, query, key)."""
    return pd.DataFrame(_long_rows(maps, query_tokens, key_tokens, heads, layer),
                        columns=LONG_COLUMNS).to_csv(index=False)


def every_head_csv(maps: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str]) -> str:
    """Weights of every head of every layer, ``maps`` (L, H, T_q, T_k), in the long format of
    :func:`long_attention_csv` (one line per layer, head, query and key)."""
    heads = range(1, maps.shape[1] + 1)
    rows = [row for layer in range(1, maps.shape[0] + 1)
            for row in _long_rows(maps[layer - 1], query_tokens, key_tokens, heads, layer)]
    return pd.DataFrame(rows, columns=LONG_COLUMNS).to_csv(index=False)
