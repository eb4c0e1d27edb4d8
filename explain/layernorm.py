"""The LayerNorm page's numbers: one normalisation of the model token by token, LayerNorm vs
BatchNorm on a padded batch, and RMSNorm beside LayerNorm on one token's vector.

A *norm site* names one normalisation of the model as ``"<stack>.<layer>.<sublayer>"`` (e.g.
``"decoder.0.cross_attn"``: the norm of the decoder's first cross-attention connection), or
``"<stack>.final"`` for the norm a pre-norm stack ends with. What the norm reads (post-norm:
``x + Sublayer(x)``; pre-norm: ``x``) and what it writes come from the trace of the model's own forward
(:mod:`model.trace`), so the page shows exactly what the model computes.

The functions that take ``ckpt`` first are called through :func:`ui.cache.computed`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from explain.attention import greedy_answer
from explain.tasks import expected_output
from explain.tokens import target_tokenizer
from model.arrays import to_numpy
from model.checkpoint import Checkpoint
from model.layers import NORM_EPS, RMSNorm
from model.stream import STACKS
from model.trace import Trace

SUBLAYERS_OF = {"encoder": ("self_attn", "ffn"), "decoder": ("self_attn", "cross_attn", "ffn")}
FINAL = "final"  # the site name of a pre-norm stack's last norm
STAGES = ("input", "normalised", "output")  # what the norm reads, before γ and β, after them
STATS = ("mean", "var", "rms")


def norm_sites(n_layers: int, norm_first: bool) -> tuple[str, ...]:
    """Every norm of a model with ``n_layers`` per stack, in the order a forward pass runs them."""
    sites = []
    for stack in STACKS:
        sites += [f"{stack}.{layer}.{sub}" for layer in range(n_layers) for sub in SUBLAYERS_OF[stack]]
        if norm_first:
            sites.append(f"{stack}.{FINAL}")
    return tuple(sites)


def parse_site(site: str) -> tuple[str, int | None, str]:
    """``(stack, layer, sublayer)`` of a site; a final norm is ``(stack, None, "final")``."""
    parts = site.split(".")
    if len(parts) == 2 and parts[0] in STACKS and parts[1] == FINAL:
        return parts[0], None, FINAL
    if len(parts) == 3 and parts[0] in STACKS and parts[1].isdigit() and parts[2] in SUBLAYERS_OF[parts[0]]:
        return parts[0], int(parts[1]), parts[2]
    raise ValueError(f"Not a norm site: {site!r}.")


def _connection(model, stack: str, layer: int, sublayer: str):
    """The SublayerConnection of ``sublayer`` in layer ``layer`` of ``stack``."""
    if stack == "encoder":
        block = model.encoder_layers[layer]
        return {"self_attn": block.attn_sublayer, "ffn": block.ff_sublayer}[sublayer]
    block = model.decoder_layers[layer]
    return {"self_attn": block.self_attn_sublayer, "cross_attn": block.cross_attn_sublayer,
            "ffn": block.ff_sublayer}[sublayer]


def norm_module(model, site: str) -> torch.nn.Module:
    """The model's normalisation (nn.LayerNorm or RMSNorm) at ``site``."""
    stack, layer, sublayer = parse_site(site)
    if sublayer == FINAL:
        module = model.encoder_norm if stack == "encoder" else model.decoder_norm
        if module is None:
            raise ValueError(f"A post-norm model has no final norm ({site!r}).")
        return module
    return _connection(model, stack, layer, sublayer).norm


def norm_kind(module: torch.nn.Module) -> str:
    """"rms" for an RMSNorm, "layer" for a LayerNorm."""
    return "rms" if isinstance(module, RMSNorm) else "layer"


def normalise(x: torch.Tensor, kind: str, eps: float = NORM_EPS) -> torch.Tensor:
    """The normalisation alone, before γ and β, over the last dimension.

    LayerNorm: (x − mean) / sqrt(var + eps); RMSNorm: x / sqrt(mean(x²) + eps), what
    :class:`model.layers.RMSNorm` computes with γ = 1.
    """
    if kind == "rms":
        return F.rms_norm(x, (x.size(-1),), eps=eps)
    return F.layer_norm(x, (x.size(-1),), eps=eps)


