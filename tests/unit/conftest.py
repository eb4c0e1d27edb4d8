"""Fixtures shared by the unit tests."""
from __future__ import annotations

import pytest
import torch

from model.run_slots import RunSlots
from tests.training_runs import wait_until
from ui.training import session as ts


@pytest.fixture
def sessions():
    """Factory of TrainingSessions on CPU (``make(slots)``; by default 4 slots of their own); every run
    is stopped afterwards and no training thread may be left."""
    made: list[ts.TrainingSession] = []

    def make(slots: RunSlots | None = None) -> ts.TrainingSession:
        session = ts.TrainingSession(slots=slots or RunSlots(4), device="cpu")
        made.append(session)
        return session

    yield make
    for session in made:
        session.close()
    assert wait_until(lambda: ts.alive_training_threads() == 0, 10)


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module of small models: on a busy 2-core machine two threads per forward or
    backward pass are many times slower than one (use with ``pytestmark = pytest.mark.usefixtures(...)``)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
