"""The residual stream of a checkpoint on typed text, as plain data, and what switching a residual off does.

Seed 001's view: each sublayer computes an *update* that its residual connection adds to the
token's vector. :func:`stream_view` reads, for every token and every sublayer connection, the size
of the vector entering, the size of the update and how much the update turns the vector;
:func:`switch_off` compares the answer and its probability with some residual connections
switched off (at inference, like the Attention page's head ablation).

The decoder reads a target with teacher forcing: the task's correct answer for the source when the
checkpoint's task has one, else the model's own greedy answer (:func:`decoder_target`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from explain.tasks import expected_output
from explain.tokens import source_ids, target_ids, target_tokenizer
from model.checkpoint import Checkpoint
from model.decoding import decode_bound, safe_logprobs
from model.stream import SUBLAYERS, StreamTrace, greedy_stream, trace_stream
from model.tokenizer import BOS_ID
from model.trace import Trace

STACKS = ("encoder", "decoder")
STACK_CODES = {"encoder": "enc", "decoder": "dec"}
SUBLAYER_CODES = {"self_attn": "self", "cross_attn": "cross", "ffn": "ffn"}
STACK_SUBLAYERS = {"encoder": ("self_attn", "ffn"), "decoder": SUBLAYERS}
STREAM_COLUMNS = ["stack", "layer", "sublayer", "position", "token", "x_norm", "update_norm", "ratio", "turn_cos",
                  "update_cos"]


@dataclass(frozen=True)
class DecoderTarget:
    """What the decoder reads after <bos>: ``text``, from the task (``origin`` "task") or the model ("answer")."""

    text: str
    origin: str


def greedy_ids(ckpt: Checkpoint, source: str, residual_off: Sequence[tuple[str, int, str]] = ()) -> list[int]:
    """The model's greedy answer to ``source`` as ids (<eos> included when written), residuals ``residual_off`` off."""
    src = source_ids(ckpt, source)
    if src.size(1) == 0:
        return []
    limit = ckpt.model.config.max_len
    tok = target_tokenizer(ckpt)
    out = greedy_stream(ckpt.model, src, min(decode_bound(src.size(1), limit), limit - 1),
                        residual_off=frozenset(residual_off), bos_id=tok.bos_id, eos_id=tok.eos_id)
    return out.tolist()


def decoder_target(ckpt: Checkpoint, source: str) -> DecoderTarget:
    """The task's correct answer for ``source``, else the model's own greedy answer."""
    expected = expected_output(ckpt, source)
    if expected is not None:
        return DecoderTarget(expected, "task")
    return DecoderTarget(target_tokenizer(ckpt).decode(greedy_ids(ckpt, source)), "answer")


Text = str | tuple[int, ...]  # a sentence, or ids as the model reads them (the decoder's with <bos>)


@torch.inference_mode()
def forward_trace(ckpt: Checkpoint, source: Text, target: Text, *, scale_scores: bool = True,
                  use_padding_mask: bool = True, use_look_ahead_mask: bool = True) -> Trace:
    """The model's own forward pass of ``source`` and ``target`` (teacher forcing) with every intermediate
    recorded (:mod:`model.trace` names them, e.g. ``"encoder.0.ffn.hidden"``). Each is a sentence
    (tokenised here, <bos> put before the target) or ids as the model reads them, padding included
    (cut to max_len); the switches are the forward's own."""
    model = ckpt.model
    limit = model.config.max_len

    def ids(text: Text, tokenise) -> torch.Tensor:
        if isinstance(text, str):
            return tokenise(ckpt, text)
        return torch.tensor([tuple(text)[:limit]], dtype=torch.long, device=model.device)  # (1, T)

    trace = Trace(scale_scores=scale_scores)
    model(ids(source, source_ids), ids(target, target_ids), use_padding_mask, use_look_ahead_mask, trace=trace)
    return trace


# ------------------------------------------------------------------ sizes and turns


@dataclass(frozen=True)
class StreamView:
    """Every sublayer connection of one forward pass, per token: a table of :data:`STREAM_COLUMNS`.

    ``x_norm`` = ‖x‖ of the vector entering, ``update_norm`` = ‖update‖, ``ratio`` = their quotient,
    ``turn_cos`` = cos(x, x + update) (1: the update does not turn the vector) and ``update_cos`` =
    cos(x, update) (negative: the update points against the vector). ``layer`` is 1-based.
    """

    src_tokens: list[str]
    tgt_tokens: list[str]  # <bos> + target
    target: DecoderTarget
    norm_first: bool
    rows: pd.DataFrame


