"""A paused run holds no training slot: it gives its slot back (or leaves the queue) while paused and
queues again on Resume, going on from the same step. The time cap and the stop of a closed tab
still hold for a run that paused.
"""
from __future__ import annotations

import time

import pytest

from model.run_slots import RunSlots
from model.training import TrainingRun
from ui.training import session as ts
from tests.training_runs import long_config, wait_until


def trains(run_or_session) -> bool:
    snap = run_or_session.snapshot()
    return snap.state == "running" and snap.step >= 1


@pytest.fixture
def two_slots(monkeypatch) -> RunSlots:
    """The server's shared queue as ``TP_MAX_TRAINING_RUNS=2`` makes it."""
    monkeypatch.setenv(ts.ENV_MAX_RUNS, "2")
    ts.shared_slots.clear()
    slots = ts.shared_slots()
    yield slots
    ts.shared_slots.clear()


def test_two_paused_runs_let_a_third_start_at_once(sessions, two_slots):
    assert two_slots.capacity == 2
    first, second, third = sessions(two_slots), sessions(two_slots), sessions(two_slots)
    first.start(long_config(seed=1))
    second.start(long_config(seed=2))
    assert wait_until(lambda: trains(first) and trains(second))
    first.pause()
    second.pause()
    assert wait_until(lambda: two_slots.running == 0)  # both slots went back while paused
    assert first.snapshot().state == second.snapshot().state == "paused"
    held = first.snapshot().step
    third.start(long_config(seed=3))
    assert wait_until(lambda: trains(third), 10)  # no wait in the queue
    time.sleep(0.3)
    assert first.snapshot().step == held  # a paused run stays paused


def test_resume_queues_again_and_goes_on_from_the_same_step(sessions, two_slots):
    first, second, third = sessions(two_slots), sessions(two_slots), sessions(two_slots)
    first.start(long_config())
    assert wait_until(lambda: first.snapshot().step >= 3)
    first.pause()
    assert wait_until(lambda: two_slots.running == 0)
    paused_at, history = first.snapshot().step, first.snapshot().losses
    second.start(long_config())
    third.start(long_config())
    assert wait_until(lambda: trains(second) and trains(third))
    first.resume()  # both slots are taken: the resumed run waits, with its place in the queue
    assert wait_until(lambda: first.status().queue_position == 1)
    status = first.status()
    assert (status.state, status.queue_waiting, status.step) == ("queued", 1, paused_at)
    second.stop()
    assert wait_until(lambda: first.snapshot().step > paused_at)  # the freed slot goes to it
    snap = first.snapshot()
    assert snap.state == "running" and snap.losses[:paused_at] == history  # the same run, carried on
    assert two_slots.running == 2 and two_slots.waiting == 0


def test_pausing_a_queued_run_takes_it_out_of_the_queue(sessions):
    slots = RunSlots(1)
    first, second, third = sessions(slots), sessions(slots), sessions(slots)
    first.start(long_config())
    assert wait_until(lambda: trains(first))
    second.start(long_config())
    third.start(long_config())
    assert wait_until(lambda: third.status().queue_position == 2)
    second.pause()
    assert wait_until(lambda: third.status().queue_position == 1)  # the one behind moves up
    assert second.status().state == "paused" and slots.waiting == 1
    first.stop()
    assert wait_until(lambda: trains(third))  # the slot goes to the run still waiting
    assert second.snapshot().step == 0 and second.snapshot().state == "paused"
    second.resume()
    assert wait_until(lambda: second.status().queue_position == 1)  # at the back of the queue
    third.stop()
    assert wait_until(lambda: trains(second))


def test_a_paused_run_whose_tab_closes_is_stopped_and_frees_everything(sessions):
    slots = RunSlots(1)
    owner, other = sessions(slots), sessions(slots)
    owner.start(long_config())
    assert wait_until(lambda: owner.snapshot().step >= 2)
    owner.pause()
    assert wait_until(lambda: slots.running == 0)
    assert ts.alive_training_threads() == 1  # the paused run still has its thread, but no slot
    owner.close()  # Streamlit releases the session: the tab closed
    assert wait_until(lambda: ts.alive_training_threads() == 0, 5)
    snap = owner.snapshot()
    assert (snap.state, snap.reason) == ("finished", "stopped") and owner.released and not owner.live
    assert slots.running == 0 and slots.waiting == 0
    other.start(long_config())
    assert wait_until(lambda: trains(other))


def test_a_run_paused_while_queued_and_then_closed_never_started(sessions):
    slots = RunSlots(1)
    first, second = sessions(slots), sessions(slots)
    first.start(long_config())
    assert wait_until(lambda: trains(first))
    second.start(long_config())
    assert wait_until(lambda: second.status().queue_position == 1)
    second.pause()
    second.close()
    assert wait_until(lambda: not second.live, 5)
    assert second.snapshot().reason == "stopped before it started" and slots.waiting == 0


def test_the_time_cap_counts_training_only_and_still_ends_a_run_that_paused(sessions):
    slots = RunSlots(1)
    session = sessions(slots)
    session.start(long_config(max_seconds=1.5))
    assert wait_until(lambda: session.snapshot().step >= 2)
    started = time.monotonic()
    session.pause()
    time.sleep(2.0)  # longer than the cap: paused time does not count
    assert session.snapshot().state == "paused"
    session.resume()
    assert wait_until(lambda: not session.live, 30)
    snap = session.snapshot()
    assert (snap.state, snap.reason) == ("finished", "time cap reached")
    assert 1.5 <= snap.elapsed_s < time.monotonic() - started
    assert slots.running == 0


def test_a_run_without_slots_pauses_and_resumes_in_place():
    run = TrainingRun(long_config(), device="cpu")
    run.start()
    try:
        assert wait_until(lambda: run.snapshot().step >= 2)
        run.pause()
        assert run.status().state == "paused"
        time.sleep(0.3)
        held = run.snapshot().step
        run.resume()
        assert run.status().state == "running"
        assert wait_until(lambda: run.snapshot().step > held)
    finally:
        run.stop(timeout=5)
    assert not run.alive and run.snapshot().reason == "stopped"
