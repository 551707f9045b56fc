"""The fault schedule: a pure function of (spec, seed), computed before any variant runs.

Toxiproxy's own randomness cannot be replayed, so the harness decides every fault
itself: what, where, when and for how long. Every variant gets the same list.

Targets are typed values (AllBrokers, Broker, LeaderOf, FollowerOf, Workload); `random` is
drawn here, leader-of and follower-of are looked up when the fault starts. In faults.jsonl a
target is written as in the experiment file: "all", {"broker": N}, {"leader-of": P}, "workload"
(a fault on the producer or the consumer group, not on a broker).

**The overlap rule** (the faults that hold a broker: faults/kind.py `holds`). Each
broker is in one state at a time (running, paused, down, starting), so the plan refuses
two broker faults that could meet on one broker; `check_overlaps` names both. A broker
fault holds its broker from its start until the broker runs again: its duration, plus
START_ALLOWANCE seconds after a kill or restart for the broker to come back. A fault
that starts while an earlier one holds its broker could meet it when
- both name the same broker, or either targets all brokers, or the earlier one is a
  leader-of/follower-of fault and the later names a broker (it may be the same one); or
- the later one targets leader-of/follower-of and the earlier one is a pause: a frozen
  leader stays leader in the metadata until its session times out. This holds for a later
  fault of any kind (an isolation, a latency), not only one that holds a broker: the nemesis
  waits for a running broker in the role, so the fault would start late, or never.
A leader-of/follower-of target never acts on a broker that is down or starting: the nemesis
waits until a running broker holds the role. It may follow a kill: "the leader once the
killed one is gone" is a schedule worth writing. But a killed leader, too, stays leader in
the metadata until the controller fences it (its session, broker.session.timeout.ms, 9 s by
default, or its restart), so such a fault may start late, or never when the workload ends
first (exploring `kafka-java.yaml`, seed 2, 2026-11-29: a leader's unflushed writes lost and
the leader killed at 0.4-0.6 s, an isolation of the leader due at 1.1 or 2.9 s and never
applied; 2 tries of 63); faults.jsonl says so and the run is unknown, never a pass. If a broker takes longer
than the allowance to start, the nemesis applies the next fault on it once it runs, and
faults.jsonl marks that fault late.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

from pydantic import TypeAdapter, ValidationError

from .exits import UsageError
from .faults.kind import WORKLOAD_TARGET, BrokerTarget, FollowerTarget, LeaderTarget
from .faults.registry import KINDS, Fault
from .formats import json_object
from .schema import MAX_FAULTS_PER_SECOND
from .spec import MAX_FAULTS, ExperimentSpec

_TIMING = {"kind", "at", "every", "jitter", "start", "duration", "downtime", "target"}
# Seconds a killed or restarted broker may take to run again, for the overlap rule (measured: a
# Kafka node restarts in 5-8 s on 2 cores while its peers run; Tansu in well under a second).
START_ALLOWANCE = {"tansu": 2.0, "kafka": 20.0}


@dataclass(frozen=True)
class AllBrokers:
    def to_json(self):
        return "all"

    def __str__(self) -> str:
        return "all brokers"


@dataclass(frozen=True)
class Broker:
    index: int

    def to_json(self):
        return {"broker": self.index}

    def __str__(self) -> str:
        return f"broker {self.index}"


@dataclass(frozen=True)
class LeaderOf:
    """The broker leading this partition of the variant's topic when the fault starts."""

    partition: int

    def to_json(self):
        return {"leader-of": self.partition}

    def __str__(self) -> str:
        return f"the leader of partition {self.partition}"


@dataclass(frozen=True)
class FollowerOf:
    """An in-sync replica of this partition that is not its leader, when the fault starts."""

    partition: int

    def to_json(self):
        return {"follower-of": self.partition}

    def __str__(self) -> str:
        return f"a follower of partition {self.partition}"


@dataclass(frozen=True)
class Workload:
    """The variant's workload: its producer, the produce loop applying the fault, or its consumer group, its
    supervisor applying it (the kinds whose `acts_on` is producer or consumer)."""

    def to_json(self):
        return WORKLOAD_TARGET

    def __str__(self) -> str:
        return "the workload"


Target = Union[AllBrokers, Broker, LeaderOf, FollowerOf, Workload]
ROLE_TARGETS = (LeaderOf, FollowerOf)  # resolved from the metadata when the fault starts
LEGACY_TARGET = re.compile(r"(broker|leader-of)-\d+")


