"""The nemesis: applies a planned schedule to a cluster, on its own thread.

FAULTS maps each fault kind to an (apply, heal) pair acting on one broker: network
faults add a Toxiproxy toxic to that broker's proxy, broker faults act on the broker
itself through the cluster. A fault is applied at its planned time and healed after
its duration; every outcome is journaled to faults.jsonl, one line per fault, sorted
by id when the variant ends, so two runs with one seed differ only in actual times.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .schedule import PlannedFault


@dataclass(frozen=True)
class FaultAction:
    apply: Callable  # (cluster, broker index, toxic name, params) -> None
    heal: Callable


def _toxic(type: str, attributes: Callable[[dict], dict], stream: str = "downstream") -> FaultAction:
    def apply(cluster, broker, name, params):
        cluster.toxiproxy().add_toxic(cluster.proxy_name(broker), name, type=type, stream=stream,
                                      attributes=attributes(params))

    def heal(cluster, broker, name, params):
        cluster.toxiproxy().remove_toxic(cluster.proxy_name(broker), name)

    return FaultAction(apply, heal)


def _proxy_enabled(enabled: bool):
    return lambda cluster, broker, name, params: cluster.toxiproxy().set_enabled(cluster.proxy_name(broker), enabled)


FAULTS: dict[str, FaultAction] = {
    # Responses are held while requests still reach the broker, then the connection is
    # cut: every request in flight is written but its ack never arrives.
    "lost-acks": _toxic("timeout", lambda p: {"timeout": p["cut_after_ms"]}),
    "reset-connections": _toxic("reset_peer", lambda p: {"timeout": 0}),
    "latency": _toxic("latency", lambda p: {"latency": p["latency_ms"], "jitter": p["jitter_ms"]}),
    "bandwidth": _toxic("bandwidth", lambda p: {"rate": p["rate_kbps"]}),
    "slow-close": _toxic("slow_close", lambda p: {"delay": p["delay_ms"]}),
    "partition": FaultAction(_proxy_enabled(False), _proxy_enabled(True)),
    "broker-pause": FaultAction(lambda c, b, n, p: c.pause_broker(b), lambda c, b, n, p: c.resume_broker(b)),
    "broker-kill": FaultAction(lambda c, b, n, p: c.kill_broker(b), lambda c, b, n, p: c.start_broker(b)),
    "broker-restart": FaultAction(lambda c, b, n, p: c.stop_broker(b), lambda c, b, n, p: c.start_broker(b)),
}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class FaultJournal:
    """faults.jsonl: append-only, one line per fault."""

    def __init__(self, path: Path):
        self.path = path

    def write(self, records: list[dict]) -> None:
        with open(self.path, "a") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)


class Nemesis:
    def __init__(self, cluster, schedule: list[PlannedFault], variant: str, journal: FaultJournal, topic: str):
        self.cluster = cluster
        self.schedule = schedule
        self.variant = variant
        self.journal = journal
        self.topic = topic
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._records: dict[int, dict] = {}
        self._lock = threading.Lock()  # apply/heal from the thread and from stop() never interleave
        self.errors: list[str] = []
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"nemesis-{self.variant}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop applying faults, heal whatever is active, and journal every fault of the variant."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for fault in self.schedule:
            rec = self._records.get(fault.id)
            if rec is None:
                self._records[fault.id] = {"outcome": "not-reached"}
            elif rec["outcome"] == "applied":
                self._heal(fault)
        self.journal.write([{"variant": self.variant, **_planned(f), **self._records[f.id]} for f in self.schedule])

    def _run(self) -> None:
        actions = sorted([(f.at, 0, f) for f in self.schedule] + [(f.at + f.duration, 1, f) for f in self.schedule],
                         key=lambda a: (a[0], a[1], a[2].id))
        for when, is_heal, fault in actions:
            if self._stop.wait(max(0.0, self._t0 + when - time.monotonic())):
                return
            with self._lock:
                if self._stop.is_set():
                    return
                if not is_heal:
                    self._apply(fault)
                elif self._records.get(fault.id, {}).get("outcome") == "applied":
                    self._heal(fault)

    def _brokers(self, fault: PlannedFault) -> list[int]:
        if fault.target == "all":
            return list(range(self.cluster.broker_count))
        if fault.target.startswith("leader-of-"):
            return [self.cluster.leader_of(self.topic, int(fault.target.rsplit("-", 1)[1]))]
        return [int(fault.target.rsplit("-", 1)[1])]

    def _name(self, fault: PlannedFault) -> str:
        return f"{fault.kind}-{fault.id}"

    def _apply(self, fault: PlannedFault) -> None:
        rec = {"applied_at": _now(), "applied_offset": round(time.monotonic() - self._t0, 3)}
        self._records[fault.id] = rec
        try:
            rec["brokers"] = self._brokers(fault)
            for broker in rec["brokers"]:
                FAULTS[fault.kind].apply(self.cluster, broker, self._name(fault), fault.params)
            rec["outcome"] = "applied"
        except Exception as e:  # journaled: a fault that failed must never pass as applied
            rec.update(outcome="failed", error=f"{type(e).__name__}: {e}")
            self.errors.append(f"fault {fault.id} ({fault.kind}): {rec['error']}")

    def _heal(self, fault: PlannedFault) -> None:
        rec = self._records[fault.id]
        try:
            for broker in rec["brokers"]:
                FAULTS[fault.kind].heal(self.cluster, broker, self._name(fault), fault.params)
            rec.update(outcome="healed", healed_at=_now(), healed_offset=round(time.monotonic() - self._t0, 3))
        except Exception as e:
            rec.update(outcome="failed", error=f"heal: {type(e).__name__}: {e}")
            self.errors.append(f"fault {fault.id} ({fault.kind}): {rec['error']}")


def _planned(fault: PlannedFault) -> dict:
    d = fault.to_json()
    d["planned_at"], d["planned_duration"] = d.pop("at"), d.pop("duration")
    return d
