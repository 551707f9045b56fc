"""The nemesis: applies a planned schedule to a cluster's proxies, on its own thread.

Each fault kind maps to one Toxiproxy toxic (FAULT_TOXICS); a fault is applied at
its planned time and healed after its duration, and every outcome is journaled
with wall-clock times to faults.jsonl.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from .schedule import PlannedFault


def _lost_acks(params: dict) -> dict:
    # Responses are held while requests still reach the broker, then the connection
    # is closed: every request in flight is written but its ack never arrives.
    return {"type": "timeout", "stream": "downstream", "attributes": {"timeout": params["cut_after_ms"]}}


def _reset(params: dict) -> dict:
    return {"type": "reset_peer", "stream": "downstream", "attributes": {"timeout": 0}}


def _latency(params: dict) -> dict:
    return {"type": "latency", "stream": "downstream",
            "attributes": {"latency": params["latency_ms"], "jitter": params["jitter_ms"]}}


FAULT_TOXICS = {"lost-acks": _lost_acks, "reset-connections": _reset, "latency": _latency}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class FaultJournal:
    """Append-only faults.jsonl, one line per fault once it is over."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def write(self, record: dict) -> None:
        with self._lock, open(self.path, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")


class Nemesis:
    def __init__(self, cluster, schedule: list[PlannedFault], variant: str, journal: FaultJournal):
        self.cluster = cluster
        self.schedule = schedule
        self.variant = variant
        self.journal = journal
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._records: dict[int, dict] = {}
        self.errors: list[str] = []

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"nemesis-{self.variant}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop applying faults, heal whatever is active, journal the rest as not reached."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for fault in self.schedule:
            rec = self._records.get(fault.id)
            if rec is None:
                self._finish(fault, {"outcome": "not-reached"})
            elif rec["outcome"] == "applied":
                self._heal(fault)

    def _run(self) -> None:
        actions = sorted([(f.at, 0, f) for f in self.schedule] + [(f.at + f.duration, 1, f) for f in self.schedule],
                         key=lambda a: (a[0], a[1], a[2].id))
        for when, is_heal, fault in actions:
            if self._stop.wait(max(0.0, self._t0 + when - time.monotonic())):
                return
            if is_heal:
                if self._records.get(fault.id, {}).get("outcome") == "applied":
                    self._heal(fault)
            else:
                self._apply(fault)

    def _proxies(self, fault: PlannedFault) -> list[str]:
        broker = None if fault.target == "all" else int(fault.target.split("-")[1])
        return self.cluster.proxy_names(broker)

    def _toxic_name(self, fault: PlannedFault) -> str:
        return f"{fault.kind}-{fault.id}"

    def _apply(self, fault: PlannedFault) -> None:
        rec = {"applied_at": _now(), "applied_offset": round(time.monotonic() - self._t0, 3)}
        try:
            toxic = FAULT_TOXICS[fault.kind](fault.params)
            for proxy in self._proxies(fault):
                self.cluster.toxiproxy().add_toxic(proxy, self._toxic_name(fault), **toxic)
            rec["outcome"] = "applied"
        except Exception as e:  # journal it: a fault that failed must not pass as applied
            rec.update(outcome="failed", error=f"{type(e).__name__}: {e}")
            self.errors.append(f"fault {fault.id} ({fault.kind}): {rec['error']}")
            self._finish(fault, rec)
            return
        self._records[fault.id] = rec

    def _heal(self, fault: PlannedFault) -> None:
        rec = self._records[fault.id]
        try:
            for proxy in self._proxies(fault):
                self.cluster.toxiproxy().remove_toxic(proxy, self._toxic_name(fault))
            rec.update(outcome="healed", healed_at=_now(), healed_offset=round(time.monotonic() - self._t0, 3))
        except Exception as e:
            rec.update(outcome="failed", error=f"heal: {type(e).__name__}: {e}")
            self.errors.append(f"fault {fault.id} ({fault.kind}): {rec['error']}")
        self._finish(fault, rec)

    def _finish(self, fault: PlannedFault, rec: dict) -> None:
        self._records[fault.id] = rec
        self.journal.write({"variant": self.variant, **{f"planned_{k}" if k in ("at", "duration") else k: v
                                                        for k, v in fault.to_json().items()}, **rec})
