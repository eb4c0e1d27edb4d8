"""A cap on how many training runs may train at once in this process, with a fair queue."""
from __future__ import annotations

import threading
from typing import Callable


class RunSlots:
    """At most ``capacity`` holders at a time; the rest wait in arrival order.

    Each holder is any object (a run). ``place(holder)`` gives its 1-based place in the queue (0 for a
    holder with a slot, or none waiting) together with how many wait.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"At least one training slot is needed, got {capacity}.")
        self.capacity = capacity
        self._cond = threading.Condition()
        self._holders: list[object] = []
        self._queue: list[object] = []

    def acquire(self, holder: object, should_give_up: Callable[[], bool] = lambda: False,
                poll_s: float = 0.2) -> bool:
        """Block until ``holder`` gets a slot (True) or ``should_give_up()`` turns true (False)."""
        with self._cond:
            self._queue.append(holder)
            try:
                while True:
                    if self._queue[0] is holder and len(self._holders) < self.capacity:
                        self._queue.pop(0)
                        self._holders.append(holder)
                        self._cond.notify_all()
                        return True
                    if should_give_up():
                        return False
                    self._cond.wait(poll_s)
            finally:
                if holder in self._queue:
                    self._queue.remove(holder)
                    self._cond.notify_all()

    def release(self, holder: object) -> None:
        with self._cond:
            if holder in self._holders:
                self._holders.remove(holder)
            self._cond.notify_all()

    def cancel(self, holder: object) -> None:
        """Wake the waiters so a holder that gave up leaves the queue promptly."""
        with self._cond:
            self._cond.notify_all()

    def place(self, holder: object) -> tuple[int, int]:
        """``(1-based place of holder in the queue or 0, waiting)``, read together so they agree."""
        with self._cond:
            position = self._queue.index(holder) + 1 if holder in self._queue else 0
            return position, len(self._queue)

    @property
    def running(self) -> int:
        with self._cond:
            return len(self._holders)

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)
