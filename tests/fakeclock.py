"""A virtual clock for unit tests of threaded timelines (harness/clock.py): time stands still while
any of its threads runs, and jumps to the nearest deadline when all of them wait on it. What a test
checks about timing then holds however slow the machine is; only the wall time of the test varies.

Its threads are those started with start_thread (from start to end) and any thread while it waits
on the clock (a test's `clock.sleep(2)` lets the timeline run for 2 s). A thread of the clock that
blocks on something else (a lock, a process, an event another thread sets) holds time still until
it goes on, so it must not wait there for something that needs time to pass.
"""

from __future__ import annotations

import math
import threading

from harness.clock import Clock

POLL = 0.005  # real seconds between two looks at threads that ended or events set by other threads


class FakeClock(Clock):
    def __init__(self):
        self.now = 0.0
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._waiting: dict[threading.Thread, tuple[float, threading.Event | None]] = {}

    def monotonic(self) -> float:
        with self._cond:
            return self.now

    def start_thread(self, target, name, args=()) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._cond:
            self._threads.append(thread)
            thread.start()  # under the lock: time cannot move before the thread counts as running
        return thread

    def wait(self, event, timeout) -> bool:
        me = threading.current_thread()
        with self._cond:
            deadline = math.inf if timeout is None else self.now + max(0.0, timeout)
            self._waiting[me] = (deadline, event)
            try:
                while True:
                    if event is not None and event.is_set():
                        return True
                    if self.now >= deadline:
                        return False
                    self._cond.wait(POLL)
                    self._advance()
            finally:
                del self._waiting[me]

    def sleep(self, seconds: float) -> None:
        self.wait(None, seconds)

    def _advance(self) -> None:
        """Under the lock: to the nearest deadline, if every thread of the clock waits and none was woken."""
        if any(t.is_alive() and t not in self._waiting for t in self._threads):
            return
        if any(e is not None and e.is_set() for _, e in self._waiting.values()):
            return
        nearest = min((d for d, _ in self._waiting.values()), default=math.inf)
        if self.now < nearest < math.inf:
            self.now = nearest
            self._cond.notify_all()
