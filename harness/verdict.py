"""The verdict, pure: metrics + allow list + expectations -> pass / fail / allowed / unknown per check.

Fatal anomalies (metrics.FATAL: lost, unexpected, inconsistent offsets, rejected-visible, ...)
fail a variant whenever they occur, unless the variant names them in `allow`; an allowed
anomaly that occurred is reported as "allowed", never as a pass. An undecided metric above 0
(metrics.UNDECIDED: unseen, acked values a final read that could not prove it reached the end
did not find) makes the check, and the variant, "unknown" (exit 3): lost or late, nobody can
tell, so never a pass; allowing `lost` makes it moot. Expectations add rules of their own
(`duplicates: 0`, `jump_back_runs: "> 0"`); a rule on a metric replaces its implicit "== 0".
This module is the only place that decides pass or fail.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from .analysis.metrics import BY_KEY, METRICS, applies
# Run verdicts besides pass and fail: the run's status when it did not produce numbers to judge.
from .status import COMPLETE, ERROR, INCOMPLETE, INTERRUPTED

PASS, FAIL, ALLOWED, UNKNOWN = "pass", "fail", "allowed", "unknown"

_OPS = {"==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}
_RULE = re.compile(r"^\s*(==|!=|<=|>=|<|>)?\s*(\d{1,18})\s*$")


@dataclass(frozen=True)
class Rule:
    op: str
    value: int

    def holds(self, actual: int) -> bool:
        return _OPS[self.op](actual, self.value)

    def __str__(self) -> str:
        return f"{self.op} {self.value}"


def parse_rule(raw) -> Rule:
    """0, "0", "== 0", "> 0", "<= 10" -> Rule; anything else (true, 1.5, "lots") -> ValueError."""
    if isinstance(raw, Rule):
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < 10**18:
        return Rule("==", raw)
    m = _RULE.match(raw) if isinstance(raw, str) else None
    if not m:
        raise ValueError(f"rule {raw!r}: use a whole number or a comparison such as '== 0', '> 0', '<= 10'")
    return Rule(m.group(1) or "==", int(m.group(2)))


IMPLICIT = Rule("==", 0)  # what a fatal metric must be unless allowed


def judge(metrics: dict[str, int], rules: dict[str, Rule], allow: frozenset[str] | set[str]) -> list[dict]:
    """Every check of one variant, in the registry's order: {metric, rule, actual, status, passed}."""
    checks = []
    for m in METRICS:
        actual = metrics.get(m.key)
        if m.key in rules:
            rule = rules[m.key]
            status = FAIL if actual is None or not rule.holds(actual) else PASS
            checks.append(_check(m.key, str(rule), actual, status))
        elif m.undecided:
            status = PASS if not actual else ALLOWED if "lost" in allow else UNKNOWN
            checks.append(_check(m.key, f"{IMPLICIT} (else unknown)", actual, status))
        elif m.fatal and m.key in allow:
            checks.append(_check(m.key, "allowed", actual, ALLOWED if actual else PASS))
        elif m.fatal:
            status = FAIL if actual is None or not IMPLICIT.holds(actual) else PASS
            checks.append(_check(m.key, f"{IMPLICIT} (fatal)", actual, status))
    return checks


def plan_checks(facts: dict, rules: dict[str, Rule]) -> list[dict]:
    """What the variant planned and did not do, each an unknown check with its reason: a run that did not
    do what it planned never passes. facts: the variant's summary entry (producer_error / producer_failed,
    sent, acked, faults_not_applied, consumer, received, processed). A rule on the metric (an expectation:
    `acked: 0`, `faults_not_applied: "== 1"`, `producer_failed: 1`, `processed: 0`) says the experiment
    expects exactly that, and judge() checks it instead."""
    checks = []

    def unknown(metric: str, rule: str, actual, why: str) -> None:
        if metric not in rules:
            checks.append(_check(metric, f"{rule} (else unknown: {why})", actual, UNKNOWN))

    if facts.get("producer_failed") or facts.get("producer_error"):
        said = [x for x in (facts.get("client_fatal"), facts.get("producer_error")) if x]
        unknown("producer_failed", "== 0", 1, "the producer failed for good" + (f" ({': '.join(said)})" if said else ""))
    if facts.get("sent") and not facts.get("acked"):
        unknown("acked", "> 0", 0, f"nothing of {facts['sent']:,} sends was acknowledged")
    if facts.get("faults_not_applied"):
        unknown("faults_not_applied", "== 0", facts["faults_not_applied"],
                "planned faults were never applied (faults.jsonl says why)")
    if facts.get("consumer") and facts.get("received") and not facts.get("processed"):
        unknown("processed", "> 0", 0, f"the consumer group processed none of {facts['received']:,} records")
    return checks


