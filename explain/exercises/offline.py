"""An exercise as a test file for the learner's own machine: where the server runs no learner code
(``TP_LEARNER_CODE`` off, or a class server's visitor), the panel offers this instead.

The file holds the learner's code as it is in the editor, every case's inputs and the reference's
outputs as JSON (never a pickle), and one pytest test per case with the same tolerances as the
check. Run: ``pip install torch numpy pytest`` then ``pytest test_<function>.py``.
"""
from __future__ import annotations

import inspect
import json
import textwrap
from typing import Any

import numpy as np

from explain.exercises.core import Exercise, catalog_text, expected, probe_function


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


HARNESS = '''

# ---------------------------------------------------------------- {checks}
import json

import numpy as np
import pytest
import torch

OUTPUTS = {outputs!r}
RTOL, ATOL = {rtol!r}, {atol!r}
CASES = json.loads(r"""{cases}""")


def _decode(value):
    if isinstance(value, dict) and "array" in value:
        return torch.tensor(np.array(value["array"], dtype=value["dtype"]))
    return value


def _expected(value):
    return np.array(value["array"], dtype=value["dtype"]) if isinstance(value, dict) else np.asarray(value)


def _plain(value):
    return np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value)


@pytest.mark.parametrize("case", CASES, ids=[case["label"] for case in CASES])
def test_{function}(case):
    args = [_decode(a) for a in case["args"]]
    kwargs = {{name: _decode(v) for name, v in case["kwargs"].items()}}
    got = ({call})(*args, **kwargs)
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    assert len(got) >= len(OUTPUTS), f"{{case['label']}}: returns {{len(got)}} value(s), expected {{len(OUTPUTS)}}"
    for name, want, value in zip(OUTPUTS, case["expected"], got):
        want, value = _expected(want), _plain(value)
        assert value.shape == want.shape, f"{{case['label']}}, {{name}}: shape {{value.shape}}, expected {{want.shape}}"
        assert not (np.issubdtype(value.dtype, np.floating) and np.isnan(value).any()), \\
            f"{{case['label']}}, {{name}}: contains NaN"
        np.testing.assert_allclose(value.astype(float), want.astype(float), rtol=RTOL, atol=ATOL,
                                   err_msg=f"{{case['label']}}, {{name}}")
'''


def offline_test(exercise: Exercise, source: str, lang: str) -> str:
    """The pytest file: a header saying how to run it, ``source``, then the cases and the checks."""
    cases = [{"label": catalog_text(f"exercises.case.{case.label}", lang),
              "args": [_encode(a) for a in case.args], "kwargs": {k: _encode(v) for k, v in case.kwargs},
              "expected": [_encode(np.asarray(w)) for w in want]}
             for case, want in zip(exercise.cases(), expected(exercise))]
    probe = probe_function(exercise)  # how the check reads a non-array answer: its source goes in the file
    header = "# " + catalog_text("exercises.panel.offline_header", lang, function=exercise.function).replace(
        "\n", "\n# ") + "\n\n"
    return header + source.rstrip() + "\n" + HARNESS.format(
        checks=catalog_text("exercises.panel.offline_checks", lang), outputs=tuple(exercise.outputs),
        rtol=exercise.rtol, atol=exercise.atol, cases=json.dumps(cases), function=exercise.function,
        call=exercise.function if probe is None else f"lambda *a, **k: {probe.__name__}({exercise.function}, *a, **k)"
    ) + ("" if probe is None else "\n\nfrom torch import nn  # noqa: E402\n\n\n" + textwrap.dedent(inspect.getsource(probe)))
