"""Shared by the tests of training runs: a fast run's settings, a run that would go on for long, and
waiting for a run's state without sleeping longer than needed."""
from __future__ import annotations

import time
from typing import Callable

from model.training import TrainingConfig

FAST = dict(task="copy", task_max_len=6, preset="tiny", batch_size=8, eval_every=10, eval_size=10, probe_every=5,
            max_seconds=120)


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    """True as soon as ``predicate()`` is; False after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def long_config(**overrides) -> TrainingConfig:
    """A fast run's settings with a step cap it will not reach in a test."""
    return TrainingConfig(**{**FAST, "max_steps": 100_000, **overrides})
