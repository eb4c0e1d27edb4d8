"""Attention: scaled_dot_product_attention(q, k, v, mask) -> (output, weights), and the heads'
split and merge. Mask convention: bool, True = may attend."""
from __future__ import annotations

import numpy as np

from explain.exercises.core import Bug, Case, Exercise

_CORRECT = '''import math
import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights * mask.any(dim=-1, keepdim=True)
    return weights @ v, weights
'''

_ZERO_EMPTY_ROWS = "    if mask is not None:\n        weights = weights * mask.any(dim=-1, keepdim=True)\n"


def _variant(*edits: tuple[str, str]) -> str:
    """The correct version above with one classic mistake made (each edit must apply)."""
    source = _CORRECT
    for old, new in edits:
        if old not in source:
            raise ValueError(f"{old!r} is not in the attention source")
        source = source.replace(old, new)
    return source


def _attention_cases() -> list[Case]:
    rng = np.random.default_rng(34)

    def qkv(B: int, H: int, Tq: int, Tk: int, d: int) -> tuple[np.ndarray, ...]:
        shapes = ((B, H, Tq, d), (B, H, Tk, d), (B, H, Tk, d))
        return tuple((2 * rng.standard_normal(s)).astype(np.float32) for s in shapes)

    pads = np.ones((2, 1, 1, 5), dtype=bool)
    pads[1, ..., 3:] = False  # the second sentence has two pad keys
    ahead = np.tril(np.ones((4, 4), dtype=bool))[None, None]  # (1, 1, 4, 4)
    row = np.ones((2, 1, 3, 4), dtype=bool)
    row[0, 0, 1] = False  # query 1 of sentence 0 may attend to nothing
    row[1, 0, :, 2:] = False
    return [
        Case("padding", (*qkv(2, 2, 4, 5, 8), pads)),
        Case("look_ahead", (*qkv(1, 2, 4, 4, 6), ahead)),
        Case("all_masked_row", (*qkv(2, 1, 3, 4, 4), row)),
        Case("no_mask_odd_d_k", (*qkv(1, 1, 3, 3, 5), None)),
        Case("length_1", (*qkv(1, 1, 1, 1, 4), np.ones((1, 1, 1, 1), dtype=bool))),
    ]


ATTENTION = Exercise(
    key="attention", page="attention", function="scaled_dot_product_attention",
    reference="scaled_dot_product_attention", outputs=("output", "weights"),
    starter_template='''
import math
import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_attention_cases,
    bugs=(
        Bug("mask_polarity", _variant(("masked_fill(~mask", "masked_fill(mask"))),
        Bug("no_scale", _variant((" / math.sqrt(q.size(-1))", ""))),
        Bug("scale_by_d_k", _variant(("math.sqrt(q.size(-1))", "q.size(-1)"))),
        Bug("softmax_axis", _variant(("softmax(dim=-1)", "softmax(dim=-2)"))),
        Bug("minus_inf", _variant(("torch.finfo(scores.dtype).min", 'float("-inf")'), (_ZERO_EMPTY_ROWS, ""))),
        Bug("uniform_row", _variant(("torch.finfo(scores.dtype).min", "-1e9"), (_ZERO_EMPTY_ROWS, ""))),
    ),
)


def _split_cases() -> list[Case]:
    rng = np.random.default_rng(35)
    x = lambda *s: rng.standard_normal(s).astype(np.float32)
    return [
        Case("random", (x(2, 5, 12), 3)),
        Case("batch_1_length_1", (x(1, 1, 4), 2)),
        Case("odd_d_k", (x(2, 3, 15), 5)),
        Case("one_head", (x(1, 4, 6), 1)),
    ]


SPLIT_HEADS = Exercise(
    key="split_heads", page="attention", function="split_heads",
    reference="explain.exercises.reference.split_heads", outputs=("heads",),
    starter_template='''
import torch


def split_heads(x, n_heads):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_split_cases,
    bugs=(
        Bug("reshape_no_transpose", '''import torch


def split_heads(x, n_heads):
    B, T, d = x.shape
    return x.view(B, n_heads, T, d // n_heads)
'''),
        Bug("heads_interleaved", '''import torch


def split_heads(x, n_heads):
    B, T, d = x.shape
    return x.view(B, T, d // n_heads, n_heads).permute(0, 3, 1, 2)
'''),
    ),
)


def _merge_cases() -> list[Case]:
    rng = np.random.default_rng(36)
    x = lambda *s: rng.standard_normal(s).astype(np.float32)
    return [
        Case("random", (x(2, 3, 5, 4),)),
        Case("batch_1_length_1", (x(1, 2, 1, 4),)),
        Case("odd_d_k", (x(1, 5, 3, 3),)),
        Case("one_head", (x(2, 1, 4, 6),)),
    ]


MERGE_HEADS = Exercise(
    key="merge_heads", page="attention", function="merge_heads",
    reference="explain.exercises.reference.merge_heads", outputs=("merged",),
    starter_template='''
import torch


def merge_heads(x):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_merge_cases,
    bugs=(
        Bug("reshape_no_transpose", '''import torch


def merge_heads(x):
    B, H, T, d_k = x.shape
    return x.reshape(B, T, H * d_k)
'''),
        Bug("view_not_contiguous", '''import torch


def merge_heads(x):
    B, H, T, d_k = x.shape
    return x.transpose(1, 2).view(B, T, H * d_k)
'''),
    ),
)
