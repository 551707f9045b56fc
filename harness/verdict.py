"""The verdict, pure: metrics + allow list + expectations -> pass / fail / allowed per check.

Fatal anomalies (metrics.FATAL: lost, unexpected, inconsistent offsets, rejected-visible, ...)
fail a variant whenever they occur, unless the variant names them in `allow`; an allowed
anomaly that occurred is reported as "allowed", never as a pass. Expectations add rules of
their own (`duplicates: 0`, `jump_back_runs: "> 0"`); a rule on a metric replaces its
implicit "== 0". This module is the only place that decides pass or fail.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from .analysis.metrics import METRICS
# Run verdicts besides pass and fail: the run's status when it did not produce numbers to judge.
from .status import COMPLETE, ERROR, INCOMPLETE, INTERRUPTED

PASS, FAIL, ALLOWED = "pass", "fail", "allowed"

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
        elif m.fatal and m.key in allow:
            checks.append(_check(m.key, "allowed", actual, ALLOWED if actual else PASS))
        elif m.fatal:
            status = FAIL if actual is None or not IMPLICIT.holds(actual) else PASS
            checks.append(_check(m.key, f"{IMPLICIT} (fatal)", actual, status))
    return checks


def _check(metric: str, rule: str, actual, status: str) -> dict:
    return {"metric": metric, "rule": rule, "actual": actual, "status": status, "passed": status != FAIL}


def variant_verdict(checks: list[dict]) -> str:
    return FAIL if any(c["status"] == FAIL for c in checks) else PASS


def run_verdict(summary: dict) -> str:
    """pass, fail, incomplete, interrupted or error for a whole summary.json."""
    status = summary.get("status", COMPLETE)
    if status in (INTERRUPTED, ERROR):
        return status
    variants = summary.get("variants", {})
    if any(_checks(v) and variant_verdict(_checks(v)) == FAIL for v in variants.values()):
        return FAIL
    if status == INCOMPLETE or any(v.get("incomplete") for v in variants.values()):
        return INCOMPLETE
    return PASS


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
    """pass, fail or allowed; summaries written before statuses existed carry only `passed`."""
    return check.get("status") or (PASS if check.get("passed") else FAIL)


def _checks(v: dict) -> list[dict]:
    return [{**c, "status": status_of(c)} for c in v.get("expectations", [])]
