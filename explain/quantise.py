"""int8 weights: every weight matrix of a checkpoint rounded to 8-bit integers, one scale per output row,
and what that does to the model's size, its answers, their BLEU and its attention.

**What is quantised.** Every ``nn.Linear`` weight (Q/K/V and output projections of every attention,
both feed-forward matrices, the output layer) and both embedding tables (one row per token). Biases,
LayerNorm/RMSNorm parameters and the sinusoidal table stay float32: they are a few per cent of the numbers.

**How.** Symmetric round-to-nearest, per output channel (per row of a ``(out, in)`` weight, per token of
an embedding table)::

    scale_r = max_j |w_rj| / 127,   q_rj = clamp(round(w_rj / scale_r), −127, 127)  (int8),   ŵ_rj = q_rj · scale_r

so every weight moves by at most scale_r / 2, and the row's largest weight is exact. A row of zeros
gets scale 1 (all its q are 0). Inference is **weight-only "fake quantisation"**: the int8 numbers and
their scales are what would be stored; the model then computes in float32 with ŵ, so activations
are not quantised and the arithmetic is the float model's.

**Why not torch's own tools.** ``torch.ao.quantization.quantize_dynamic(model, {nn.Linear:
per_channel_dynamic_qconfig}, dtype=torch.qint8)`` (torch 2.13, CPU, x86 engine) replaces each
``nn.Linear`` by a ``DynamicQuantizedLinear`` whose ``weight`` is a *method*, not a tensor. This model
reads its linear weights directly: ``Transformer.device`` is ``generator.weight.device``, and
cross-attention slices ``in_proj.weight`` into its query and key/value parts, so the swapped model
fails at its first forward (``AttributeError: 'function' object has no attribute 'device'``); only the
feed-forward blocks could be swapped. ``torch.ao.quantization`` also warns that it is deprecated.
So the quantisation here is the explicit per-row code above; the tests check its int8 numbers against
``torch.quantize_per_channel`` with the same scales.
"""
from __future__ import annotations

import copy
import io
import threading
import weakref
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
from torch import nn

from explain.attention import attention_maps, attention_view, greedy_answer, query_key_tokens
from explain.bleu import Sample, decode_chunk
from model.checkpoint import Checkpoint
from model.decoding import StopCheck

QMAX = 127  # symmetric int8: −127..127 (−128 is left out so that the range is symmetric)
FLOAT_BYTES = 4  # float32
MATRIX_COLUMNS = ("name", "shape", "rows", "max_error", "mean_error", "max_scale")
CHANGE_COLUMNS = ("number", "source", "reference", "before", "after")
PAIR_COLUMNS = ("query", "key", "float32", "int8", "difference")


# ------------------------------------------------------------------ one matrix


@dataclass(frozen=True)
class RowQuantised:
    """One weight matrix as int8 numbers ``q`` (rows, cols) and one float32 ``scale`` per row."""

    q: torch.Tensor
    scale: torch.Tensor

    def dequantised(self) -> torch.Tensor:
        """ŵ = q · scale, float32 (rows, cols): what the quantised model computes with."""
        return self.q.to(torch.float32) * self.scale[:, None]


def quantise_rows(weight: torch.Tensor) -> RowQuantised:
    """``weight`` (rows, cols) quantised per row: scale = max|w_row| / 127, q = clamp(round(w / scale), ±127).

    ``torch.round`` rounds halves to even, as ``torch.quantize_per_channel`` does.
    """
    w = weight.detach().to(torch.float32)
    if w.dim() != 2:
        raise ValueError(f"A weight matrix has 2 dimensions, got shape {tuple(w.shape)}.")
    top = w.abs().amax(dim=1)
    scale = torch.where(top > 0, top / QMAX, torch.ones_like(top))
    q = torch.clamp(torch.round(w / scale[:, None]), -QMAX, QMAX).to(torch.int8)
    return RowQuantised(q, scale)


# ------------------------------------------------------------------ a whole model


def quantised_names(model: nn.Module) -> tuple[str, ...]:
    """The parameter names quantised: every ``nn.Linear`` weight and every ``nn.Embedding`` table, in model order."""
    return tuple(f"{name}.weight" if name else "weight" for name, module in model.named_modules()
                 if isinstance(module, (nn.Linear, nn.Embedding)))


def quantise_model(model: nn.Module) -> dict[str, RowQuantised]:
    """Each of :func:`quantised_names`' weights, quantised per row."""
    params = dict(model.named_parameters())
    return {name: quantise_rows(params[name]) for name in quantised_names(model)}


def int8_state_dict(model: nn.Module, quantised: dict[str, RowQuantised]) -> dict[str, torch.Tensor]:
    """What would be stored: each quantised weight as int8 plus ``<name>.scale`` (float32), every other
    parameter (biases, norms) as float32."""
    state: dict[str, torch.Tensor] = {}
    for name, param in model.named_parameters():
        if name in quantised:
            state[name] = quantised[name].q
            state[f"{name}.scale"] = quantised[name].scale
        else:
            state[name] = param.detach().to(torch.float32)
    return state


