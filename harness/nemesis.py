"""The nemesis: applies a planned schedule to a cluster, each fault on its own timeline.

Each fault kind (faults/kinds/) says how it is applied to one broker and healed: network
faults add a Toxiproxy toxic to that broker's proxy or disable proxies, broker faults act
on the broker itself through the cluster. A dispatcher thread starts one thread per fault
at its planned time; that thread applies the fault, holds it for its planned duration from
the moment it took effect, then heals it. So a broker that takes 20 s to start again delays
nothing but faults on that same broker.

A broker fault acts only on a running broker (each broker is running, paused, down or
starting; see cluster/base.py): one due on a broker that is not running waits until it
is, and a leader-of/follower-of target waits until a running broker holds that role.
The plan's overlap rule (schedule.py) makes that wait rare; when it happens the journal
says so.

A leader-of/follower-of target is resolved ahead of its planned time: its thread starts
AHEAD seconds early and looks the role up every REFRESH seconds until the fault is due, so
at the planned time it acts on a recent answer instead of asking the brokers then (a
metadata round trip on a loaded machine took up to 0.4 s, making a leader kill late).

Workload faults (on the producer or the consumer group; target "workload") have no broker: the nemesis asks
the workload through WorkloadFaults (faults/channel.py: the produce loop between two sends, the consumer
group's supervisor on its thread) for what the kind names (its `serve`), and waits until it has applied the
fault, so applied_at is when it took effect. Each workload serves what it can be asked from its own table.

When the workload ends, finish() (the run's before_flush) still applies the faults due: it waits for every
fault not yet applied until GRACE past its planned time, the produce loop serving its faults meanwhile
(WorkloadFaults.idle), and only then stops; a fault that was not applied by then is journaled not-reached
(and the variant's verdict is unknown: verdict.plan_checks).

faults.jsonl, one line per fault and variant, sorted by id: the plan (id, kind, target,
planned_at, planned_duration, params), then what happened: outcome, applied_at / healed_at
(wall clock), applied_offset / healed_offset (seconds after the workload started; healing
starts at healed_offset and took heal_s), the brokers hit, late_s (applied_offset -
planned_at) and held_s (healed_offset - applied_offset). A fault is applied when it took effect: for a
broker kill, when SIGKILL was sent (the broker runs no more), not when its process was reaped; for a graceful
restart, when SIGTERM was sent (its controlled shutdown begins). Every fault's
thread starts before it is due (WAKE, or AHEAD for role targets) and waits for its planned time itself. A fault applied more than
TOLERANCE late or held more than TOLERANCE short gets a `deviation` text, and
`warnings` lists each as one line for the run's summary.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone

from .clock import REAL, Clock
from .faults.channel import NotReached, WorkloadFaults
from .faults.registry import KINDS
from .formats import FaultOutcome
from .schedule import ROLE_TARGETS, AllBrokers, Broker, FollowerOf, PlannedFault, Workload

TOLERANCE = 0.25  # seconds a fault may be late or short before it is marked
RETRY = 0.2  # seconds between looks for a target that is not there yet
AHEAD = 2.0  # seconds before its planned time a role target starts being looked up
WAKE = 0.5  # seconds before its planned time any other fault's thread starts (and then waits to be due)
REFRESH = 0.25  # seconds between those look-ups: the answer used at the planned time is at most this old
GRACE = 2.0  # seconds past its planned time a fault not yet applied is waited for once the workload ended
TICK = 0.02  # seconds between two looks at the faults still due while the nemesis finishes


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Nemesis:
    def __init__(self, cluster, schedule: list[PlannedFault], variant: str,
                 journal: Callable[[list[dict]], None], topic: str, clock: Clock = REAL):
        """journal: writes the variant's fault lines to faults.jsonl (RunFolder.append_faults)."""
        self.cluster = cluster
        self.clock = clock
        self.schedule = schedule
        self.variant = variant
        self.journal = journal
        self.topic = topic
        self._stop = threading.Event()
        self._dispatcher: threading.Thread | None = None
        self._threads: list[threading.Thread] = []
        self._records: dict[int, dict] = {}  # fault id -> what happened; each written by its fault's thread only
        self._journaled = False
        self.errors: list[str] = []
        self._t0 = 0.0
        self.workload = WorkloadFaults(self._stop, clock)  # served by the produce loop

    # -- the run's side ----------------------------------------------------------------
    def start(self) -> None:
        self._t0 = self.clock.monotonic()
        self._dispatcher = self.clock.start_thread(self._dispatch, f"nemesis-{self.variant}")

    def finish(self, halt: threading.Event | None = None) -> None:
        """The workload ended (or its producer is about to flush): apply the faults still due, then stop().

        Each fault not yet applied is waited for until GRACE seconds past its planned time, the latest such
        time bounding the wait (never longer: a fault whose target never came back is then not-reached);
        meanwhile the workload's idle server (WorkloadFaults.idle), when it left one, applies the workload
        faults asked for, as its loop did. Faults already applied are held until the wait ends, then healed.
        `halt` (the run's stop: a broker died, the run is ending) cuts the wait short."""
        if self._dispatcher is not None and not self._stop.is_set():
            pending = [f for f in self.schedule if "outcome" not in self._records.get(f.id, {})]
            deadline = max((f.at for f in pending), default=0.0) + GRACE
            while pending and self._offset() < deadline and not (halt is not None and halt.is_set()):
                if self.workload.pending and self.workload.idle is not None:
                    self.workload.idle()
                self.clock.wait(halt, TICK)
                pending = [f for f in pending if "outcome" not in self._records.get(f.id, {})]
        self.stop()

    def stop(self) -> None:
        """Stop applying faults, heal whatever is active, and journal every fault of the variant (once)."""
        self._stop.set()
        if self._dispatcher is not None:
            self._dispatcher.join()
        for thread in self._threads:  # each heals its own fault as soon as it sees the stop
            thread.join()
        if self._journaled:
            return
        self._journaled = True
        for fault in self.schedule:
            self._records.setdefault(fault.id, {"outcome": FaultOutcome.NOT_REACHED})
        self.journal([{"variant": self.variant, **fault.to_json(), **self._records[fault.id]}
                            for fault in self.schedule])

    @property
    def warnings(self) -> list[str]:
        """One line per fault applied late, held short or never applied while due (after stop())."""
        return [f"{self.variant}: {fault} {self._records[fault.id]['deviation']}" for fault in self.schedule
                if "deviation" in self._records.get(fault.id, {})]

    # -- the timelines -------------------------------------------------------------------
    def _offset(self) -> float:
        return self.clock.monotonic() - self._t0

    @staticmethod
    def _start_at(fault: PlannedFault) -> float:
        """When the fault's thread starts: role targets AHEAD early, to resolve them before they are due; any
        other WAKE early, so starting a thread on a loaded machine does not make it late."""
        return max(0.0, fault.at - (AHEAD if isinstance(fault.target, ROLE_TARGETS) else WAKE))

    def _dispatch(self) -> None:
        for fault in sorted(self.schedule, key=lambda f: (self._start_at(f), f.id)):
            if self.clock.wait(self._stop, max(0.0, self._start_at(fault) - self._offset())):
                return
            self._threads.append(self.clock.start_thread(self._hold, f"fault-{fault.id}", (fault,)))

    def _hold(self, fault: PlannedFault) -> None:
        """Apply one fault, hold it for its duration (or until stop), heal it, and record all of it."""
        rec: dict = {}
        kind = KINDS[fault.kind]
        brokers, waited = self._targets(fault)
        if brokers is None and self._offset() < fault.at:
            return  # stopped before it was due (resolving ahead): not-reached, as a fault never dispatched
        self._records[fault.id] = rec
        if brokers is None:
            rec.update(outcome=FaultOutcome.NOT_REACHED,
                       deviation=f"due at {fault.at:g} s but never applied before the workload ended: {waited}")
            return
        if brokers:
            rec["brokers"] = brokers
        took_effect = []  # when an action says it took effect before it returned (a kill, before the reaping)
        try:
            if kind.on_workload:
                self.workload.ask(kind.serve, "apply", fault.params, fault.kind)
            for broker in brokers:
                done = kind.apply(self.cluster, broker, self._name(fault), fault.params, self.topic)
                if isinstance(done, dict):
                    effect = {k: v for k, v in done.items() if k != "took_effect"}
                    rec.setdefault("effect", {})[str(broker)] = effect
                    done = done.get("took_effect")
                took_effect.append(done)
        except NotReached as e:
            rec.update(outcome=FaultOutcome.NOT_REACHED, deviation=f"due at {fault.at:g} s but never applied: {e}")
            return
        except Exception as e:  # journaled: a fault that failed must never pass as applied
            rec.update(outcome=FaultOutcome.FAILED, error=f"{type(e).__name__}: {e}")
            self.errors.append(f"fault {fault.id} ({fault.kind}): {rec['error']}")
            return
        applied = self._offset()
        if took_effect and all(isinstance(t, float) for t in took_effect):
            applied = min(applied, max(took_effect) - self._t0)
        rec.update(outcome=FaultOutcome.APPLIED, applied_at=_now(), applied_offset=round(applied, 3),
                   late_s=round(applied - fault.at, 3))
        cut_short = self.clock.wait(self._stop, max(0.0, applied + fault.duration - self._offset()))
        healing = self._offset()
        rec.update(healed_at=_now(), healed_offset=round(healing, 3), held_s=round(healing - applied, 3))
        try:
            if kind.on_workload:  # the workload's table says whether it heals
                try:
                    self.workload.ask(kind.serve, "heal", fault.params, fault.kind)
                except NotReached:
                    pass  # the workload ended: the produce loop healed it itself (a paused producer resumes)
            for broker in brokers:
                found = kind.heal(self.cluster, broker, self._name(fault), fault.params, self.topic)
                if isinstance(found, dict):
                    rec.setdefault("effect", {}).setdefault(str(broker), {}).update(found)
            rec.update(outcome=FaultOutcome.HEALED, heal_s=round(self._offset() - healing, 3))
        except Exception as e:
            rec.update(outcome=FaultOutcome.FAILED, error=f"heal: {type(e).__name__}: {e}")
            self.errors.append(f"fault {fault.id} ({fault.kind}): {rec['error']}")
        deviation = []
        if rec["late_s"] > TOLERANCE:
            deviation.append(f"applied {rec['late_s']:.2f} s late" + (f" ({waited})" if waited else ""))
        if fault.duration - rec["held_s"] > TOLERANCE:
            deviation.append(f"held {rec['held_s']:.2f} s of {fault.duration:g} s"
                             + (" (cut short: the workload ended)" if cut_short else ""))
        if deviation:
            rec["deviation"] = "; ".join(deviation)

    def _targets(self, fault: PlannedFault) -> tuple[list[int] | None, str]:
        """The brokers to act on, once each can take the fault; (None, why) if the workload ended first.

        The second value says what was waited for ("" when nothing was)."""
        waited = ""
        target = fault.target
        if isinstance(target, (Workload, AllBrokers, Broker)):
            if self.clock.wait(self._stop, max(0.0, fault.at - self._offset())):  # started WAKE early: wait until due
                return None, waited
        if isinstance(target, Workload):
            return [], waited
        if isinstance(target, AllBrokers):
            brokers = list(range(self.cluster.broker_count))
        elif isinstance(target, Broker):
            brokers = [target.index]
        else:
            ahead = self._resolve_ahead(fault)
            if ahead is None:
                return None, waited
            ahead = ahead if isinstance(ahead, int) else None  # a failed look-up is tried again now
            brokers = None
            while brokers is None:
                try:
                    broker = ahead if isinstance(ahead, int) else self._role(target)
                    state = self.cluster.broker_state(broker)
                    if state == "running":
                        brokers = [broker]
                    else:
                        waited = f"{target} was broker {broker}, {state}"
                except (LookupError, RuntimeError) as e:  # no leader yet, no metadata yet (InfraError)
                    waited = f"{target}: {e}"
                ahead = None  # the answer from ahead is used once; after that, look again each time
                if brokers is None and self.clock.wait(self._stop, RETRY):
                    return None, waited
        if KINDS[fault.kind].holds == "broker":
            for broker in brokers:
                if self.cluster.broker_state(broker) != "running":
                    waited = f"broker {broker} was {self.cluster.broker_state(broker)}"
                    if not self.cluster.wait_running(broker, self._stop):
                        return None, waited
        return brokers, waited

    def _resolve_ahead(self, fault: PlannedFault) -> int | Exception | None:
        """Look the fault's role target up until it is due, every REFRESH seconds; returns, at the planned
        time, the last answer (a broker, or the error of the last look-up); None when stopped before.

        No look-up starts that would end after the planned time (each is assumed to take as long as the
        last one), so the answer used is at most REFRESH plus one look-up old, and never makes it late."""
        while True:
            started = self._offset()
            try:
                answer: int | Exception = self._role(fault.target)
            except (LookupError, RuntimeError) as e:
                answer = e
            took = self._offset() - started
            left = fault.at - self._offset()
            if left <= 0:
                return answer
            last = left <= REFRESH + took  # the next look-up would end after the fault is due
            if self.clock.wait(self._stop, left if last else REFRESH):
                return None
            if last:
                return answer

    def _role(self, target) -> int:
        assert isinstance(target, ROLE_TARGETS)
        if isinstance(target, FollowerOf):
            return self.cluster.follower_of(self.topic, target.partition)
        return self.cluster.leader_of(self.topic, target.partition)

    def _name(self, fault: PlannedFault) -> str:
        return f"{fault.kind}-{fault.id}"
