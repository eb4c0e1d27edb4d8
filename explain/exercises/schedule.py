"""The warmup schedule: noam_lr(step, d_model, warmup), step 0 counted as step 1."""
from __future__ import annotations

from explain.exercises.core import Bug, Case, Exercise

_CORRECT = '''def noam_lr(step, d_model, warmup):
    step = max(step, 1)
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
'''


def _variant(old: str, new: str) -> str:
    if old not in _CORRECT:
        raise ValueError(f"{old!r} is not in the schedule source")
    return _CORRECT.replace(old, new)


def _cases() -> list[Case]:
    return [
        Case("step_1", (1, 512, 4000)), Case("step_0", (0, 512, 4000)), Case("warming_up", (1000, 512, 4000)),
        Case("peak", (4000, 512, 4000)), Case("decay", (40000, 512, 4000)), Case("small_model", (25, 32, 10)),
    ]


NOAM = Exercise(
    key="noam", page="training", function="noam_lr", reference="noam", outputs=("lr",), atol=1e-12, rtol=1e-6,
    starter_template='''
def noam_lr(step, d_model, warmup):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_cases,
    bugs=(
        Bug("warmup_exponent", _variant("warmup ** -1.5", "warmup ** -0.5")),
        Bug("off_by_one", _variant("step = max(step, 1)", "step = step + 1")),
        Bug("max_not_min", _variant("min(", "max(")),
        Bug("no_d_model", _variant("d_model ** -0.5 * ", "")),
        Bug("step_0", _variant("    step = max(step, 1)\n", "")),
    ),
)
