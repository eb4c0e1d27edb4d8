"""Heavy work in turn: at most a few at once in the process, the others waiting in arrival order.

A page that starts something slow (decoding 200 samples, measuring a model's cost) takes a turn::

    with turns.turn(on_wait=lambda ahead: note.caption(f"{ahead} ahead of you")):
        ...                                    # at most ``slots`` callers are in here at once

A caller that has to wait is told how many callers are before it every ``tick`` seconds, never blocks
longer than that, and leaves the line when ``on_wait`` raises (a Streamlit script stopped by a rerun or
a closed tab does, at its next ``st`` call), so nobody waits behind a visitor who has gone.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TICK_S = 0.25


class Turns:
    """A line of callers, of whom the first ``slots`` work (thread-safe)."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.slots = slots
        self._line: list[object] = []
        self._changed = threading.Condition()

    def __len__(self) -> int:
        """Callers working or waiting."""
        with self._changed:
            return len(self._line)

    @contextmanager
    def turn(self, on_wait: Callable[[int], None] | None = None, tick: float = TICK_S) -> Iterator[None]:
        """Wait for a turn (``on_wait(n)``: n callers are before this one), work in the block, then give it up."""
        ticket = object()
        with self._changed:
            self._line.append(ticket)
        try:
            while True:
                with self._changed:
                    ahead = self._line.index(ticket)
                    if ahead < self.slots:
                        break
                    self._changed.wait(tick)
                    ahead = self._line.index(ticket)
                    if ahead < self.slots:
                        break
                if on_wait is not None:
                    on_wait(ahead)
            yield
        finally:
            with self._changed:
                self._line.remove(ticket)
                self._changed.notify_all()