def implicit(check: dict) -> bool:
    """A check every variant gets (a fatal metric == 0 or allowed, unseen == 0), not an expectation the
    experiment wrote."""
    return check["rule"] == "allowed" or check["rule"].endswith(("(fatal)", "(else unknown)"))


def held_text(checks: list[dict], variant: dict | None = None) -> str:
    """The checks that held, in one line: "all 8 fatal checks held (1 allowed); 2 expectations held
    (duplicates > 0, jump_back_runs > 0)". A fatal check of a metric that cannot apply to the variant (its
    summary entry: no transactions, no consumer group) is not counted. Checks that failed or could not be
    decided are said one by one elsewhere."""
    relevant = [c for c in checks
                if variant is None or c["metric"] not in BY_KEY or applies(BY_KEY[c["metric"]], variant)]
    fatal = [c for c in relevant if implicit(c)]
    fine = [c for c in fatal if status_of(c) in (PASS, ALLOWED)]
    allowed = sum(1 for c in fine if status_of(c) == ALLOWED)
    head = (f"all {len(fatal)}" if len(fine) == len(fatal) else f"{len(fine)} of {len(fatal)}") + " fatal checks held"
    head += f" ({allowed} allowed)" if allowed else ""
    written = [c for c in relevant if not implicit(c) and status_of(c) == PASS]
    if written:
        head += (f"; {len(written)} expectation{'s' if len(written) > 1 else ''} held ("
                 + ", ".join(f"{c['metric']} {c['rule']}" for c in written) + ")")
    return head


def _check(metric: str, rule: str, actual, status: str) -> dict:
    return {"metric": metric, "rule": rule, "actual": actual, "status": status, "passed": status in (PASS, ALLOWED)}


def variant_verdict(checks: list[dict]) -> str:
    """fail if a check failed, else unknown if one could not be decided, else pass."""
    statuses = {c["status"] for c in checks}
    return FAIL if FAIL in statuses else UNKNOWN if UNKNOWN in statuses else PASS


def run_verdict(summary: dict) -> str:
    """pass, fail, unknown, incomplete, interrupted or error for a whole summary.json."""
    status = summary.get("status", COMPLETE)
    if status in (INTERRUPTED, ERROR):
        return status
    variants = summary.get("variants", {})
    verdicts = {variant_verdict(_checks(v)) for v in variants.values() if _checks(v)}
    if FAIL in verdicts:
        return FAIL
    if status == INCOMPLETE or any(v.get("incomplete") for v in variants.values()):
        return INCOMPLETE
    return UNKNOWN if UNKNOWN in verdicts else PASS


def series_verdict(run_verdicts: list[str]) -> str:
    """The verdict of a series of runs (--repeat): fail if any run failed (a guarantee broke, whatever
    else happened), pass if every run passed, else the first run verdict that is neither (the series
    could not be judged); incomplete when no run finished."""
    if FAIL in run_verdicts:
        return FAIL
    if run_verdicts and all(x == PASS for x in run_verdicts):
        return PASS
    return next((x for x in run_verdicts if x != PASS), INCOMPLETE)


def status_of(check: dict) -> str:
    """pass, fail, allowed or unknown; summaries written before statuses existed carry only `passed`."""
    return check.get("status") or (PASS if check.get("passed") else FAIL)


def _checks(v: dict) -> list[dict]:
    return [{**c, "status": status_of(c)} for c in v.get("expectations", [])]
