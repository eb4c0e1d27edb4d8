"""The position-wise feed-forward network of a checkpoint on typed text, as plain data.

FFN(x) = max(0, x W1 + b1) W2 + b2, applied to every position alone with the same weights
(the SwiGLU variant: (SiLU(x W_gate) ⊙ x V) W2). :func:`ffn_view` reads one layer's FFN for a
sentence (what it reads, the hidden activations before and after the non-linearity, what it
writes), :func:`position_wise` shows that no position sees another inside it (and that attention
does), and :func:`parameter_rows` counts how much of a layer sits in the FFN, in this model and in
the paper's base model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from explain.residual import DecoderTarget, decoder_target, forward_trace
from explain.tokens import source_ids, target_ids, target_tokenizer
from model.arrays import to_numpy
from model.checkpoint import Checkpoint
from model.trace import Trace

PAPER_D_MODEL, PAPER_D_FF, PAPER_LAYERS = 512, 2048, 6  # the paper's base model


def ffn_kind(ckpt: Checkpoint) -> str:
    """"relu" (the paper's) or "swiglu" (the gated variant), as the model's config says (old configs: relu)."""
    return getattr(ckpt.model.config, "ffn_kind", "relu")


def _layers(ckpt: Checkpoint, stack: str):
    return ckpt.model.encoder_layers if stack == "encoder" else ckpt.model.decoder_layers


@dataclass(frozen=True)
class FFNView:
    """One layer's feed-forward network on one sentence. Arrays are float64, one row per position.

    ``pre``: what the non-linearity reads (ReLU: x W1 + b1; SwiGLU: the gate x W_gate);
    ``post``: what it gives (ReLU: max(0, pre); SwiGLU: SiLU(gate)); ``hidden``: what W2 reads
    (ReLU: ``post``; SwiGLU: SiLU(gate) ⊙ x V); ``output``: FFN(x) = hidden W2 (+ b2);
    ``off_share``: per position, the share of hidden units whose ``pre`` is ≤ 0 (for ReLU exactly
    the units that are 0; for SwiGLU the gates SiLU almost closes).
    """

    stack: str
    layer: int  # 0-based
    kind: str  # "relu" | "swiglu"
    tokens: list[str]
    target: DecoderTarget
    x: np.ndarray  # (T, d_model)
    pre: np.ndarray  # (T, hidden)
    post: np.ndarray  # (T, hidden)
    hidden: np.ndarray  # (T, hidden)
    output: np.ndarray  # (T, d_model)
    off_share: np.ndarray  # (T,)


def _layer_record(ckpt: Checkpoint, source: str, stack: str, layer: int) -> tuple[dict[str, torch.Tensor],
                                                                                 DecoderTarget, Trace]:
    """(what the forward pass recorded in layer ``layer`` of ``stack``, keyed as ``"ffn.hidden"``, the decoder
    target, the whole trace): one forward of ``source`` and its decoder target, read from its trace."""
    target = decoder_target(ckpt, source)
    trace = forward_trace(ckpt, source, target.text)
    return trace.layer(stack, layer), target, trace


def stack_tokens(ckpt: Checkpoint, source: str, stack: str, target: str) -> list[str]:
    """The token strings of the positions of ``stack``: the source's, or <bos> + the target's."""
    if stack == "encoder":
        return ckpt.tokenizer.token_strings(source_ids(ckpt, source)[0].tolist())
    return target_tokenizer(ckpt).token_strings(target_ids(ckpt, target)[0].tolist())


@torch.inference_mode()
def ffn_view(ckpt: Checkpoint, source: str, stack: str, layer: int) -> FFNView:
    """The FFN of layer ``layer`` (0-based) of ``stack`` ("encoder" | "decoder") on ``source``."""
    record, target, _ = _layer_record(ckpt, source, stack, layer)
    x = record["ffn_sublayer.sublayer_in"][0]  # (T, d): what the FFN reads
    pre, hidden = record["ffn.hidden_pre"][0], record["ffn.hidden"][0]  # (T, hidden) each
    kind = ffn_kind(ckpt)
    post = F.silu(pre) if kind == "swiglu" else hidden  # ReLU's hidden is its activation; SwiGLU's is gated
    output = record["ffn.out"][0]  # (T, d)
    return FFNView(stack, layer, kind, stack_tokens(ckpt, source, stack, target.text), target, to_numpy(x),
                   to_numpy(pre), to_numpy(post), to_numpy(hidden), to_numpy(output),
                   to_numpy((pre <= 0).double().mean(dim=-1)))


def activations_csv(view: FFNView) -> str:
    """The hidden activations before and after the non-linearity, one line per (position, unit)."""
    T, H = view.pre.shape
    frame = pd.DataFrame({
        "position": np.repeat(np.arange(T), H), "token": np.repeat(np.array(view.tokens, dtype=object), H),
        "unit": np.tile(np.arange(H), T), "before": view.pre.ravel().round(6), "after": view.post.ravel().round(6),
    })
    return frame.to_csv(index=False)


def output_csv(view: FFNView) -> str:
    """FFN(x): one row per position (``position:token``), one column per dimension."""
    frame = pd.DataFrame(view.output.round(6), index=[f"{i}:{tok}" for i, tok in enumerate(view.tokens)])
    frame.index.name = "position"
    return frame.to_csv()


# ------------------------------------------------------------------ position-wise


@dataclass(frozen=True)
class PositionWise:
    """What changes when position ``copy_to``'s vector is replaced by position ``copy_from``'s.

    The FFN and the same layer's self-attention read the same vectors x (the FFN's input).
    ``ffn_change``/``attention_change``: (T,) ‖f(x') − f(x)‖ per position; ``twin_gap``: the largest
    |FFN(x')[copy_to] − FFN(x')[copy_from]| (0: the same vector gives the same output).
    """

    tokens: list[str]
    copy_from: int
    copy_to: int
    ffn_change: np.ndarray
    attention_change: np.ndarray
    twin_gap: float


@torch.inference_mode()
def position_wise(ckpt: Checkpoint, source: str, stack: str, layer: int, copy_from: int, copy_to: int) -> PositionWise:
    """Copy one position's vector into another and compare what the FFN and self-attention write, per position."""
    record, target, trace = _layer_record(ckpt, source, stack, layer)
    x = record["ffn_sublayer.sublayer_in"][0]  # (T, d)
    T = x.size(0)
    copy_from, copy_to = min(max(copy_from, 0), T - 1), min(max(copy_to, 0), T - 1)
    changed = x.clone()
    changed[copy_to] = x[copy_from]
    # What the FFN and the self-attention write for an input the forward never saw: the modules themselves,
    # on x and on the changed x, with the mask the forward used (absent from the trace when it was None).
    block = _layers(ckpt, stack)[layer]
    mask = trace.tensors.get(f"{stack}.mask")

    def attend(v: torch.Tensor) -> torch.Tensor:
        return block.self_attn(v[None], None, mask)[0][0]

    ffn_before, ffn_after = block.feed_forward(x), block.feed_forward(changed)
    att_before, att_after = attend(x), attend(changed)
    return PositionWise(
        tokens=stack_tokens(ckpt, source, stack, target.text), copy_from=copy_from, copy_to=copy_to,
        ffn_change=to_numpy((ffn_after - ffn_before).norm(dim=-1)),
        attention_change=to_numpy((att_after - att_before).norm(dim=-1)),
        twin_gap=float((ffn_after[copy_to] - ffn_after[copy_from]).abs().max()),
    )


# ------------------------------------------------------------------ parameters


def ffn_parameters(d_model: int, d_ff: int) -> int:
    """Parameters of the paper's FFN: W1 (d_model × d_ff) + b1 + W2 (d_ff × d_model) + b2."""
    return 2 * d_model * d_ff + d_ff + d_model


def attention_parameters(d_model: int) -> int:
    """Parameters of one multi-head attention: W_Q, W_K, W_V, W_O (d_model × d_model each) and their biases."""
    return 4 * d_model * d_model + 4 * d_model


def norm_parameters(d_model: int) -> int:
    """Parameters of one LayerNorm: a gain and a bias per dimension."""
    return 2 * d_model


PARAMETER_COLUMNS = ["model", "stack", "ffn", "attention", "norm", "total", "ffn_share"]


def _row(model: str, stack: str, ffn: int, attention: int, norm: int) -> dict:
    total = ffn + attention + norm
    return {"model": model, "stack": stack, "ffn": ffn, "attention": attention, "norm": norm, "total": total,
            "ffn_share": ffn / total if total else 0.0}


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def model_layer_row(ckpt: Checkpoint, stack: str) -> dict:
    """One layer of ``stack`` of this model, counted from its modules."""
    block = _layers(ckpt, stack)[0]
    attention = _count(block.self_attn) + (_count(block.cross_attn) if stack == "decoder" else 0)
    ffn = _count(block.feed_forward)
    return _row("this", stack, ffn, attention, _count(block) - ffn - attention)


def paper_layer_row(stack: str, d_model: int = PAPER_D_MODEL, d_ff: int = PAPER_D_FF) -> dict:
    """One layer of ``stack`` of the paper's base model, from the formulas."""
    attentions = 1 if stack == "encoder" else 2
    return _row("paper", stack, ffn_parameters(d_model, d_ff), attentions * attention_parameters(d_model),
                (attentions + 1) * norm_parameters(d_model))


def parameter_rows(ckpt: Checkpoint) -> pd.DataFrame:
    """Per layer of each stack: parameters in the FFN, the attention(s) and the norms, this model and the paper's."""
    rows = [model_layer_row(ckpt, stack) for stack in ("encoder", "decoder")]
    rows += [paper_layer_row(stack) for stack in ("encoder", "decoder")]
    return pd.DataFrame(rows, columns=PARAMETER_COLUMNS)


def layer_size_ratio(ckpt: Checkpoint) -> float:
    """How many times more parameters one encoder layer of the paper's base model has than one of this model's."""
    return paper_layer_row("encoder")["total"] / model_layer_row(ckpt, "encoder")["total"]


def model_sizes(ckpt: Checkpoint) -> dict[str, int]:
    """d_model, the FFN's hidden width (d_ff, or the SwiGLU width) and the layers of this model."""
    cfg = ckpt.model.config
    hidden = _layers(ckpt, "encoder")[0].feed_forward.linear2.in_features
    return {"d_model": cfg.d_model, "d_ff": cfg.d_ff, "hidden": hidden, "layers": cfg.n_layers}