def vector_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Mean, variance (divided by d, as LayerNorm does) and root mean square of each row of (T, d)."""
    return {"mean": values.mean(axis=-1), "var": values.var(axis=-1), "rms": np.sqrt(np.square(values).mean(axis=-1))}


@dataclass(frozen=True)
class TokenNorm:
    """One normalisation of the model applied to every token of one sentence pair.

    ``inputs`` is what the norm reads, ``normalised`` the vectors before γ and β, ``outputs`` the
    norm module's own output (= normalised · γ + β). Arrays are float64, (T, d) or (d,).
    ``beta`` is None for an RMSNorm (it has none).
    """

    site: str
    tokens: list[str]  # the side the norm works on: source tokens (encoder) or decoder input
    kind: str  # "layer" | "rms"
    norm_first: bool
    eps: float
    inputs: np.ndarray
    normalised: np.ndarray
    outputs: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray | None

    def stats(self) -> pd.DataFrame:
        """One row per token; columns ``(stage, stat)`` for stage in STAGES and stat in STATS."""
        columns = {(stage, stat): values
                   for stage, array in zip(STAGES, (self.inputs, self.normalised, self.outputs))
                   for stat, values in vector_stats(array).items()}
        return pd.DataFrame(columns, index=pd.RangeIndex(len(self.tokens)))

    @property
    def shown_stats(self) -> tuple[str, str]:
        """What says "normalised" for this kind: mean and variance (LayerNorm), mean and RMS (RMSNorm)."""
        return ("mean", "rms") if self.kind == "rms" else ("mean", "var")

    def table(self) -> pd.DataFrame:
        """The per-token numbers a page lists: :attr:`shown_stats` of each stage, rounded to 4
        decimals (no "-0"); columns ``"<stage>_<stat>"``."""
        stats = self.stats()
        return pd.DataFrame({f"{stage}_{stat}": stats[(stage, stat)].round(4) + 0.0
                             for stage in STAGES for stat in self.shown_stats})

    def csv(self) -> str:
        """Every per-token number (all stages, all stats) with the tokens, as CSV."""
        frame = self.stats()
        frame.columns = [f"{stage}_{stat}" for stage, stat in frame.columns]
        frame.insert(0, "token", self.tokens)
        frame.insert(0, "position", range(len(self.tokens)))
        return frame.to_csv(index=False, float_format="%.6g")


def sentence_pair_ids(ckpt: Checkpoint, source: str) -> tuple[list[int], list[int]]:
    """(source ids, decoder input ids) of ``source``: the decoder reads ``<bos>`` + the task's answer
    (the model's own greedy answer when the task has none), both cut to the model's positions."""
    limit = ckpt.model.config.max_len
    target_tok = target_tokenizer(ckpt)
    target = expected_output(ckpt, source)
    if target is None:
        target = greedy_answer(ckpt, source)
    return ckpt.tokenizer.encode(source)[:limit], target_tok.encode(target, add_bos=True)[:limit]


def trace_name(site: str) -> str:
    """The name the forward's trace (:mod:`model.trace`) gives the norm at ``site``, e.g.
    ``"decoder.0.cross_attn_sublayer.norm"`` or ``"encoder.final_norm"``."""
    stack, layer, sublayer = parse_site(site)
    return f"{stack}.final_norm" if sublayer == FINAL else f"{stack}.{layer}.{sublayer}_sublayer.norm"


@torch.inference_mode()
def token_norm(ckpt: Checkpoint, source: str, site: str) -> TokenNorm:
    """The norm at ``site`` on ``source``'s forward pass: its input, the normalised vectors, its output."""
    model = ckpt.model
    src_ids, tgt_ids = sentence_pair_ids(ckpt, source)
    src = torch.tensor([src_ids], device=model.device)
    tgt = torch.tensor([tgt_ids], device=model.device)
    module = norm_module(model, site)  # its γ, β and eps; what it reads and writes come from the forward's trace
    trace = Trace()
    model(src, tgt, trace=trace)
    x, y = trace[f"{trace_name(site)}.in"][0], trace[f"{trace_name(site)}.out"][0]  # (T, d) each
    kind = norm_kind(module)
    eps = float(module.eps)
    bias = getattr(module, "bias", None)
    stack = parse_site(site)[0]
    tokenizer = ckpt.tokenizer if stack == "encoder" else target_tokenizer(ckpt)
    return TokenNorm(
        site=site,
        tokens=tokenizer.token_strings(src_ids if stack == "encoder" else tgt_ids),
        kind=kind,
        norm_first=bool(model.config.norm_first),
        eps=eps,
        inputs=to_numpy(x),
        normalised=to_numpy(normalise(x, kind, eps)),
        outputs=to_numpy(y),
        gamma=to_numpy(module.weight),
        beta=to_numpy(bias) if kind == "layer" and bias is not None else None,
    )


# ------------------------------------------------------------------ RMSNorm beside LayerNorm


@dataclass(frozen=True)
class RmsVsLayer:
    """One vector x (d,) normalised both ways, before any γ or β, and the numbers each divides by.

    ``layer = (x − mean) / std`` and ``rms = x / rms_value`` (eps inside the roots);
    rms_value² = std² + mean², so the two agree when the mean is near 0.
    """

    x: np.ndarray
    layer: np.ndarray
    rms: np.ndarray
    mean: float
    std: float
    rms_value: float


def rms_vs_layer(x: np.ndarray, eps: float = NORM_EPS) -> RmsVsLayer:
    """LayerNorm's and RMSNorm's normalisation of ``x`` (d,), with PyTorch's F.layer_norm and F.rms_norm."""
    vector = torch.as_tensor(np.asarray(x, dtype=np.float64))
    stats = vector_stats(vector.numpy()[None])
    return RmsVsLayer(
        x=vector.numpy(),
        layer=normalise(vector, "layer", eps).numpy(),
        rms=normalise(vector, "rms", eps).numpy(),
        mean=float(stats["mean"][0]),
        std=float(np.sqrt(stats["var"][0])),
        rms_value=float(stats["rms"][0]),
    )


# ------------------------------------------------------------------ LayerNorm vs BatchNorm


@dataclass(frozen=True)
class BatchCompare:
    """This sentence's vectors normalised two ways, in its batch and alone. Arrays are float64.

    ``layer_norm`` / ``batch_norm`` (n, d): this sentence's n real tokens normalised per token over
    d (LayerNorm, no γ/β) and per feature over the batch (BatchNorm, no γ/β), in this batch;
    ``*_alone``: the same with the sentence as a batch of its own. ``feature_mean_all`` /
    ``feature_mean_real`` (d,): each feature's mean over every position of the batch, ``<pad>``
    included, and over the real tokens only. ``count_pads``: whether BatchNorm's statistics
    counted the ``<pad>`` positions (what a naive BatchNorm over a padded batch does).
    """

    tokens: list[str]
    layer_norm: np.ndarray
    batch_norm: np.ndarray
    layer_alone: np.ndarray
    batch_alone: np.ndarray
    feature_mean_all: np.ndarray
    feature_mean_real: np.ndarray
    positions: int  # every position of the padded batch: B × S
    pads: int  # how many of them are <pad>
    count_pads: bool

    @property
    def layer_shift(self) -> float:
        """Largest change of this sentence's LayerNorm output between alone and in the batch (0)."""
        return float(np.abs(self.layer_norm - self.layer_alone).max(initial=0.0))

    @property
    def batch_shift(self) -> float:
        """Largest change of this sentence's BatchNorm output between alone and in the batch."""
        return float(np.abs(self.batch_norm - self.batch_alone).max(initial=0.0))


def batch_norm_rows(x: torch.Tensor, real: torch.Tensor, count_pads: bool, eps: float = NORM_EPS) -> torch.Tensor:
    """(B, S, d) normalised per feature over the batch: mean and variance of each of the d features
    taken over every position (``count_pads``) or over the real ones only (``real``: (B, S) bool)."""
    B, S, d = x.shape
    rows = x.reshape(B * S, d)
    counted = rows if count_pads else rows[real.reshape(-1)]
    mean, var = counted.mean(dim=0), counted.var(dim=0, unbiased=False)
    return F.batch_norm(rows, mean, var, training=False, eps=eps).reshape(B, S, d)


def _embedded(model, id_rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The encoder's input vectors of a padded batch (B, S, d) and which positions are real (B, S)."""
    width = max(len(ids) for ids in id_rows)
    ids = torch.tensor([row + [pad_id] * (width - len(row)) for row in id_rows], device=model.device)
    lengths = torch.tensor([len(row) for row in id_rows], device=model.device)
    real = torch.arange(width, device=model.device)[None] < lengths[:, None]
    return model.embed(ids, "src").double(), real


def _sentence_norms(model, id_rows: list[list[int]], index: int, pad_id: int,
                    count_pads: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(LayerNorm, BatchNorm) of sentence ``index``'s real tokens, the batch's vectors and real mask."""
    x, real = _embedded(model, id_rows, pad_id)
    n = len(id_rows[index])
    layer = F.layer_norm(x[index, :n], (x.size(-1),), eps=NORM_EPS)
    batch = batch_norm_rows(x, real, count_pads)[index, :n]
    return layer, batch, x, real


@torch.inference_mode()
def batch_compare(ckpt: Checkpoint, sentences: tuple[str, ...], index: int, count_pads: bool) -> BatchCompare:
    """Sentence ``index`` of ``sentences`` embedded by the model (token embedding · √d_model + the
    positional table, as the encoder reads it), normalised by LayerNorm and by BatchNorm, in the
    padded batch and alone."""
    model, tokenizer = ckpt.model, ckpt.tokenizer
    limit = model.config.max_len
    id_rows = [tokenizer.encode(s)[:limit] or [tokenizer.unk_id] for s in sentences]
    pad_id = model.config.pad_id
    layer, batch, x, real = _sentence_norms(model, id_rows, index, pad_id, count_pads)
    layer_alone, batch_alone, _, _ = _sentence_norms(model, [id_rows[index]], 0, pad_id, count_pads)
    rows = x.reshape(-1, x.size(-1))
    return BatchCompare(
        tokens=tokenizer.token_strings(id_rows[index]),
        layer_norm=to_numpy(layer),
        batch_norm=to_numpy(batch),
        layer_alone=to_numpy(layer_alone),
        batch_alone=to_numpy(batch_alone),
        feature_mean_all=to_numpy(rows.mean(dim=0)),
        feature_mean_real=to_numpy(rows[real.reshape(-1)].mean(dim=0)),
        positions=int(real.numel()),
        pads=int((~real).sum()),
        count_pads=count_pads,
    )


def matrix_csv(values: np.ndarray, tokens: list[str], prefix: str = "d") -> str:
    """(n, d) values as CSV: one row per token (position, token), one column per feature."""
    frame = pd.DataFrame(values, columns=[f"{prefix}{j}" for j in range(values.shape[1])])
    frame.insert(0, "token", tokens)
    frame.insert(0, "position", range(len(tokens)))
    return frame.to_csv(index=False, float_format="%.6g")
