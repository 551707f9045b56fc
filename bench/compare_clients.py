"""The same experiment, the same seeded fault schedule, run by every client implementation the client axis knows
(issue 45's comparison): each variant of EXPERIMENT becomes one variant per implementation, its producer settings
translated into that implementation's names, and the table of what each did is printed (markdown).

    python bench/compare_clients.py experiments/quickstart.yaml [more.yaml ...] [--cluster kafka] [--seed N]
                                    [--out DIR]

--cluster kafka runs each experiment on 3 local KRaft nodes of Apache Kafka (KAFKA_HOME) behind the real
Toxiproxy (TOXIPROXY_SERVER), whatever its own cluster section says (broker-failover and leader-isolation ship
for Docker Compose); without it, the experiment's own cluster. A setting an implementation does not have (e.g.
librdkafka's socket.timeout.ms; aiokafka has no retries or delivery timeout) is left out of its variants, and
the table says which (every child takes the producer faults, of plain, idempotent and transactional producers
alike). Each experiment is one `kafka-chaos run` (its variants one
after the other), so the table is a measurement of one seed: its exit code and verdict are given as they came.
This is a script, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


# Implementation -> (its `client:` entry, None for the harness's own librdkafka).
IMPLEMENTATIONS = {
    "librdkafka": None,
    "java": {"kafka-clients": "4.1.0"},
    "kafka-python": {"kafka-python": "3.0.12"},
    "aiokafka": {"aiokafka": "0.14.0"},
}
# librdkafka's setting -> each other implementation's name for it (absent: it has none).
SETTINGS = {
    "acks": {"java": "acks", "kafka-python": "acks", "aiokafka": "acks"},
    "linger.ms": {"java": "linger.ms", "kafka-python": "linger_ms", "aiokafka": "linger_ms"},
    "enable.idempotence": {"java": "enable.idempotence", "kafka-python": "enable_idempotence",
                           "aiokafka": "enable_idempotence"},
    "transactional.id": {"java": "transactional.id", "kafka-python": "transactional_id",
                         "aiokafka": "transactional_id"},
    "request.timeout.ms": {"java": "request.timeout.ms", "kafka-python": "request_timeout_ms",
                           "aiokafka": "request_timeout_ms"},
    "delivery.timeout.ms": {"java": "delivery.timeout.ms", "kafka-python": "delivery_timeout_ms"},
    "message.timeout.ms": {"java": "delivery.timeout.ms", "kafka-python": "delivery_timeout_ms"},
    "retries": {"java": "retries", "kafka-python": "retries"},
    "max.in.flight.requests.per.connection": {"java": "max.in.flight.requests.per.connection",
                                              "kafka-python": "max_in_flight_requests_per_connection"},
}
LOCAL_KAFKA = {"backend": "local", "broker": "kafka", "brokers": 3, "proxy": "toxiproxy"}


def translate(settings: dict, impl: str) -> tuple[dict, list[str]]:
    """(the settings in impl's names, the librdkafka settings it has no name for)."""
    if impl == "librdkafka":
        return dict(settings), []
    out, dropped = {}, []
    for key, value in settings.items():
        name = SETTINGS.get(key, {}).get(impl)
        if name is None:
            dropped.append(key)
        else:
            out[name] = value if key != "transactional.id" else f"{value}-{impl}"
    return out, dropped


def derive(doc: dict, cluster: dict | None) -> tuple[dict, dict]:
    """The experiment with one variant per (implementation, variant); and what was left out (an implementation,
    or a variant's settings), why."""
    if "matrix" in doc:
        raise SystemExit(f"{doc['name']}: a matrix experiment; give its variants as a list")
    shared = doc.pop("producer", {}) or {}
    left_out = {}
    variants, expectations = [], {}
    for impl, client in IMPLEMENTATIONS.items():
        for v in doc["variants"]:
            settings, dropped = translate({**shared, **(v.get("producer") or {})}, impl)
            name = f"{impl}-{v['name']}"
            variant = {**v, "name": name, "producer": settings}
            if client is not None:
                variant["client"] = client
            if dropped:
                left_out[name] = "left out, no such setting: " + ", ".join(dropped)
            variants.append(variant)
            if v["name"] in (doc.get("expectations") or {}):
                expectations[name] = doc["expectations"][v["name"]]
    doc = {**doc, "name": f"{doc['name']}-clients", "variants": variants, "expectations": expectations}
    if cluster is not None:
        doc["cluster"] = cluster
    return doc, left_out


def row(name: str, v: dict, seed: int) -> str:
    fatal = v.get("client_fatal") or ""
    rate = v["sent"] / v["produce_seconds"] if v.get("produce_seconds") else 0
    return (f"| {name} | {v.get('client', '')} | {v['sent']:,} | {v['acked']:,} | {v['duplicates']:,} | "
            f"{v['jump_back_runs']:,} | {v['lost']:,} | {v.get('aborted_reads', 0):,} | "
            f"{v.get('producer_failed', 0)} {fatal} | {rate:,.0f} | {seed} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiments", nargs="+", type=Path)
    ap.add_argument("--cluster", choices=["own", "kafka"], default="own")
    ap.add_argument("--out", type=Path, default=Path("reports/compare-clients"))
    ap.add_argument("--seed", type=int, help="the fault schedule's seed (default: each experiment's own)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["| variant | client | sent | acked | duplicates | jump-back runs | lost | aborted reads | "
             "failed for good | sends/s | seed |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for path in args.experiments:
        doc, left_out = derive(yaml.safe_load(path.read_text()), LOCAL_KAFKA if args.cluster == "kafka" else None)
        exp = args.out / f"{doc['name']}.yaml"
        exp.write_text(yaml.safe_dump(doc, sort_keys=False))
        before = set(args.out.glob("*/summary.json"))
        print(f"{path.name}: {len(doc['variants'])} variants ...", file=sys.stderr, flush=True)
        seed = [] if args.seed is None else ["--seed", str(args.seed)]
        r = subprocess.run([sys.executable, "-m", "harness", "run", str(exp), "--out", str(args.out), *seed],
                           cwd=ROOT, env=os.environ)
        [summary_path] = set(args.out.glob("*/summary.json")) - before or [None]
        if summary_path is None:
            notes.append(f"{path.name}: no run folder (exit {r.returncode})")
            continue
        summary = json.loads(summary_path.read_text())
        lines.append(f"| **{path.stem}** ({summary['cluster']}; exit {r.returncode}, verdict {summary['verdict']}) "
                     "|||||||||||")
        for name, v in summary["variants"].items():
            lines.append(row(name, v, summary.get("seed", doc.get("seed", ""))))
        notes += [f"{path.stem}: {what}: {why}" for what, why in left_out.items()]
    table = "\n".join(lines + [""] + [f"- {n}" for n in notes])
    (args.out / "comparison.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