def target_from_json(value, brokers: int, partitions: int) -> Target:
    """The target as faults.jsonl writes it; ValueError when this experiment has no such broker or partition."""
    if isinstance(value, str) and LEGACY_TARGET.fullmatch(value):  # runs recorded before targets were typed
        key, _, n = value.rpartition("-")
        value = {key: int(n)}
    if value == "all":
        return AllBrokers()
    if value == WORKLOAD_TARGET:
        return Workload()
    if isinstance(value, dict) and len(value) == 1:
        (key, n), = value.items()
        kinds = {"broker": (Broker, brokers), "leader-of": (LeaderOf, partitions), "follower-of": (FollowerOf, partitions)}
        if key in kinds and isinstance(n, int) and not isinstance(n, bool) and 0 <= n < kinds[key][1]:
            return kinds[key][0](n)
    raise ValueError(f"target {json.dumps(value)} does not exist in this experiment")


@dataclass(frozen=True)
class PlannedFault:
    id: int
    kind: str
    target: Target
    at: float  # seconds after the workload starts
    duration: float
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "target": self.target.to_json(), "planned_at": self.at,
                "planned_duration": self.duration, "params": self.params}

    def __str__(self) -> str:
        return f"fault {self.id} ({self.kind} of {self.target}, {self.at:g}-{self.at + self.duration:g} s)"


class ScheduleError(UsageError, ValueError):
    """A schedule that cannot be used (overlapping broker faults, a bad faults.jsonl): exit 2; str() says why."""


def plan(spec: ExperimentSpec, seed: int) -> list[PlannedFault]:
    """Every fault of the experiment in time order; ScheduleError when two broker faults could meet."""
    out: list[tuple[float, int, str, Target, float, dict]] = []
    window = spec.planning_window
    for index, fault in enumerate(spec.faults):
        # One generator per fault entry: editing one entry does not move the others.
        rng = random.Random(f"{seed}/{index}")
        if fault.at is not None:
            times = [fault.at]
        else:
            times, t = [], fault.start
            while t < window:
                times.append(round(max(0.0, t + rng.uniform(-fault.jitter, fault.jitter)), 3))
                t += fault.every
        params = fault.model_dump(exclude=_TIMING)
        for at in times:
            out.append((at, index, fault.kind, _target(fault.target, spec.cluster.brokers, rng), fault.duration, params))
    out.sort(key=lambda f: (f[0], f[1]))
    schedule = [PlannedFault(i, kind, target, at, dur, params)
                for i, (at, _, kind, target, dur, params) in enumerate(out)]
    check_rate(schedule, "faults")
    check_overlaps(schedule, START_ALLOWANCE[spec.cluster.broker], f"seed {seed}", _members(spec))
    return schedule


def check_rate(schedule: list[PlannedFault], origin: str) -> None:
    """At most MAX_FAULTS_PER_SECOND faults start within any one second (each runs on its own thread)."""
    times = sorted(f.at for f in schedule)
    first = 0
    for last, t in enumerate(times):
        while t - times[first] >= 1.0:
            first += 1
        if last - first + 1 > MAX_FAULTS_PER_SECOND:
            raise ScheduleError(f"{origin}: {last - first + 1} faults start between {times[first]:g} s and {t:g} s; "
                                f"at most {MAX_FAULTS_PER_SECOND} may start within one second")


def _target(target, brokers: int, rng: random.Random) -> Target:
    if isinstance(target, BrokerTarget):
        return Broker(target.broker)
    if isinstance(target, LeaderTarget):
        return LeaderOf(target.leader_of)
    if isinstance(target, FollowerTarget):
        return FollowerOf(target.follower_of)
    if target == "random":
        return Broker(rng.randrange(brokers))
    if target == WORKLOAD_TARGET:
        return Workload()
    return AllBrokers()


def held_until(fault: PlannedFault, allowance: float) -> float:
    """When a broker fault's broker runs again, as far as the plan can tell."""
    return fault.at + fault.duration + (allowance if KINDS[fault.kind].stops_broker else 0.0)


def could_meet(earlier: PlannedFault, later: PlannedFault) -> bool:
    """Could `later`, starting while `earlier` holds its broker, pick that same broker? (see the module doc)"""
    a, b = earlier.target, later.target
    if isinstance(a, AllBrokers) or isinstance(b, AllBrokers):
        return True
    if isinstance(b, ROLE_TARGETS):  # refused after a pause only; after a kill it waits (the module doc)
        return not KINDS[earlier.kind].stops_broker
    if isinstance(a, ROLE_TARGETS):
        return True
    return a == b


