"""What one attention block produces: each head's weights · V, the heads side by side, mixed by W^O.

In the paper's notation, for the layer's queries (T_q of them) and one block of H heads of d_k
dimensions each::

    head_i = A_i V_i                                   (T_q × d_k)
    MultiHead = Concat(head_1, ..., head_H) W^O + b    (T_q × H·d_k) · (H·d_k × d_model) → (T_q × d_model)

``A_i`` is head i's softmax weights (T_q × T_k) and ``V_i`` its values (T_k × d_k). In the code,
``out_proj`` is an ``nn.Linear`` whose weight is stored as (out, in), so the paper's W^O is
``out_proj.weight`` transposed. The result is the attention sublayer's output: the residual
connection adds it to the layer's input next.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from explain.attention import AttentionView, attention_maps
from model.checkpoint import Checkpoint

CSV_COLUMNS = ["matrix", "query_position", "query_token", "column", "value"]


@dataclass(frozen=True)
class HeadOutputs:
    """One attention block's output, step by step, for one sentence (float64)."""

    heads: np.ndarray  # (H, T_q, d_k): head_i = weights_i @ V_i
    concat: np.ndarray  # (T_q, H·d_k): the heads side by side, head 1 first
    w_o: np.ndarray  # (H·d_k, d_model): the paper's W^O (out_proj.weight transposed)
    bias: np.ndarray  # (d_model,)
    output: np.ndarray  # (T_q, d_model): concat @ W^O + b, the sublayer's output

    @property
    def n_heads(self) -> int:
        return self.heads.shape[0]

    @property
    def d_k(self) -> int:
        return self.heads.shape[-1]


def attention_module(model, kind: str, layer: int):
    """The ``MultiHeadAttention`` of ``kind`` (encoder, decoder or cross) in ``layer`` (1-based) of ``model``."""
    if kind == "encoder":
        return model.encoder_layers[layer - 1].self_attn
    block = model.decoder_layers[layer - 1]
    return block.self_attn if kind == "decoder" else block.cross_attn


@torch.inference_mode()
def output_projection(ckpt: Checkpoint, kind: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(W^O (H·d_k, d_model), b (d_model,)) of ``kind``'s attention in ``layer`` (1-based), as float64."""
    out_proj = attention_module(ckpt.model, kind, layer).out_proj
    return (out_proj.weight.detach().double().cpu().numpy().T.copy(),
            out_proj.bias.detach().double().cpu().numpy().copy())


def head_outputs(view: AttentionView, kind: str, layer: int, w_o: np.ndarray, bias: np.ndarray) -> HeadOutputs:
    """Every head's weights · V, their concatenation and ``concat @ w_o + bias`` for ``kind`` in
    ``layer`` (1-based) of ``view``, which must hold the details (``need_details=True``)."""
    weights = attention_maps(view, kind)[layer - 1]  # (H, T_q, T_k)
    values = view.details[kind]["v"][layer - 1]  # (H, T_k, d_k)
    heads = weights @ values  # (H, T_q, d_k)
    n_heads, n_queries, d_k = heads.shape
    concat = heads.transpose(1, 0, 2).reshape(n_queries, n_heads * d_k)
    return HeadOutputs(heads=heads, concat=concat, w_o=np.asarray(w_o, dtype=float),
                       bias=np.asarray(bias, dtype=float), output=concat @ w_o + bias)


def head_outputs_csv(result: HeadOutputs, query_tokens: Sequence[str], head: int) -> str:
    """Head ``head``'s output (1-based), the concatenation and the block's output, one line per cell.

    ``matrix`` is ``head_<n>``, ``concat`` or ``output``; ``column`` counts from 0 within that matrix.
    """
    frames = []
    for name, matrix in ((f"head_{head}", result.heads[head - 1]), ("concat", result.concat),
                         ("output", result.output)):
        rows, cols = np.indices(matrix.shape)
        frames.append(pd.DataFrame({
            "matrix": name, "query_position": rows.ravel(),
            "query_token": [query_tokens[i] for i in rows.ravel()], "column": cols.ravel(),
            "value": np.round(matrix.ravel(), 6)}))
    return pd.concat(frames, ignore_index=True)[CSV_COLUMNS].to_csv(index=False)