def serialised_bytes(state: dict[str, torch.Tensor]) -> int:
    """The size of ``torch.save(state)``, written into memory."""
    buffer = io.BytesIO()
    torch.save({name: tensor.detach().cpu().contiguous() for name, tensor in state.items()}, buffer)
    return buffer.getbuffer().nbytes


@torch.no_grad()
def fake_quantised(model: nn.Module, quantised: dict[str, RowQuantised]) -> nn.Module:
    """A copy of ``model`` whose quantised weights are replaced by ŵ = q · scale (float32): weight-only
    fake quantisation. ``model`` is not changed (the shipped models are shared by every session)."""
    twin = copy.deepcopy(model)
    params = dict(twin.named_parameters())
    for name, item in quantised.items():
        params[name].copy_(item.dequantised().to(params[name].device, params[name].dtype))
    return twin.eval()


_TWINS: "weakref.WeakKeyDictionary[Checkpoint, Checkpoint]" = weakref.WeakKeyDictionary()
_TWINS_LOCK = threading.Lock()


def quantised_checkpoint(checkpoint: Checkpoint) -> Checkpoint:
    """``checkpoint`` with its model's weights through int8 (:func:`fake_quantised`), built once per
    checkpoint and kept as long as the checkpoint lives (the answers and maps from it are cached by the page)."""
    with _TWINS_LOCK:
        twin = _TWINS.get(checkpoint)
        if twin is None:
            model = fake_quantised(checkpoint.model, quantise_model(checkpoint.model))
            twin = _TWINS[checkpoint] = replace(checkpoint, model=model)
        return twin


# ------------------------------------------------------------------ the size and the error


@dataclass(frozen=True)
class QuantReport:
    """The size of a model before and after, in bytes, and how far its weights moved.

    ``float_bytes``: every parameter as float32. After: ``int8_bytes`` (one byte per quantised weight)
    + ``scale_bytes`` (one float32 per row) + ``kept_bytes`` (the parameters left in float32).
    ``*_saved_bytes``: ``torch.save`` of the float32 state dict and of the int8 one (with the
    scales), so with the file format's own overhead. Errors are |w − ŵ| over the quantised weights.
    """

    params: int
    quantised_weights: int
    rows: int
    float_bytes: int
    int8_bytes: int
    scale_bytes: int
    kept_bytes: int
    float_saved_bytes: int
    int8_saved_bytes: int
    max_error: float
    mean_error: float
    max_relative_error: float  # max |w − ŵ| / scale of its row: at most 0.5 (round to nearest)
    matrices: tuple[tuple[str, tuple[int, ...], int, float, float, float], ...]  # MATRIX_COLUMNS, one per weight

    @property
    def kept_params(self) -> int:
        return self.params - self.quantised_weights

    @property
    def int8_total_bytes(self) -> int:
        return self.int8_bytes + self.scale_bytes + self.kept_bytes

    @property
    def ratio(self) -> float:
        """After / before, from the tensors (about 1/4 plus the scales and the float32 rest)."""
        return self.int8_total_bytes / self.float_bytes

    @property
    def saved_ratio(self) -> float:
        return self.int8_saved_bytes / self.float_saved_bytes


@torch.no_grad()
def quantisation_report(checkpoint: Checkpoint) -> QuantReport:
    """The size before and after and the weight error of :func:`quantise_model` on ``checkpoint``'s model."""
    model = checkpoint.model
    quantised = quantise_model(model)
    params = dict(model.named_parameters())
    matrices, errors, relative = [], [], 0.0
    for name, item in quantised.items():
        error = (params[name].detach().to(torch.float32).cpu() - item.dequantised().cpu()).abs()
        errors.append(error.flatten())
        relative = max(relative, float((error / item.scale.cpu()[:, None]).max()))
        matrices.append((name, tuple(item.q.shape), int(item.q.size(0)), float(error.max()), float(error.mean()),
                         float(item.scale.max())))
    every = torch.cat(errors) if errors else torch.zeros(0)
    n_params = sum(p.numel() for p in params.values())
    n_quantised = sum(item.q.numel() for item in quantised.values())
    rows = sum(item.scale.numel() for item in quantised.values())
    float_state = {name: p.detach().to(torch.float32) for name, p in params.items()}
    return QuantReport(
        params=n_params, quantised_weights=n_quantised, rows=rows, float_bytes=FLOAT_BYTES * n_params,
        int8_bytes=n_quantised, scale_bytes=FLOAT_BYTES * rows, kept_bytes=FLOAT_BYTES * (n_params - n_quantised),
        float_saved_bytes=serialised_bytes(float_state),
        int8_saved_bytes=serialised_bytes(int8_state_dict(model, quantised)),
        max_error=float(every.max()) if every.numel() else 0.0,
        mean_error=float(every.mean()) if every.numel() else 0.0,
        max_relative_error=relative, matrices=tuple(matrices))


