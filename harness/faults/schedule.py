"""The fault schedule: a pure function of (spec, seed), computed before any variant runs.

Toxiproxy's own randomness cannot be replayed, so the harness decides every fault
itself: what, where, when and for how long. Every variant gets the same list.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from dataclasses import asdict, dataclass, field

from ..spec import BrokerTarget, ExperimentSpec, LeaderTarget

_TIMING = {"kind", "at", "every", "jitter", "start", "duration", "downtime", "target"}


@dataclass(frozen=True)
class PlannedFault:
    id: int
    kind: str
    target: str  # "all", "broker-N" ("random" is resolved here) or "leader-of-P" (resolved when applied)
    at: float  # seconds after the workload starts
    duration: float
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


def plan(spec: ExperimentSpec, seed: int) -> list[PlannedFault]:
    out: list[tuple[float, int, str, str, float, dict]] = []
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
    return [PlannedFault(i, kind, target, at, dur, params) for i, (at, _, kind, target, dur, params) in enumerate(out)]


def _target(target, brokers: int, rng: random.Random) -> str:
    if isinstance(target, BrokerTarget):
        return f"broker-{target.broker}"
    if isinstance(target, LeaderTarget):
        return f"leader-of-{target.leader_of}"
    if target == "random":
        return f"broker-{rng.randrange(brokers)}"
    return "all"


def dumps(schedule: list[PlannedFault]) -> str:
    return "".join(json.dumps(f.to_json(), sort_keys=True) + "\n" for f in schedule)


class ScheduleError(ValueError):
    """A replayed faults.jsonl that cannot be used; str() names the file and line."""


def load(path: Path, spec: ExperimentSpec) -> list[PlannedFault]:
    """The planned schedule recorded in a run's faults.jsonl (each fault once, whatever the variants)."""
    from ..spec import FAULT_KINDS

    faults: dict[int, PlannedFault] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ScheduleError(f"{path}: cannot read: {e.strerror or e}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            fault = PlannedFault(int(r["id"]), r["kind"], r["target"], float(r["planned_at"]),
                                 float(r["planned_duration"]), dict(r.get("params") or {}))
        except (ValueError, KeyError, TypeError) as e:
            raise ScheduleError(f"{path}:{n}: not a faults.jsonl line ({type(e).__name__}: {e})") from None
        if fault.kind not in FAULT_KINDS:
            raise ScheduleError(f"{path}:{n}: unknown fault kind {fault.kind!r}")
        kind, _, index = fault.target.rpartition("-")
        limit = {"broker": spec.cluster.brokers, "leader-of": spec.topic.partitions}.get(kind)
        if fault.target != "all" and (limit is None or not index.isdigit() or int(index) >= limit):
            raise ScheduleError(f"{path}:{n}: target {fault.target!r} does not exist in this experiment")
        faults.setdefault(fault.id, fault)
    if not faults:
        raise ScheduleError(f"{path}: no faults recorded")
    return sorted(faults.values(), key=lambda f: (f.at, f.id))
