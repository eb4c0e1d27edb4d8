"""What one attention block produces: each head's weights · V, the heads side by side, mixed by W^O.

In the paper's notation, for the layer's queries (T_q of them) and one block of H heads of d_k
dimensions each::

    head_i = A_i V_i                                   (T_q × d_k)
    MultiHead = Concat(head_1, ..., head_H) W^O + b    (T_q × H·d_k) · (H·d_k × d_model) → (T_q × d_model)

``A_i`` is head i's softmax weights (T_q × T_k) and ``V_i`` its values (T_k × d_k). Every step is read
from the trace of the view's forward pass (``need_details=True``), so the page shows what the model
computed. In the code W^O is ``out_proj``, an ``nn.Linear`` whose weight is stored as (out, in): the
paper's W^O is ``out_proj.weight`` transposed. The result is the attention sublayer's output: the
residual connection adds it to the layer's input next.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from explain.attention import AttentionView

CSV_COLUMNS = ["matrix", "query_position", "query_token", "column", "value"]


@dataclass(frozen=True)
class HeadOutputs:
    """One attention block's output, step by step, for one sentence (float64)."""

    heads: np.ndarray  # (H, T_q, d_k): head_i = weights_i @ V_i
    concat: np.ndarray  # (T_q, H·d_k): the heads side by side, head 1 first
    output: np.ndarray  # (T_q, d_model): concat @ W^O + b, the sublayer's output

    @property
    def n_heads(self) -> int:
        return self.heads.shape[0]

    @property
    def d_k(self) -> int:
        return self.heads.shape[-1]


def head_outputs(view: AttentionView, kind: str, layer: int) -> HeadOutputs:
    """Every head's weights · V, their concatenation and the block's output for ``kind`` in ``layer``
    (1-based) of ``view``, which must hold the details (``need_details=True``)."""
    details = view.details[kind]
    return HeadOutputs(heads=details["heads"][layer - 1], concat=details["concat"][layer - 1],
                       output=details["out"][layer - 1])


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
