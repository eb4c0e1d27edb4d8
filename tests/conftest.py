"""Fixtures shared by the unit and AppTest suites, and the test tiers.

Tiers (the README's "Running the tests"): every test in ``tests/e2e/`` is marked ``e2e`` (a real
browser) and every test in ``tests/ops/`` ``ops`` (servers under load: replicas, session leaks,
connection loss, the benchmarks), here, by folder; ``slow`` is set on the test itself.

The suite runs on pytest-xdist's workers (``-n auto --dist loadgroup`` in pyproject.toml). A test
module is one group, run by one worker: its module-scoped fixtures (a trained model, a server) are
built once, and its tests keep their order; a test may name a group of its own instead
(``tests/ops/test_bench_scripts.py``). The browser and operations modules go first, the longest
first, and the many short unit and AppTest modules fill the workers' gaps at the end. ``-n 0``
runs everything in this process (a debugger).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FOLDER_MARKERS = ("e2e", "ops")  # tests/<folder>/ -> marker <folder>
# Modules that run longest, started first so that no worker is left with one of them at the end
# (measured with --durations; the other e2e / ops modules come next, then tests/app, then tests/unit).
LONGEST_FIRST = ("test_session_leaks", "test_replicas", "test_training_browser", "test_bench_scripts",
                 "test_training_compare_browser", "test_load_short", "test_connection_loss",
                 "test_shell_browser")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def folder(item: pytest.Item) -> str:
    """``e2e``, ``ops``, ``app`` or ``unit``: the folder of ``tests/`` that holds ``item``."""
    path = Path(str(item.path))
    return path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else ""


@pytest.hookimpl(tryfirst=True)  # before -m deselects and before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        where = folder(item)
        if where in FOLDER_MARKERS:
            item.add_marker(where)
        if item.get_closest_marker("xdist_group") is None:  # a module is one group unless it says otherwise
            item.add_marker(pytest.mark.xdist_group(f"{where}/{item.path.stem}"))

    def rank(item: pytest.Item) -> tuple[int, int]:
        stem = item.path.stem
        if stem in LONGEST_FIRST:
            return 0, LONGEST_FIRST.index(stem)
        return {"ops": 1, "e2e": 1, "app": 2}.get(folder(item), 3), 0

    items.sort(key=rank)  # stable: a module's tests keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI a skipped browser or operations test is a failed one: those tests must really run."""
    outcome = yield
    report = outcome.get_result()
    if in_ci() and report.skipped and folder(item) in FOLDER_MARKERS:
        report.outcome = "failed"
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"CI=true: browser and operations tests must run, but this one was skipped: {reason}"



@pytest.fixture
def tiny_checkpoints(tmp_path, monkeypatch):
    """Two small untrained checkpoints (``copy``, ``reverse``) in a temporary checkpoint folder."""
    checkpoint = pytest.importorskip("model.checkpoint")
    from model.config import TransformerConfig
    from model.tokenizer import CharTokenizer
    from model.transformer import Transformer

    tokenizer = CharTokenizer("abc")
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                               d_model=8, n_heads=2, n_layers=1, d_ff=16, max_len=16, pad_id=tokenizer.pad_id)
    for task in ("copy", "reverse"):
        checkpoint.save_checkpoint(tmp_path / f"{task}.pt", Transformer(config), tokenizer, {"name": task})
    (tmp_path / "sort.pt").write_bytes(b"not a checkpoint")
    from ui import models

    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    return tmp_path
