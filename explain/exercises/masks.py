"""Masks: look_ahead_mask(T) and padding_mask(ids, pad_id), bool with True = may attend."""
from __future__ import annotations

import numpy as np

from explain.exercises.core import Bug, Case, Exercise


def _ahead_cases() -> list[Case]:
    return [Case("random", (4,)), Case("length_1", (1,)), Case("longer", (7,))]


LOOK_AHEAD_MASK = Exercise(
    key="look_ahead_mask", page="masks", function="look_ahead_mask",
    reference="look_ahead_mask", outputs=("mask",),
    starter_template='''
import torch


def look_ahead_mask(size):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_ahead_cases,
    bugs=(
        Bug("polarity", '''import torch


def look_ahead_mask(size):
    return torch.ones(size, size, dtype=torch.bool).triu(diagonal=1)
'''),
        Bug("no_diagonal", '''import torch


def look_ahead_mask(size):
    return torch.ones(size, size, dtype=torch.bool).tril(diagonal=-1)
'''),
        Bug("upper", '''import torch


def look_ahead_mask(size):
    return torch.ones(size, size, dtype=torch.bool).triu()
'''),
    ),
)


def _padding_cases() -> list[Case]:
    ids = np.array([[5, 7, 3, 9, 4, 2], [6, 8, 2, 0, 0, 0], [4, 2, 0, 0, 0, 0]], dtype=np.int64)
    no_pad = np.array([[3, 4, 5, 6, 7]], dtype=np.int64)
    all_pad = np.array([[5, 6, 2], [0, 0, 0]], dtype=np.int64)
    pad_3 = np.array([[4, 0, 5, 3, 3], [0, 6, 3, 3, 3]], dtype=np.int64)  # 0 is a real token here
    return [
        Case("pads", (ids, 0)),
        Case("pad_id_not_0", (pad_3, 3)),
        Case("batch_1_no_pad", (no_pad, 0)),
        Case("all_pad_row", (all_pad, 0)),
        Case("length_1", (np.array([[7], [0]], dtype=np.int64), 0)),
    ]


PADDING_MASK = Exercise(
    key="padding_mask", page="masks", function="padding_mask",
    reference="padding_mask", outputs=("mask",),
    starter_template='''
import torch


def padding_mask(ids, pad_id=0):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_padding_cases,
    bugs=(
        Bug("polarity", '''import torch


def padding_mask(ids, pad_id=0):
    return (ids == pad_id)[:, None, None, :]
'''),
        Bug("pad_id_ignored", '''import torch


def padding_mask(ids, pad_id=0):
    return (ids != 0)[:, None, None, :]
'''),
    ),
)
