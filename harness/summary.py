"""summary.json's content, pure: the run's facts, each variant's metrics and checks, the verdict.

    {"run_id", "experiment", "status", "verdict", seed, cluster, started_at, ended_at, reason,
     warnings, faults_planned, "variants": {name: {<every metric>, produce_seconds, topic,
     "allowed": [...], "expectations": [checks], "verdict", "incomplete": "why" (only when so)}}}
"""

from __future__ import annotations

from . import verdict


def variant_entry(metrics: dict, rules: dict, allow, incomplete: str = "") -> dict:
    """One variant: its numbers, its checks and its verdict (or why it could not be judged)."""
    entry = dict(metrics)
    entry["producer_failed"] = int(bool(metrics.get("producer_error")))  # the fact the live run kept
    entry.setdefault("faults_not_applied", 0)  # counted from faults.jsonl by the analysis
    entry["allowed"] = sorted(allow)
    if incomplete:
        entry.update(incomplete=incomplete, expectations=[], verdict=verdict.INCOMPLETE)
        return entry
    checks = verdict.judge(entry, rules, allow) + verdict.plan_checks(entry, rules)
    entry.update(expectations=checks, verdict=verdict.variant_verdict(checks))
    return entry


def build(run_id: str, experiment: str, status: str, variants: dict[str, dict], facts: dict | None = None) -> dict:
    """variants: name -> variant_entry(...). The run's verdict comes from verdict.run_verdict."""
    out = {"run_id": run_id, "experiment": experiment, "status": status, **(facts or {}), "variants": variants}
    out["verdict"] = verdict.run_verdict(out)
    return out


def with_status(summary: dict, status: str, reason: str) -> dict:
    """The same summary with another run status (and the verdict that follows from it)."""
    out = {**summary, "status": status, "reason": reason}
    out["verdict"] = verdict.run_verdict(out)
    return out
