"""The test file the panel offers where the server runs no visitor code (issue #34): run on a
learner's machine, it passes with the reference and fails, naming the case, with a planted bug."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from explain.exercises import EXERCISES, offline_test, reference_source

ROOT = Path(__file__).resolve().parents[2]


def run_file(tmp_path, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / "test_learner.py"
    path.write_text(text, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "no:randomly", str(path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PYTHONPATH": str(ROOT)})  # the reference imports model/


@pytest.mark.slow
@pytest.mark.parametrize("key", ["scaled_dot_product_attention", "brevity_penalty"])
def test_the_offline_file_passes_the_reference_and_fails_a_planted_bug(tmp_path, key):
    ex = next(e for e in EXERCISES.values() if e.function == key)
    passing = run_file(tmp_path, offline_test(ex, reference_source(ex), "zh"))
    assert passing.returncode == 0, passing.stdout[-2000:]
    assert f"{len(ex.cases())} passed" in passing.stdout
    failing = run_file(tmp_path, offline_test(ex, ex.bugs[0].source, "en"))
    assert failing.returncode == 1 and "failed" in failing.stdout, failing.stdout[-2000:]
