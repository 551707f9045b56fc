"""The nemesis: applies a planned schedule to a cluster, each fault on its own timeline.

FAULTS maps each fault kind to an (apply, heal) pair acting on one broker: network
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

Workload faults (producer-restart, producer-pause, and the consumer group's consumer-kill,
consumer-pause, rebalance-storm; target "workload") have no broker: the nemesis asks the workload
through WorkloadFaults (the produce loop between two sends, the consumer group's supervisor on its
thread) and waits until it has applied the fault, so applied_at is when it took effect. Each workload serves
its kinds from its own table (FaultTable below): adding a workload fault is a line in that table and the kind
in the spec's schema.

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
from dataclasses import dataclass
from datetime import datetime, timezone

from ..clock import REAL, Clock
from ..formats import FaultOutcome
from ..spec import BROKER_FAULTS, KAFKA_REQUESTS, LINK_FAULTS, WORKLOAD_FAULTS
from .stray import stray_produce
from .schedule import ROLE_TARGETS, AllBrokers, Broker, FollowerOf, PlannedFault, Workload

TOLERANCE = 0.25  # seconds a fault may be late or short before it is marked
RETRY = 0.2  # seconds between looks for a target that is not there yet
AHEAD = 2.0  # seconds before its planned time a role target starts being looked up
WAKE = 0.5  # seconds before its planned time any other fault's thread starts (and then waits to be due)
REFRESH = 0.25  # seconds between those look-ups: the answer used at the planned time is at most this old
GRACE = 2.0  # seconds past its planned time a fault not yet applied is waited for once the workload ended
TICK = 0.02  # seconds between two looks at the faults still due while the nemesis finishes


@dataclass(frozen=True)
class FaultAction:
    # (cluster, broker index, toxic name, params, the variant's topic) -> None, the monotonic time it took
    # effect, or a dict of what it did (journaled as the fault's "effect") with that time as "took_effect"
    apply: Callable
    heal: Callable  # the same arguments; may return a dict of what it found, journaled with the fault's "effect"


def _toxic(type: str, attributes: Callable[[dict], dict], stream: str = "downstream") -> FaultAction:
    """A Toxiproxy toxic; `stream` is upstream (requests) or downstream (responses), or for a fault with a
    `stream` setting, what it names."""
    def apply(cluster, broker, name, params, topic):
        on = {"requests": "upstream", "responses": "downstream"}.get(params.get("stream"), stream)
        cluster.toxiproxy().add_toxic(cluster.proxy_name(broker), name, type=type, stream=on,
                                      attributes=attributes(params))

    def heal(cluster, broker, name, params, topic):
        cluster.toxiproxy().remove_toxic(cluster.proxy_name(broker), name)

    return FaultAction(apply, heal)


def _hold_requests() -> FaultAction:
    """One kafka_hold toxic (the embedded proxy's own) per request type named, on the client's stream."""
    def apply(cluster, broker, name, params, topic):
        for request in params["requests"]:
            cluster.toxiproxy().add_toxic(cluster.proxy_name(broker), f"{name}-{request}", type="kafka_hold",
                                          stream="upstream", attributes={"api_key": KAFKA_REQUESTS[request],
                                                                         "hold": params["hold_ms"],
                                                                         "drop": int(params["drop"]),
                                                                         "gap": params.get("gap_ms", 0)})

    def heal(cluster, broker, name, params, topic):  # requests held already are still delivered when due
        proxy = cluster.proxy_name(broker)
        counts = cluster.toxiproxy().kafka_requests(proxy)
        for request in params["requests"]:
            cluster.toxiproxy().remove_toxic(proxy, f"{name}-{request}")
        mine = [counts["toxics"].get(f"{name}-{request}", {}) for request in params["requests"]]
        # what this fault's toxics held and dropped; unparsed: streams this proxy could not follow, so far
        return {"kafka_requests": {"held": sum(c.get("held", 0) for c in mine),
                                   "dropped": sum(c.get("dropped", 0) for c in mine),
                                   "unparsed": counts["unparsed"]}}

    return FaultAction(apply, heal)


def _link(kind: str) -> FaultAction:
    return FaultAction(lambda c, b, n, p, t: c.link_fault(b, n, kind, p), lambda c, b, n, p, t: c.heal_link(b, n, kind))


FAULTS: dict[str, FaultAction] = {
    # Responses are dropped while requests still reach the broker, and the connection is cut
    # cut_after_ms after the last one or when the fault ends (Toxiproxy's timeout toxic):
    # every request in flight is written but its ack never arrives.
    "lost-acks": _toxic("timeout", lambda p: {"timeout": p["cut_after_ms"]}),
    # The same on the way in: requests are held and never reach the broker, then the connection is cut.
    "lost-requests": _toxic("timeout", lambda p: {"timeout": p["cut_after_ms"]}, stream="upstream"),
    "reset-connections": _toxic("reset_peer", lambda p: {"timeout": 0}),
    "latency": _toxic("latency", lambda p: {"latency": p["latency_ms"], "jitter": p["jitter_ms"]}),
    "bandwidth": _toxic("bandwidth", lambda p: {"rate": p["rate_kbps"]}),
    "slow-close": _toxic("slow_close", lambda p: {"delay": p["delay_ms"]}),
    "delay-requests": _hold_requests(),
    "partition": FaultAction(lambda c, b, n, p, t: c.cut([c.proxy_name(b)]),
                             lambda c, b, n, p, t: c.reconnect([c.proxy_name(b)])),
    "isolate": FaultAction(lambda c, b, n, p, t: c.isolate_broker(b, p.get("direction", "both")),
                           lambda c, b, n, p, t: c.rejoin_broker(b)),
    # On the packets of the broker's link, each way (network namespaces: cluster/netns.py).
    **{kind: _link(kind) for kind in LINK_FAULTS},
    "broker-pause": FaultAction(lambda c, b, n, p, t: c.pause_broker(b), lambda c, b, n, p, t: c.resume_broker(b)),
    "broker-kill": FaultAction(lambda c, b, n, p, t: c.kill_broker(b), lambda c, b, n, p, t: c.start_broker(b)),
    # A kill that also cuts what only the page cache held (cluster/segments.py); the cut is journaled.
    "lose-unflushed": FaultAction(lambda c, b, n, p, t: c.lose_unflushed(b, t, p.get("drop_batches")),
                                  lambda c, b, n, p, t: c.start_broker(b)),
    "broker-restart": FaultAction(lambda c, b, n, p, t: c.stop_broker(b), lambda c, b, n, p, t: c.start_broker(b)),
    # A client of the harness's own writes to the partition's leader (faults/stray.py); nothing to heal.
    "stray-produce": FaultAction(lambda c, b, n, p, t: stray_produce(c.client, c.endpoints[b], t, p["partition"],
                                                                     p["records"], c.files.stray_log),
                                 lambda c, b, n, p, t: None),
}


# What a workload serves: fault kind -> (apply, heal), each called with the fault's settings; heal None when
# the fault is over once applied (a producer restart). The nemesis asks for both steps of every workload
# fault; which workload serves a kind, and how, is that workload's table alone.
FaultTable = dict[str, tuple[Callable[[dict], None], Callable[[dict], None] | None]]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class NotReached(Exception):
    """A workload fault asked for after the workload ended (nothing was done)."""


class _Ask:
    def __init__(self, kind: str, step: str, params: dict | None = None):
        self.kind, self.step, self.params = kind, step, params or {}  # step: "apply" or "heal"
        self.state = "asked"  # -> "applying" (the loop has it) or "withdrawn"
        self.done = threading.Event()
        self.error: BaseException | None = None


class WorkloadFaults:
    """The channel between the nemesis (asks) and the produce loop (applies, between two sends).

    ask() blocks its fault's thread until the loop has acted; when the workload ends first (the
    nemesis is stopping) an ask the loop has not taken is withdrawn and raises NotReached. `pending`
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

    def ask(self, kind: str, step: str, params: dict | None = None) -> None:
        ask = _Ask(kind, step, params)
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
                        raise NotReached(f"{kind} ({step}): the workload ended first")
        if ask.error is not None:
            raise ask.error

    def serve(self, table: "FaultTable") -> None:
        """The workload's side: for every ask of a kind in its table, in order, the table's apply or heal
        (with the fault's settings); a kind that needs no heal has None there. An error of an action is the
        nemesis's (the fault failed) and is raised here too, after every ask is answered."""
        with self._lock:
            asks = [a for a in self._asks if a.kind in table]
            self._asks = [a for a in self._asks if a not in asks]
            self.pending = bool(self._asks)
            for ask in asks:
                ask.state = "applying"
        first: BaseException | None = None
        for ask in asks:
            try:
                action = table[ask.kind][0 if ask.step == "apply" else 1]
                if action is not None:
                    action(ask.params)
            except BaseException as e:
                ask.error = e
                first = first or e
            finally:
                ask.done.set()
        if first is not None:
            raise first


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
            if fault.kind in WORKLOAD_FAULTS:
                self.workload.ask(fault.kind, "apply", fault.params)
            for broker in brokers:
                done = FAULTS[fault.kind].apply(self.cluster, broker, self._name(fault), fault.params, self.topic)
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
            if fault.kind in WORKLOAD_FAULTS:  # the workload's table says whether it heals
                try:
                    self.workload.ask(fault.kind, "heal", fault.params)
                except NotReached:
                    pass  # the workload ended: the produce loop healed it itself (a paused producer resumes)
            for broker in brokers:
                found = FAULTS[fault.kind].heal(self.cluster, broker, self._name(fault), fault.params, self.topic)
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
        if fault.kind in BROKER_FAULTS:
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
