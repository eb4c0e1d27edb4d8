"""The sinusoidal table: positional_encoding(max_len, d_model), sines in the even columns."""
from __future__ import annotations

from explain.exercises.core import Bug, Case, Exercise

_CORRECT = '''import math
import torch


def positional_encoding(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2)  # 0, 2, 4, ...
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)  # (d/2,)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table
'''


def _variant(*edits: tuple[str, str]) -> str:
    source = _CORRECT
    for old, new in edits:
        if old not in source:
            raise ValueError(f"{old!r} is not in the positional source")
        source = source.replace(old, new)
    return source


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
        Bug("sin_cos_swapped", _variant(("table[:, 0::2] = torch.sin(", "table[:, 0::2] = torch.cos("),
                                        ("table[:, 1::2] = torch.cos(", "table[:, 1::2] = torch.sin("))),
        Bug("halves", _variant(("    table = torch.zeros(max_len, d_model)\n", ""),
                               ("    table[:, 0::2] = torch.sin(position * frequency)\n"
                                "    table[:, 1::2] = torch.cos(position * frequency)\n    return table\n",
                                "    angle = position * frequency  # (P, d/2)\n"
                                "    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)\n"))),
        Bug("exponent_i", _variant(("two_i = torch.arange(0, d_model, 2)  # 0, 2, 4, ...",
                                    "two_i = torch.arange(d_model // 2)  # 0, 1, 2, ..."))),
        Bug("start_at_1", _variant(("torch.arange(max_len, ", "torch.arange(1, max_len + 1, "))),
    ),
)