def _cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise cosine of (T, d) tensors; 0 where either vector is 0 (no direction to compare)."""
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1, eps=1e-12)


def _rows(trace: StreamTrace, src_tokens: list[str], tgt_tokens: list[str]) -> list[tuple]:
    rows = []
    for s in trace.sublayers:
        x, update = s.x_in[0].double(), s.update[0].double()
        x_norm, update_norm = x.norm(dim=-1), update.norm(dim=-1)
        ratio = update_norm / x_norm.clamp_min(1e-12)
        turn, along = _cosine(x, x + update), _cosine(x, update)
        tokens = src_tokens if s.stack == "encoder" else tgt_tokens
        for i, token in enumerate(tokens):
            rows.append((s.stack, s.layer + 1, s.sublayer, i, token, float(x_norm[i]), float(update_norm[i]),
                         float(ratio[i]), float(turn[i]), float(along[i])))
    return rows


@torch.inference_mode()
def stream_view(ckpt: Checkpoint, source: str) -> StreamView:
    """Sizes and turns of the stream for ``source`` through every sublayer connection of the model."""
    target = decoder_target(ckpt, source)
    src, tgt = source_ids(ckpt, source), target_ids(ckpt, target.text)
    trace = trace_stream(ckpt.model, src, tgt)
    src_tokens = ckpt.tokenizer.token_strings(src[0].tolist())
    tgt_tokens = target_tokenizer(ckpt).token_strings(tgt[0].tolist())
    frame = pd.DataFrame(_rows(trace, src_tokens, tgt_tokens), columns=STREAM_COLUMNS)
    return StreamView(src_tokens, tgt_tokens, target, bool(ckpt.model.config.norm_first), frame)


def stream_matrix(view: StreamView, stack: str, column: str) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """(T, n) values of ``column`` for the tokens of ``stack`` (rows) through its n sublayer connections
    (columns, in order), and the (layer, sublayer) of each column."""
    part = view.rows[view.rows["stack"] == stack]
    table = part.pivot_table(index="position", columns=["layer", "sublayer"], values=column, sort=False)
    order = [(layer, sub) for layer in sorted(part["layer"].unique()) for sub in STACK_SUBLAYERS[stack]]
    return table[order].to_numpy(dtype=float), [(int(layer), sub) for layer, sub in order]


def token_path(view: StreamView, stack: str, position: int) -> pd.DataFrame:
    """The rows of one token of ``stack`` through its sublayer connections, in order."""
    part = view.rows[(view.rows["stack"] == stack) & (view.rows["position"] == position)]
    return part.reset_index(drop=True)


def stream_csv(view: StreamView) -> str:
    """Every number of the view, one line per (stack, layer, sublayer, token), rounded to 6 digits."""
    return view.rows.round(6).to_csv(index=False)


# ------------------------------------------------------------------ switching residuals off


def connection_code(stack: str, layer: int, sublayer: str) -> str:
    """``enc-1-self``: the URL's and the multiselect's name for one sublayer connection (``layer`` 1-based)."""
    return f"{STACK_CODES[stack]}-{layer}-{SUBLAYER_CODES[sublayer]}"


def parse_connection(code: str) -> tuple[str, int, str]:
    """The 0-based (stack, layer, sublayer) triple of a :func:`connection_code`."""
    stack_code, layer, sub_code = code.split("-")
    stack = {v: k for k, v in STACK_CODES.items()}[stack_code]
    sublayer = {v: k for k, v in SUBLAYER_CODES.items()}[sub_code]
    return stack, int(layer) - 1, sublayer


def all_connections(n_layers: int) -> list[str]:
    """Codes of every sublayer connection of a model: encoder layers in order, then decoder layers."""
    return [connection_code(stack, layer, sub) for stack in STACKS for layer in range(1, n_layers + 1)
            for sub in STACK_SUBLAYERS[stack]]


def off_triples(codes: Sequence[str]) -> tuple[tuple[str, int, str], ...]:
    """Sorted 0-based triples of connection codes (sorted: one cache key per set)."""
    return tuple(sorted(parse_connection(code) for code in codes))


@dataclass(frozen=True)
class SwitchOff:
    """The answer with every residual on against the answer with ``off`` switched off.

    ``tokens``: the all-on answer's tokens + <eos>; ``per_token_on``/``per_token_off``: the
    probability the model gives each of them (teacher forcing on the all-on answer) with everything
    on / with ``off`` off; ``p_*``: their products; ``p_own``: the probability of the answer written
    with ``off`` off.
    """

    off: tuple[tuple[str, int, str], ...]
    answer_on: str
    answer_off: str
    tokens: list[str]
    per_token_on: np.ndarray
    per_token_off: np.ndarray
    p_on: float
    p_off: float
    p_own: float


def _answer_probabilities(ckpt: Checkpoint, source: str, ids: list[int], off) -> np.ndarray:
    """Probability of each of ``ids`` (an answer + <eos>), reading <bos> + the answer (teacher forcing)."""
    if not ids:
        return np.zeros(0)
    max_len = ckpt.model.config.max_len
    decoder_in = torch.tensor([([BOS_ID] + ids[:-1])[:max_len]], device=ckpt.model.device)
    trace = trace_stream(ckpt.model, source_ids(ckpt, source), decoder_in, residual_off=frozenset(off))
    probs = safe_logprobs(trace.logits[0]).exp()  # (T, V)
    return np.array([float(probs[i, t]) for i, t in enumerate(ids) if i < probs.size(0)], dtype=float)


def _with_eos(ckpt: Checkpoint, ids: list[int]) -> list[int]:
    """``ids`` up to and including its first <eos>, adding one if the model never wrote it."""
    eos = target_tokenizer(ckpt).eos_id
    return ids[:ids.index(eos) + 1] if eos in ids else ids + [eos]


@torch.inference_mode()
def switch_off(ckpt: Checkpoint, source: str, off: tuple[tuple[str, int, str], ...]) -> SwitchOff:
    """Answers and probabilities of ``source`` with every residual on and with the ``off`` triples off."""
    tok = target_tokenizer(ckpt)
    on_ids = _with_eos(ckpt, greedy_ids(ckpt, source))
    off_ids = _with_eos(ckpt, greedy_ids(ckpt, source, off)) if off else on_ids
    per_on = _answer_probabilities(ckpt, source, on_ids, ())
    per_off = _answer_probabilities(ckpt, source, on_ids, off) if off else per_on
    own = _answer_probabilities(ckpt, source, off_ids, off) if off else per_on
    return SwitchOff(off=tuple(off), answer_on=tok.decode(on_ids), answer_off=tok.decode(off_ids),
                     tokens=tok.token_strings(on_ids), per_token_on=per_on, per_token_off=per_off,
                     p_on=float(np.prod(per_on)), p_off=float(np.prod(per_off)), p_own=float(np.prod(own)))

