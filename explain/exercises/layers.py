"""The stack of N layers: ``clones(module, n)``, N separate copies of one layer.

The classic mistake (``nn.ModuleList([layer for _ in range(N)])``, or one copy repeated) puts ONE object
in the list N times: the stack has the parameters of one layer, and training one "layer" trains them all.
The answer is modules, not arrays, so a trusted probe (:func:`probe_clones`, run wherever the function
is checked, the sandbox included) turns it into what can be compared: what each copy computes after
the first copy alone took a training step, and how many parameter tensors the copies have.
"""
from __future__ import annotations

import torch
from torch import nn

from explain.exercises.core import Bug, Case, Exercise


def probe_clones(clones, n, d_model):
    """Build one Linear(d_model, d_model) (seeded), ask ``clones`` for ``n`` copies, change copy 0's weights
    as one optimiser step would, and return: each copy's output for a row of ones (n, d_model); the counts
    (distinct parameter tensors, distinct module objects) among the copies; and the original layer's output
    (d_model,), which a copy must leave alone."""
    n, d_model = int(n), int(d_model)
    torch.manual_seed(0)
    layer = nn.Linear(d_model, d_model)
    copies = list(clones(layer, n))
    if not all(isinstance(c, nn.Module) for c in copies):
        raise TypeError("clones must return modules (an nn.ModuleList)")
    ones = torch.ones(1, d_model)
    with torch.no_grad():
        for p in (copies[0].parameters() if copies else ()):
            p.add_(1.0)  # a step taken by the first layer alone
        outputs = torch.stack([c(ones)[0] for c in copies]) if copies else torch.zeros(0, d_model)
        original = layer(ones)[0]
    counts = torch.tensor([len({id(p) for c in copies for p in c.parameters()}), len({id(c) for c in copies})])
    return outputs, counts, original


def _cases() -> list[Case]:
    return [Case("three_layers", (3, 4)), Case("six_layers", (6, 8)), Case("one_layer", (1, 4))]


CLONES = Exercise(
    key="clones", page="paper_vs_code", function="clones",
    reference="explain.exercises.reference.clones", outputs=("outputs", "counts", "original"),
    probe="explain.exercises.layers:probe_clones",
    starter_template='''
import copy
import torch
from torch import nn


def clones(module, n):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_cases,
    bugs=(
        Bug("shared", '''import copy
import torch
from torch import nn


def clones(module, n):
    return nn.ModuleList([module for _ in range(n)])
'''),
        Bug("copied_once", '''import copy
import torch
from torch import nn


def clones(module, n):
    layer = copy.deepcopy(module)
    return nn.ModuleList([layer] * n)
'''),
        Bug("shallow_copy", '''import copy
import torch
from torch import nn


def clones(module, n):
    return nn.ModuleList(copy.copy(module) for _ in range(n))
'''),
    ),
)
