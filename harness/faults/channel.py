"""The channel between the nemesis and a workload: the nemesis asks a workload fault of it, the workload applies
it between two of its own steps (the produce loop between two sends, the consumer group's supervisor on its
thread) and answers.

A workload serves what it can be asked from a table (FaultTable) keyed by what it is asked to do: the verbs
below. A workload fault kind (faults/kinds/) names its verb; which workload serves a verb, and how, is that
workload's table alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..clock import REAL, Clock

# What a workload can be asked to do. The producer's (workload/producer.py, transactional.py):
RESTART_PRODUCER = "restart-producer"  # close it without flushing, start a new instance
PAUSE_PRODUCER = "pause-producer"  # freeze the instance, a second one takes over; healed: the first resumes
# The consumer group's (workload/consumers.py):
KILL_MEMBER = "kill-member"  # SIGKILL a member; healed: its replacement starts
PAUSE_MEMBER = "pause-member"  # SIGSTOP a member; healed: SIGCONT
STORM_MEMBERS = "storm-members"  # members join and leave in turn; healed: those still in leave

# verb -> (apply, heal), each called with the fault's settings; heal None when the fault is over once applied (a
# producer restart). The nemesis asks for both steps of every workload fault.
FaultTable = dict[str, tuple[Callable[[dict], None], Callable[[dict], None] | None]]


class NotReached(Exception):
    """A workload fault asked for after the workload ended (nothing was done)."""


class _Ask:
    def __init__(self, verb: str, step: str, params: dict | None = None):
        self.verb, self.step, self.params = verb, step, params or {}  # step: "apply" or "heal"
        self.state = "asked"  # -> "applying" (the loop has it) or "withdrawn"
        self.done = threading.Event()
        self.error: BaseException | None = None


class WorkloadFaults:
    """The channel between the nemesis (asks) and the workload (applies, between two of its steps).

    ask() blocks its fault's thread until the workload has acted; when the workload ends first (the
    nemesis is stopping) an ask the workload has not taken is withdrawn and raises NotReached. `pending`
    is a plain attribute so the produce loop's check costs nothing when no fault is asked for.
    """

    def __init__(self, stop: threading.Event, clock: Clock = REAL):
        self._stop, self._clock = stop, clock
        self._lock = threading.Lock()
        self._asks: list[_Ask] = []
        self.pending = False
        # Set by a workload whose loop has ended but whose thread waits for the nemesis to finish (the produce
        # loop before its flush): serves the asks in that thread, as the loop did (Nemesis.finish calls it).
        self.idle: Callable[[], None] | None = None

    def ask(self, verb: str, step: str, params: dict | None = None, what: str = "") -> None:
        """`what` names the fault in the NotReached message (its kind; the verb by default)."""
        ask = _Ask(verb, step, params)
        with self._lock:
            self._asks.append(ask)
            self.pending = True
        while not self._clock.wait(ask.done, 0.02):
            if self._stop.is_set():
                with self._lock:
                    if ask.state == "asked":  # the loop never took it: it will not
                        ask.state = "withdrawn"
                        self._asks.remove(ask)
                        self.pending = bool(self._asks)
                        raise NotReached(f"{what or verb} ({step}): the workload ended first")
        if ask.error is not None:
            raise ask.error

    def serve(self, table: FaultTable) -> None:
        """The workload's side: for every ask of a verb in its table, in order, the table's apply or heal
        (with the fault's settings); a verb that needs no heal has None there. An error of an action is the
        nemesis's (the fault failed) and is raised here too, after every ask is answered."""
        with self._lock:
            asks = [a for a in self._asks if a.verb in table]
            self._asks = [a for a in self._asks if a not in asks]
            self.pending = bool(self._asks)
            for ask in asks:
                ask.state = "applying"
        first: BaseException | None = None
        for ask in asks:
            try:
                action = table[ask.verb][0 if ask.step == "apply" else 1]
                if action is not None:
                    action(ask.params)
            except BaseException as e:
                ask.error = e
                first = first or e
            finally:
                ask.done.set()
        if first is not None:
            raise first