def overlaps(schedule: list[PlannedFault], allowance: float) -> list[tuple[PlannedFault, PlannedFault]]:
    """Pairs (earlier, later) of faults the cluster could not take as planned: two broker faults that could
    meet, or a broker fault and a later fault of another kind that picks its broker by role while the first
    still holds one a role may name (only a pause: see could_meet)."""
    broker_faults = held(schedule, "broker")
    by_role = [f for f in schedule if KINDS[f.kind].holds != "broker" and isinstance(f.target, ROLE_TARGETS)]
    pairs = [(a, b) for i, a in enumerate(broker_faults) for b in broker_faults[i + 1:]
             if b.at < held_until(a, allowance) and could_meet(a, b)]
    return pairs + [(a, b) for a in broker_faults for b in by_role if a.at <= b.at < held_until(a, allowance)
                    and could_meet(a, b)]


def _members(spec: ExperimentSpec) -> int | None:
    """The fewest members of a variant's consumer group (None without groups)."""
    groups = [g for g in (spec.consumer_spec(v) for v in spec.variants) if g is not None]
    return min(g.members for g in groups) if groups else None


def held(schedule: list[PlannedFault], what: str) -> list[PlannedFault]:
    """The faults that hold `what` (a broker, a member, the producer, a link's queue) until they heal, in time
    order."""
    return sorted((f for f in schedule if KINDS[f.kind].holds == what), key=lambda f: (f.at, f.id))


def check_overlaps(schedule: list[PlannedFault], allowance: float, origin: str, members: int | None = None) -> None:
    members_held = held(schedule, "member")  # a member down or frozen until the fault heals
    for i, f in enumerate(members_held):  # each needs a running member to act on: no more at once than the group has
        meanwhile = [g for g in members_held[:i] if g.at + g.duration > f.at]
        if members is not None and len(meanwhile) >= members:
            raise ScheduleError(f"faults ({origin}): {f} starts while {len(meanwhile)} member(s) are still held "
                                f"({meanwhile[0]}{', ...' if len(meanwhile) > 1 else ''}) and the group has "
                                f"{members}: it would find no running member; move one of them or add members")
    pauses = held(schedule, "producer")
    for a, b in zip(pauses, pauses[1:]):  # one paused producer at a time: it resumes before the next pause
        if b.at < a.at + a.duration:
            raise ScheduleError(f"faults ({origin}): {b} starts while {a} still holds the paused producer; "
                                f"one {a.kind} at a time: move one of them (at, start, every, duration)")
    queued = held(schedule, "link queue")  # a netfilter queue (cluster/netns.py): one per link at a time
    for i, a in enumerate(queued):  # the first queue rule a packet meets is its last: a second would never see it
        for b in queued[i + 1:]:
            if b.at < a.at + a.duration and not (isinstance(a.target, Broker) and isinstance(b.target, Broker)
                                                 and a.target != b.target):  # a role may name any broker
                queues = " or ".join(sorted(k for k, x in KINDS.items() if x.holds == "link queue"))
                raise ScheduleError(f"faults ({origin}): {b} starts while {a} may still hold the same broker's link; "
                                    f"one {queues} at a time on a broker: move one of them")
    clashes = overlaps(schedule, allowance)
    if clashes:
        a, b = clashes[0]
        more = f" (and {len(clashes) - 1} more such pair(s))" if len(clashes) > 1 else ""
        after = f" and up to {allowance:g} s to start again" if KINDS[a.kind].stops_broker else ""
        if KINDS[b.kind].holds != "broker":
            raise ScheduleError(
                f"faults ({origin}): {b} picks its broker by role while {a} holds a broker that may be in that role "
                f"(a paused leader stays leader until its session times out), so it could wait for a running one "
                f"until the workload ends{more}: move one of them (at, start, every) or name the broker")
        raise ScheduleError(
            f"faults ({origin}): {b} may hit the broker that {a} still holds (its duration{after}){more}; "
            "a broker is running, paused, down or starting, one at a time: move one of them (at, start, every) "
            "or give them brokers that cannot meet")


def dumps(schedule: list[PlannedFault]) -> str:
    return "".join(json.dumps(f.to_json(), sort_keys=True) + "\n" for f in schedule)


MAX_REPLAY_BYTES = 64 << 20
PLAN_FIELDS = ("id", "kind", "target", "planned_at", "planned_duration", "params")
_FAULT = TypeAdapter(Fault)


