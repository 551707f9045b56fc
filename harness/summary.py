"""summary.json: per-variant metrics, expectation verdicts and the run's exit code."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .spec import check_rule

# The seed article's columns first, then the rest (DESIGN.md, Words).
TABLE_COLUMNS = [
    ("acked", "confirmed"), ("received", "received"), ("unique", "unique"), ("duplicates", "duplicates"),
    ("jump_back_runs", "jump-back runs"), ("max_jump_back", "max jump-back"), ("lost", "lost"),
    ("missing", "missing"), ("received_unacked", "received-unacked"), ("reorders", "reorders"),
]
ACCOUNTING = ("sent", "acked", "rejected", "unknown")


def evaluate(expectations: dict[str, int | str], metrics: dict[str, int]) -> list[dict]:
    return [{"metric": m, "rule": str(rule), "actual": metrics.get(m), "passed": check_rule(rule, metrics[m])}
            for m, rule in expectations.items() if m in metrics]


def accounting_holds(metrics: dict) -> bool:
    return metrics["sent"] == metrics["acked"] + metrics["rejected"] + metrics["unknown"]


def build(run_id: str, experiment: str, status: str, variants: dict[str, dict],
          expectations: dict[str, dict], extra: dict | None = None) -> dict:
    out = {"run_id": run_id, "experiment": experiment, "status": status, **(extra or {}), "variants": {}}
    for name, metrics in variants.items():
        out["variants"][name] = {**metrics, "expectations": evaluate(expectations.get(name, {}), metrics)}
    return out


def passed(summary: dict) -> bool:
    return all(e["passed"] for v in summary["variants"].values() for e in v["expectations"])


def write(path: Path, summary: dict) -> None:
    """Write atomically, so a reader never sees half a summary."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, path)
