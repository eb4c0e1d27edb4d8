"""LayerNorm by hand: layer_norm(x, gamma, beta, eps), over the last dim, biased variance."""
from __future__ import annotations

import numpy as np

from explain.exercises.core import Bug, Case, Exercise

_CORRECT = '''import torch


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta
'''


def _variant(old: str, new: str) -> str:
    if old not in _CORRECT:
        raise ValueError(f"{old!r} is not in the layer norm source")
    return _CORRECT.replace(old, new)


def _cases() -> list[Case]:
    rng = np.random.default_rng(37)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    constant = f(2, 3, 6)
    constant[0, 1] = 0.7  # one position whose features are all equal: variance 0
    return [
        Case("random", (f(2, 5, 8), 1 + 0.5 * f(8), f(8), 1e-5)),
        Case("odd_size", (3 + 2 * f(1, 3, 7), 1 + 0.5 * f(7), f(7), 1e-5)),
        Case("batch_1_length_1", (f(1, 1, 4), 1 + 0.5 * f(4), f(4), 1e-5)),
        Case("constant_row", (constant, 1 + 0.5 * f(6), f(6), 1e-5)),
        Case("large_eps", (0.3 * f(2, 2, 4), 1 + 0.5 * f(4), f(4), 0.5)),
    ]


LAYER_NORM = Exercise(
    key="layer_norm", page="layer_norm", function="layer_norm",
    reference="explain.exercises.reference.layer_norm", outputs=("y",), atol=1e-4,
    starter_template='''
import torch


def layer_norm(x, gamma, beta, eps=1e-5):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_cases,
    bugs=(
        Bug("unbiased", _variant("x.var(dim=-1, unbiased=False, keepdim=True)", "x.var(dim=-1, keepdim=True)")),
        Bug("eps_outside", _variant("torch.sqrt(var + eps)", "(torch.sqrt(var) + eps)")),
        Bug("no_eps", _variant("torch.sqrt(var + eps)", "torch.sqrt(var)")),
        Bug("wrong_axis", _variant("mean = x.mean(dim=-1, keepdim=True)\n    var = x.var(dim=-1,",
                                   "mean = x.mean(dim=1, keepdim=True)\n    var = x.var(dim=1,")),
        Bug("gamma_beta_swapped", _variant("* gamma + beta", "* beta + gamma")),
    ),
)