def _replayed(r, spec: ExperimentSpec) -> PlannedFault:
    """One faults.jsonl line as a planned fault, checked as the experiment file's fault would be;
    ValueError naming the field."""
    missing = [k for k in PLAN_FIELDS if k not in r]
    if missing:
        raise ValueError(f"{missing[0]}: missing (a planned fault has {', '.join(PLAN_FIELDS)})")
    fid, kind, params = r["id"], r["kind"], r["params"]
    if not isinstance(fid, int) or isinstance(fid, bool) or not 0 <= fid < MAX_FAULTS:
        raise ValueError(f"id: {json.dumps(fid)} is not a fault id (a whole number 0..{MAX_FAULTS - 1})")
    if kind not in KINDS:
        raise ValueError(f"kind: unknown fault kind {kind!r} (kinds: {', '.join(KINDS)})")
    for key in ("planned_at", "planned_duration"):
        if not isinstance(r[key], (int, float)) or isinstance(r[key], bool):
            raise ValueError(f"{key}: {json.dumps(r[key])} is not a number of seconds")
    if not isinstance(params, dict):
        raise ValueError(f"params: {json.dumps(params)} is not an object of the fault's settings")
    # The same checks as the experiment file's fault (types, ranges, finite), fields named as in the line.
    timing = {"at": r["planned_at"],
              ("downtime" if "downtime" in KINDS[kind].schema.model_fields else "duration"): r["planned_duration"]}
    names = {"at": "planned_at", "duration": "planned_duration", "downtime": "planned_duration"}
    try:
        fault = _FAULT.validate_python({**params, "kind": kind, **timing})
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][-1]) if len(err["loc"]) > 1 else ""
        where = names.get(field) or (f"params.{field}" if field else "params")
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}: {msg}") from None
    settings = fault.model_dump(exclude=_TIMING)
    has = f"({kind} has {', '.join(settings) or 'no settings'})"
    for key in sorted(set(params) - set(settings)):  # a timing field (downtime, at, ...) given as a setting
        raise ValueError(f"params.{key}: not a setting of {kind} {has}")
    for key in sorted(set(settings) - set(params)):
        raise ValueError(f"params.{key}: missing {has}")
    # No check against this experiment's window: a jittered plan may start its last fault up to a jitter
    # after it, and such a fault is journaled not-reached when the workload ends first.
    target = target_from_json(r["target"], spec.cluster.brokers, spec.topic.partitions)
    return PlannedFault(fid, kind, target, fault.at, fault.duration, settings)


def load(path: Path, spec: ExperimentSpec) -> list[PlannedFault]:
    """The planned schedule recorded in a run's faults.jsonl (each fault once, whatever the variants),
    every line checked as the experiment file's faults are: ScheduleError naming FILE:LINE: field."""
    try:
        if path.stat().st_size > MAX_REPLAY_BYTES:
            raise ScheduleError(f"{path}: larger than {MAX_REPLAY_BYTES >> 20} MiB; not a faults.jsonl")
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ScheduleError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    faults: dict[int, tuple[int, PlannedFault]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json_object(line)
        except ValueError as e:
            raise ScheduleError(f"{path}:{n}: not a JSON object line ({' '.join(str(e).split())[:200]})") from None
        try:
            fault = _replayed(r, spec)
        except ValueError as e:
            raise ScheduleError(f"{path}:{n}: {e}") from None
        if KINDS[fault.kind].on_workload != isinstance(fault.target, Workload):
            on_workload = [k for k, x in KINDS.items() if x.on_workload]
            raise ScheduleError(f"{path}:{n}: {fault.kind} cannot target {fault.target} "
                                f"({', '.join(on_workload)} target the workload, every other kind a broker)")
        first = faults.setdefault(fault.id, (n, fault))
        if first[1] != fault:
            raise ScheduleError(f"{path}:{n}: fault {fault.id} was planned differently on line {first[0]} "
                                "(every variant gets the same plan)")
    if not faults:
        raise ScheduleError(f"{path}: no faults recorded")
    if len(faults) > MAX_FAULTS:
        raise ScheduleError(f"{path}: {len(faults):,} faults; at most {MAX_FAULTS:,} per variant")
    schedule = sorted((f for _, f in faults.values()), key=lambda f: (f.at, f.id))
    check_rate(schedule, str(path))
    check_overlaps(schedule, START_ALLOWANCE[spec.cluster.broker], str(path), _members(spec))
    return schedule
