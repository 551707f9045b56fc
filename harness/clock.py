"""Time, for the code whose threads keep a timeline: the nemesis, the workload-fault channel and the
consumer group's supervisor. They read the time, wait and start their threads through a Clock.

REAL is the machine's clock. Tests give them a virtual one (tests/fakeclock.py), so what they
check about timing (a fault applied on time, held its duration, a storm every interval) does not
depend on how loaded the machine is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Clock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, event: threading.Event | None, timeout: float | None) -> bool:
        """Until `event` is set (True) or `timeout` seconds passed (False); without an event, a sleep."""
        if event is None:
            time.sleep(timeout)
            return False
        return event.wait(timeout)

    def start_thread(self, target: Callable, name: str, args: tuple = ()) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        return thread


REAL = Clock()
