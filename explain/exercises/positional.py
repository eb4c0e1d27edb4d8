"""The sinusoidal table: positional_encoding(max_len, d_model), sines in the even columns."""
from __future__ import annotations

from explain.exercises.core import Bug, Case, Exercise

_HEAD = '''import math
import torch


def positional_encoding(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (P, 1)
'''


def _cases() -> list[Case]:
    return [Case("table", (16, 8)), Case("length_1", (1, 4)), Case("d_model_6", (20, 6)), Case("d_model_2", (5, 2))]


POSITIONAL_ENCODING = Exercise(
    key="positional_encoding", page="positional_encoding", function="positional_encoding",
    reference="positional_encoding", outputs=("table",), atol=1e-4,
    starter_template='''
import math
import torch


def positional_encoding(max_len, d_model):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_cases,
    bugs=(
        Bug("sin_cos_swapped", _HEAD + '''    frequency = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2) / d_model)  # (d/2,)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.cos(position * frequency)
    table[:, 1::2] = torch.sin(position * frequency)
    return table
'''),
        Bug("halves", _HEAD + '''    frequency = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2) / d_model)  # (d/2,)
    return torch.cat([torch.sin(position * frequency), torch.cos(position * frequency)], dim=-1)
'''),
        Bug("exponent_i", _HEAD + '''    frequency = torch.exp(-math.log(10000.0) * torch.arange(0, d_model // 2) / d_model)  # (d/2,)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table
'''),
        Bug("start_at_1", _HEAD.replace("torch.arange(max_len,", "torch.arange(1, max_len + 1,") + '''    frequency = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2) / d_model)  # (d/2,)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table
'''),
    ),
)