def matrix_table(report: QuantReport, columns: dict[str, str]) -> pd.DataFrame:
    """One row per quantised weight: name, shape, rows (= scales), max and mean |w − ŵ|, its largest scale.

    ``columns`` maps each of :data:`MATRIX_COLUMNS` to its shown header.
    """
    rows = [{"name": name, "shape": " × ".join(map(str, shape)), "rows": n_rows, "max_error": max_error,
             "mean_error": mean_error, "max_scale": max_scale}
            for name, shape, n_rows, max_error, mean_error, max_scale in report.matrices]
    return pd.DataFrame(rows, columns=list(MATRIX_COLUMNS)).rename(columns=columns)


# ------------------------------------------------------------------ the answers


def decode_chunk_int8(checkpoint: Checkpoint, seed: int, chunk: int, should_stop: StopCheck | None = None
                      ) -> tuple[Sample, ...]:
    """:func:`explain.bleu.decode_chunk` with the int8 model: the same samples, its answers."""
    return decode_chunk(quantised_checkpoint(checkpoint), seed, chunk, should_stop)


def changed_answers(before: tuple[Sample, ...], after: tuple[Sample, ...]) -> tuple[int, ...]:
    """The indices where the two models answered the same sample differently."""
    if [s.source for s in before] != [s.source for s in after]:
        raise ValueError("The two lists of answers are not of the same samples.")
    return tuple(i for i, (b, a) in enumerate(zip(before, after)) if b.output != a.output)


def change_table(before: tuple[Sample, ...], after: tuple[Sample, ...], columns: dict[str, str],
                 marks: tuple[str, str] = ("✓", "✗")) -> pd.DataFrame:
    """The samples whose answer changed: number (from 1), source, reference, and the two answers, each
    marked right (``marks[0]``) or wrong (``marks[1]``). ``columns`` maps :data:`CHANGE_COLUMNS` to headers."""

    def marked(sample: Sample) -> str:
        return f"{marks[0] if sample.exact else marks[1]} {sample.output}"

    rows = [{"number": i + 1, "source": before[i].source, "reference": before[i].reference,
             "before": marked(before[i]), "after": marked(after[i])} for i in changed_answers(before, after)]
    return pd.DataFrame(rows, columns=list(CHANGE_COLUMNS)).rename(columns=columns)


def default_sample(before: tuple[Sample, ...], after: tuple[Sample, ...]) -> int:
    """The sample the attention comparison opens on: the first whose answer changed, else the first."""
    changed = changed_answers(before, after)
    return changed[0] if changed else 0


# ------------------------------------------------------------------ one head's attention


@dataclass(frozen=True)
class AttentionPair:
    """One head's weights (T_q, T_k) for one sample, from the float32 model and the int8 one, on the same
    decoder input (the float model's answer), and the two models' own answers."""

    before: np.ndarray
    after: np.ndarray
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    answer_before: str
    answer_after: str

    @property
    def difference(self) -> np.ndarray:
        return np.abs(self.after - self.before)

    @property
    def max_difference(self) -> float:
        return float(self.difference.max()) if self.difference.size else 0.0

    @property
    def where(self) -> tuple[int, int]:
        """(query, key) of the largest difference."""
        if not self.difference.size:
            return 0, 0
        q, k = np.unravel_index(int(self.difference.argmax()), self.difference.shape)
        return int(q), int(k)

    def table(self, columns: dict[str, str]) -> pd.DataFrame:
        """One row per cell: query token, key token, the two weights and |difference|.
        ``columns`` maps each of :data:`PAIR_COLUMNS` to its shown header."""
        rows = [{"query": query, "key": key, "float32": float(self.before[i, j]), "int8": float(self.after[i, j]),
                 "difference": float(self.difference[i, j])}
                for i, query in enumerate(self.query_tokens) for j, key in enumerate(self.key_tokens)]
        return pd.DataFrame(rows, columns=list(PAIR_COLUMNS)).rename(columns=columns)


def attention_pair(checkpoint: Checkpoint, source: str, kind: str, layer: int, head: int) -> AttentionPair:
    """Head ``head`` of attention ``kind`` in ``layer`` (both 0-based) on ``source``, before and after int8.

    Both models read the float model's greedy answer as the decoder input (teacher forcing), so the two
    maps have the same rows and can be subtracted; the int8 model's own greedy answer is given beside it.
    """
    float_view = attention_view(checkpoint, source)
    twin = quantised_checkpoint(checkpoint)
    int8_view = attention_view(twin, source, float_view.answer or "")
    queries, keys = query_key_tokens(float_view, kind)
    return AttentionPair(before=attention_maps(float_view, kind)[layer, head],
                         after=attention_maps(int8_view, kind)[layer, head], query_tokens=tuple(queries),
                         key_tokens=tuple(keys), answer_before=float_view.answer or "",
                         answer_after=greedy_answer(twin, source))
