"""The position-wise feed-forward: feed_forward(x, w1, b1, w2, b2) = max(0, x W1 + b1) W2 + b2."""
from __future__ import annotations

import numpy as np

from explain.exercises.core import Bug, Case, Exercise

_CORRECT = '''import torch


def feed_forward(x, w1, b1, w2, b2):
    hidden = torch.relu(x @ w1 + b1)
    return hidden @ w2 + b2
'''


def _cases() -> list[Case]:
    rng = np.random.default_rng(38)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)

    def args(x: np.ndarray, d_ff: int) -> tuple[np.ndarray, ...]:
        d = x.shape[-1]
        return x, f(d, d_ff) / np.float32(d ** 0.5), f(d_ff), f(d_ff, d) / np.float32(d_ff ** 0.5), f(d)

    return [
        Case("random", args(f(2, 4, 6), 16)),
        Case("batch_1_length_1", args(f(1, 1, 4), 8)),
        Case("odd_size", args(f(1, 3, 5), 7)),
    ]


FEED_FORWARD = Exercise(
    key="feed_forward", page="feed_forward", function="feed_forward",
    reference="explain.exercises.reference.feed_forward", outputs=("y",), atol=1e-4,
    starter_template='''
import torch


def feed_forward(x, w1, b1, w2, b2):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_cases,
    bugs=(
        Bug("no_relu", _CORRECT.replace("torch.relu(x @ w1 + b1)", "x @ w1 + b1")),
        Bug("relu_on_output", _CORRECT.replace("return hidden @ w2 + b2", "return torch.relu(hidden @ w2 + b2)")),
        Bug("relu_before_bias", _CORRECT.replace("torch.relu(x @ w1 + b1)", "torch.relu(x @ w1) + b1")),
    ),
)
