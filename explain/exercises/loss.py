"""The output side: shift_targets(ids) (teacher forcing's labels) and label_smoothed_cross_entropy
with model.loss's convention (epsilon spread over V - 2 classes, pad positions not counted)."""
from __future__ import annotations

import numpy as np

from explain.exercises.core import Bug, Case, Exercise


def _shift_cases() -> list[Case]:
    ids = np.array([[1, 5, 6, 7, 2, 0], [1, 8, 2, 0, 0, 0]], dtype=np.int64)  # <bos>=1, <eos>=2, <pad>=0
    return [Case("pads", (ids,)), Case("batch_1", (np.array([[1, 9, 4, 2]], dtype=np.int64),)),
            Case("length_1", (np.array([[1, 2]], dtype=np.int64),))]


SHIFT_TARGETS = Exercise(
    key="shift_targets", page="output_and_loss", function="shift_targets",
    reference="explain.exercises.reference.shift_targets", outputs=("decoder_input", "labels"),
    starter_template='''
import torch


def shift_targets(ids):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_shift_cases,
    bugs=(
        Bug("not_shifted", '''import torch


def shift_targets(ids):
    return ids[:, :-1], ids[:, :-1]
'''),
        Bug("wrong_way", '''import torch


def shift_targets(ids):
    return ids[:, 1:], ids[:, :-1]
'''),
    ),
)

_CORRECT = '''import torch
from torch.nn import functional as F


def label_smoothed_cross_entropy(logits, target, epsilon=0.1, pad_id=0):
    V = logits.size(-1)
    log_probs = F.log_softmax(logits.reshape(-1, V), dim=-1)  # (N, V)
    target = target.reshape(-1)  # (N,)
    smooth = torch.full_like(log_probs, epsilon / (V - 2))
    smooth.scatter_(1, target[:, None], 1 - epsilon)
    smooth[:, pad_id] = 0
    loss = -(smooth * log_probs).sum(dim=-1)  # (N,)
    keep = target != pad_id
    return loss[keep].mean()
'''


def _variant(*edits: tuple[str, str]) -> str:
    source = _CORRECT
    for old, new in edits:
        if old not in source:
            raise ValueError(f"{old!r} is not in the loss source")
        source = source.replace(old, new)
    return source


def _loss_cases() -> list[Case]:
    rng = np.random.default_rng(39)
    logits = lambda *s: (2 * rng.standard_normal(s)).astype(np.float32)
    target = np.array([[4, 5, 6, 2, 0], [3, 2, 0, 0, 0]], dtype=np.int64)
    pad_3 = np.array([[0, 4, 1, 3], [5, 3, 3, 3]], dtype=np.int64)  # 0 is a real class here
    return [
        Case("pads", (logits(2, 5, 7), target, 0.1, 0)),
        Case("no_smoothing", (logits(2, 5, 7), target, 0.0, 0)),
        Case("pad_id_not_0", (logits(2, 4, 6), pad_3, 0.2, 3)),
        Case("batch_1_length_1", (logits(1, 1, 5), np.array([[4]], dtype=np.int64), 0.1, 0)),
    ]


LABEL_SMOOTHING = Exercise(
    key="label_smoothing", page="output_and_loss", function="label_smoothed_cross_entropy",
    reference="label_smoothing", outputs=("loss",),
    starter_template='''
import torch
from torch.nn import functional as F


def label_smoothed_cross_entropy(logits, target, epsilon=0.1, pad_id=0):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_loss_cases,
    bugs=(
        Bug("smooth_over_v", _variant(("epsilon / (V - 2)", "epsilon / V"),
                                      ("1 - epsilon)", "1 - epsilon + epsilon / V)"),
                                      ("    smooth[:, pad_id] = 0\n", ""))),
        Bug("pad_class_smoothed", _variant(("epsilon / (V - 2)", "epsilon / (V - 1)"),
                                           ("    smooth[:, pad_id] = 0\n", ""))),
        Bug("pads_counted", _variant(("loss[keep].mean()", "loss.mean()"))),
        Bug("softmax_axis", _variant(("F.log_softmax(logits.reshape(-1, V), dim=-1)",
                                      "F.log_softmax(logits, dim=1).reshape(-1, V)"))),
    ),
)
