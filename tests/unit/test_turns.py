"""Heavy work in turn (explain/turns.py): at most ``slots`` callers at once, the rest in arrival order, each told
its place, and a caller whose script stops leaves the line (#33 item 3)."""
from __future__ import annotations

import threading
import time

import pytest

from explain.turns import Turns


def crowd(turns: Turns, n: int, work_s: float, on_wait_for=None):
    """``n`` callers arriving one after another; returns (order they worked in, most working at once, places told)."""
    order: list[int] = []
    working = [0, 0]  # now, most
    told: dict[int, list[int]] = {i: [] for i in range(n)}
    lock = threading.Lock()

    def caller(i: int) -> None:
        wait = on_wait_for(i, told[i]) if on_wait_for else told[i].append
        try:
            with turns.turn(on_wait=wait, tick=0.02):
                with lock:
                    order.append(i)
                    working[0] += 1
                    working[1] = max(working)
                time.sleep(work_s)
                with lock:
                    working[0] -= 1
        except RuntimeError:
            pass

    threads = []
    for i in range(n):
        threads.append(threading.Thread(target=caller, args=(i,)))
        threads[-1].start()
        while len(turns) < i + 1 and threads[-1].is_alive():  # the next caller arrives after this one is in line
            time.sleep(0.001)
    for th in threads:
        th.join(30)
    return order, working[1], told


def test_one_at_a_time_in_arrival_order_each_told_its_place():
    turns = Turns(1)
    order, most, told = crowd(turns, 6, 0.05)
    assert order == list(range(6)) and most == 1
    assert told[0] == []  # the first never waits
    for i in range(1, 6):
        assert told[i] and told[i][0] == i and told[i] == sorted(told[i], reverse=True)  # the place only shrinks
    assert len(turns) == 0


def test_two_slots_let_two_work_at_once():
    order, most, told = crowd(Turns(2), 6, 0.05)
    assert sorted(order) == list(range(6)) and most == 2 and told[0] == told[1] == []


def test_a_caller_whose_script_stops_leaves_the_line_and_the_next_goes_on():
    def wait_for(i, places):
        def on_wait(ahead):
            places.append(ahead)
            if i == 2:
                raise RuntimeError("the visitor left")  # as a stopped Streamlit script does at its next st call
        return on_wait

    turns = Turns(1)
    order, most, told = crowd(turns, 4, 0.05, wait_for)
    assert order == [0, 1, 3] and told[2] == [2] and len(turns) == 0


def test_a_line_needs_a_slot():
    with pytest.raises(ValueError):
        Turns(0)
