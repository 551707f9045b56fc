"""Shrinking a failing run's fault schedule: `kafka-chaos shrink RUN_DIR`.

    found = shrink(faults, fails, max_runs=30)   # fails(subset) runs the variant with those faults only
    found.faults, found.runs, found.minimal

Delta debugging (Zeller's ddmin): try halves, then complements, then finer splits, keeping any subset that
still fails the same check, until no single fault can be left out (1-minimal) or the run budget is spent.
Faults keep their planned times (a subset is the recorded schedule with faults removed, never moved), so a
fault that fails only in company of another keeps that company. Each subset is run once: a bug that needs
luck may make a subset look innocent; the budget and the runs taken are said, never hidden.

Written here rather than taken from a library: the packages that implement ddmin shrink test inputs for a
fuzzer or a property-based tester (e.g. hypothesis), not an expensive external predicate under a run budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from .exits import UsageError
from .verdict import FAIL

T = TypeVar("T")


@dataclass
class Shrunk:
    faults: list  # the smallest failing subset found (the full schedule when none smaller failed)
    runs: int  # predicate calls made (each one a run)
    minimal: bool  # True: no single fault can be left out (1-minimal); False: the budget ended the search


class BudgetSpent(Exception):
    pass


def shrink(items: Sequence[T], fails: Callable[[list[T]], bool], max_runs: int) -> Shrunk:
    """ddmin over `items` (known to fail as a whole: not run again). fails(subset) -> True when the subset
    still fails the same check; it is called at most max_runs times, never twice for the same subset."""
    seen: dict[tuple[int, ...], bool] = {}
    index = {id(x): i for i, x in enumerate(items)}

    def test(subset: list[T]) -> bool:
        key = tuple(sorted(index[id(x)] for x in subset))
        if key not in seen:
            if len(seen) >= max_runs:
                raise BudgetSpent
            seen[key] = fails(list(subset))
        return seen[key]

    current, n = list(items), 2
    try:
        while len(current) >= 2:
            chunks = _split(current, n)
            found = next((c for c in chunks if test(c)), None)
            if found is None and n > 2:  # complements (with two chunks a complement is the other chunk)
                found = next((c for c in ([x for x in current if x not in chunk] for chunk in chunks) if test(c)),
                             None)
                if found is not None:
                    current, n = found, max(n - 1, 2)
                    continue
            if found is not None:
                current, n = found, 2
                continue
            if n >= len(current):
                break  # every single fault left out keeps it passing: 1-minimal
            n = min(len(current), 2 * n)
    except BudgetSpent:
        return Shrunk(current, len(seen), False)
    return Shrunk(current, len(seen), True)


def _split(items: list[T], n: int) -> list[list[T]]:
    """n nearly equal consecutive chunks (earlier chunks one longer when it does not divide)."""
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]


# -- a failed run: what to shrink, and the replay file -----------------------------------------------------

def target(summary: dict, variant: str | None, metric: str | None, where: str) -> tuple[str, str]:
    """(variant, metric) to keep failing: the given ones, or the first variant that failed and its first
    failed check. UsageError when the run has nothing failed to shrink."""
    variants = summary.get("variants", {})
    if variant is not None and variant not in variants:
        raise UsageError(f"--variant {variant}: no such variant in {where} ({', '.join(variants) or 'none'})")
    name = variant or next((n for n, v in variants.items() if v.get("verdict") == FAIL), None)
    if name is None:
        verdicts = ", ".join(f"{n} {v.get('verdict')}" for n, v in variants.items())
        raise UsageError(f"{where}: no variant failed ({verdicts or 'no variants'}): nothing to shrink")
    failed = [c["metric"] for c in variants[name].get("expectations", []) if c.get("status") == FAIL]
    if metric is not None and metric not in failed:
        raise UsageError(f"--check {metric}: not a failed check of {name} (failed: {', '.join(failed) or 'none'})")
    if not failed:
        raise UsageError(f"{where}: {name} has no failed check (verdict {variants[name].get('verdict')}): "
                         "nothing to shrink")
    return name, metric or failed[0]


def still_fails(summary: dict | None, variant: str, metric: str) -> bool:
    """Whether a try's summary fails the same check of the same variant."""
    entry = ((summary or {}).get("variants") or {}).get(variant) or {}
    return any(c.get("metric") == metric and c.get("status") == FAIL for c in entry.get("expectations", []))


def replay_rows(rows: list[dict], variant: str, ids: set[int]) -> list[dict]:
    """The recorded faults.jsonl rows of `variant` whose fault id is kept: a file `run --replay` takes."""
    return [r for r in rows if r.get("variant") == variant and r.get("id") in ids]


# -- what a run folder's spec.yaml may make shrink run -----------------------------------------------------

# A run folder is data: it arrives as a CI artifact or an attachment. Its spec.yaml may name programs
# (cluster.proxy: a toxiproxy-server; cluster.kafka_home: a Kafka whose bin/*.sh the harness runs; a Compose
# file, whose containers may mount the host), libraries or commands a client loads or runs (librdkafka's
# plugin.library.paths, ssl.engine.location, sasl.kerberos.kinit.cmd), files it reads, and places to connect
# to (an external cluster, a Toxiproxy API, an OAuth endpoint). Shrink takes none of them from the folder: the
# user names the experiment again with --experiment.
FOLDER_CLUSTER_KEYS = ("kafka_home", "compose_file", "bootstrap_servers", "toxiproxy_url")
PROXY_BY_NAME = ("embedded", "toxiproxy")  # the harness's own, or toxiproxy-server from $TOXIPROXY_SERVER / PATH
# librdkafka settings whose value is a file, a library, a command or an address (its CONFIGURATION.md).
PATH_SETTING = re.compile(r"(\.location|\.paths?|\.cmd|\.file|\.keytab|\.url|\.providers|\.stores)$|^plugin\.",
                          re.I)


def folder_hazards(doc: dict) -> list[str]:
    """The fields of a stored spec.yaml naming something shrink would run, load, read or connect to (empty:
    none). `doc` is the folder's raw document: each field is looked at only if it has the shape it should."""
    def section(d, key):
        x = d.get(key) if isinstance(d, dict) else None
        return x if isinstance(x, dict) else {}

    found = []
    cluster = section(doc, "cluster")
    found += [f"cluster.{k}" for k in FOLDER_CLUSTER_KEYS if cluster.get(k) is not None]
    if "proxy" in cluster and cluster["proxy"] not in PROXY_BY_NAME:
        found.append("cluster.proxy")
    settings = {"cluster.client": section(cluster, "client"), "producer": section(doc, "producer"),
                "consumer.config": section(section(doc, "consumer"), "config"), "matrix": section(doc, "matrix")}
    variants = doc.get("variants") if isinstance(doc.get("variants"), list) else []
    for i, v in enumerate(x for x in variants if isinstance(x, dict)):
        settings[f"variants.{i}.producer"] = section(v, "producer")
        settings[f"variants.{i}.consumer.config"] = section(section(v, "consumer"), "config")
    for where, conf in settings.items():
        found += [f"{where}.{k}" for k in conf if isinstance(k, str) and PATH_SETTING.search(k)]
    return found
