"""The verdict: fatal anomalies by default, allow lists, expectation rules, and the exit status."""

import pytest

from harness import summary, verdict
from harness.analysis import metrics
from harness.exits import Exit, exit_for_verdict
from harness.spec import ExperimentSpec
from harness.verdict import ALLOWED, FAIL, PASS, Rule, judge, parse_rule


def clean(**over):
    return {**{k: 0 for k in metrics.KEYS}, "sent": 10, "acked": 10, "received": 10, "unique": 10, **over}


def statuses(checks):
    return {c["metric"]: c["status"] for c in checks}


@pytest.mark.parametrize("raw, rule", [(0, Rule("==", 0)), ("0", Rule("==", 0)), ("> 0", Rule(">", 0)),
                                       ("<=10", Rule("<=", 10)), (" != 3 ", Rule("!=", 3))])
def test_rules_parse(raw, rule):
    assert parse_rule(raw) == rule


@pytest.mark.parametrize("raw", [True, False, 1.5, "lots", "> -1", "= 0", None, [0], -1, 10**19])
def test_bad_rules_are_refused(raw):
    with pytest.raises(ValueError, match="use a whole number or a comparison"):
        parse_rule(raw)


def test_every_fatal_anomaly_fails_a_variant_without_any_rule():
    for key in metrics.FATAL:
        checks = judge(clean(**{key: 1}), {}, set())
        assert statuses(checks)[key] == FAIL, key
        assert verdict.variant_verdict(checks) == FAIL


def test_a_clean_variant_passes_and_non_fatal_metrics_need_a_rule_to_fail():
    checks = judge(clean(duplicates=50, jump_back_runs=3, missing=4), {}, set())
    assert set(statuses(checks)) == set(metrics.FATAL) | {"unseen"}
    assert verdict.variant_verdict(checks) == PASS


def test_unseen_values_make_the_verdict_unknown_never_a_pass():
    # Acked values a read that could not prove it reached the end did not find: lost or late, nobody can tell.
    checks = judge(clean(unseen=2), {}, set())
    assert statuses(checks)["unseen"] == verdict.UNKNOWN and verdict.variant_verdict(checks) == verdict.UNKNOWN
    assert not next(c for c in checks if c["metric"] == "unseen")["passed"]
    assert verdict.variant_verdict(judge(clean(unseen=2, lost=1), {}, set())) == FAIL  # a known failure wins
    assert statuses(judge(clean(unseen=2), {}, {"lost"}))["unseen"] == ALLOWED  # loss allowed: moot
    run = summary.build("r", "e", "complete", {"on": summary.variant_entry(clean(unseen=2), {}, []),
                                               "off": summary.variant_entry(clean(), {}, [])})
    assert run["verdict"] == verdict.UNKNOWN and exit_for_verdict(run["verdict"]) == Exit.INFRA


def test_allowed_anomaly_is_shown_as_allowed_never_as_a_pass():
    checks = judge(clean(lost=7), {}, {"lost"})
    lost = next(c for c in checks if c["metric"] == "lost")
    assert (lost["status"], lost["rule"], lost["actual"], lost["passed"]) == (ALLOWED, "allowed", 7, True)
    assert verdict.variant_verdict(checks) == PASS
    assert statuses(judge(clean(), {}, {"lost"}))["lost"] == PASS  # nothing lost: nothing to allow


def test_expectation_rules_add_checks_and_replace_the_implicit_zero():
    rules = {"duplicates": Rule("==", 0), "lost": Rule("<=", 5)}
    checks = judge(clean(duplicates=3, lost=2), rules, {"lost"})
    assert statuses(checks)["duplicates"] == FAIL
    assert statuses(checks)["lost"] == PASS and [c["rule"] for c in checks if c["metric"] == "lost"] == ["<= 5"]


def test_run_verdict_and_exit_status():
    ok = summary.build("r", "e", "complete", {"on": summary.variant_entry(clean(), {}, [])})
    bad = summary.build("r", "e", "complete", {"on": summary.variant_entry(clean(lost=1), {}, [])})
    partial = summary.build("r", "e", "incomplete", {"on": summary.variant_entry(clean(), {}, []),
                                                     "off": summary.variant_entry({}, {}, [], "acks.parquet missing")})
    assert (ok["verdict"], bad["verdict"], partial["verdict"]) == ("pass", "fail", "incomplete")
    assert exit_for_verdict(ok["verdict"]) == Exit.OK and exit_for_verdict(bad["verdict"]) == Exit.FAILED
    assert exit_for_verdict(partial["verdict"]) == Exit.INFRA
    assert exit_for_verdict(partial["verdict"], partial=True) == Exit.OK
    for status in ("interrupted", "error"):
        s = summary.with_status(ok, status, "why")
        assert s["verdict"] == status and exit_for_verdict(s["verdict"]) == Exit.INFRA


def test_summaries_written_before_statuses_existed_still_get_a_verdict():
    old = {"status": "complete", "variants": {"on": {"expectations": [{"metric": "duplicates", "rule": "== 0",
                                                                        "actual": 4, "passed": False}]}}}
    assert verdict.run_verdict(old) == FAIL


def test_accounting():
    assert metrics.accounting_holds({"sent": 10, "acked": 8, "rejected": 1, "unknown": 1})
    assert not metrics.accounting_holds({"sent": 10, "acked": 8, "rejected": 1, "unknown": 0})


PLAN_MISSES = [  # (facts, the metric named unknown, what its reason says)
    ({"producer_error": "_FATAL: Fenced"}, "producer_failed", "the producer failed for good (_FATAL: Fenced)"),
    ({"producer_error": "Broker: sequence desynchronization", "client_fatal": "OUT_OF_ORDER_SEQUENCE_NUMBER"},
     "producer_failed", "the producer failed for good (OUT_OF_ORDER_SEQUENCE_NUMBER: Broker: sequence desync"),
    ({"acked": 0}, "acked", "nothing of 10 sends was acknowledged"),
    ({"faults_not_applied": 2}, "faults_not_applied", "planned faults were never applied"),
    ({"consumer": {"strategy": "at-least-once"}, "processed": 0}, "processed",
     "the consumer group processed none of 10 records"),
]


@pytest.mark.parametrize("facts, metric, why", PLAN_MISSES, ids=[f"{m}-{i}" for i, (_, m, _) in enumerate(PLAN_MISSES)])
def test_a_variant_that_did_not_do_what_it_planned_never_passes(facts, metric, why):
    # Its client failed for good, it acknowledged nothing, a planned fault was never applied, or its consumer
    # group processed nothing of a log that holds records: unknown (exit 3) with the reason in the check's line,
    # whatever its anomaly metrics say.
    entry = summary.variant_entry(clean(**facts), {}, [])
    [check] = [c for c in entry["expectations"] if c["status"] == verdict.UNKNOWN]
    assert check["metric"] == metric and why in check["rule"] and entry["verdict"] == verdict.UNKNOWN
    run = summary.build("r", "e", "complete", {"v": entry})
    assert run["verdict"] == verdict.UNKNOWN and exit_for_verdict(run["verdict"]) == Exit.INFRA
    # A fatal anomaly still fails it (fail before unknown).
    assert summary.variant_entry(clean(lost=1, **facts), {}, [])["verdict"] == FAIL


@pytest.mark.parametrize("facts, metric, expected", [
    ({"producer_error": "_FATAL: Fenced"}, "producer_failed", 1), ({"acked": 0}, "acked", 0),
    ({"faults_not_applied": 1}, "faults_not_applied", 1),
    ({"consumer": {"strategy": "at-least-once"}, "processed": 0}, "processed", 0)])
def test_unless_the_experiment_expects_exactly_that(facts, metric, expected):
    entry = summary.variant_entry(clean(**facts), {metric: Rule("==", expected)}, [])
    assert entry["verdict"] == PASS and statuses(entry["expectations"])[metric] == PASS
    # A rule that does not hold fails, as any expectation.
    entry = summary.variant_entry(clean(**facts), {metric: Rule("==", expected + 5)}, [])
    assert entry["verdict"] == FAIL


def test_what_did_happen_as_planned_adds_no_check():
    entry = summary.variant_entry(clean(consumer={"strategy": "at-least-once"}, processed=10), {}, [])
    assert entry["verdict"] == PASS and entry["producer_failed"] == 0 and entry["faults_not_applied"] == 0
    # No consumer group, nothing sent, or an empty log: nothing to miss.
    for facts in ({"processed": 0}, {"sent": 0, "acked": 0, "received": 0, "unique": 0},
                  {"consumer": {"strategy": "at-least-once"}, "received": 0, "unique": 0, "processed": 0,
                   "lost": 0}):
        assert not verdict.plan_checks(summary.variant_entry(clean(**facts), {}, []), {}), facts


def test_the_planned_metrics_are_expressible_in_an_experiment():
    # An experiment that expects its one planned fault to be dropped says so, and is judged by it.
    s = ExperimentSpec.model_validate({
        "name": "t", "workload": {"messages": 100, "rate": 100}, "variants": [{"name": "a"}], "consumer": {},
        "expectations": {"a": {"faults_not_applied": "== 1", "producer_failed": 0, "processed": "> 0"}}})
    assert s.rules("a") == {"faults_not_applied": Rule("==", 1), "producer_failed": Rule("==", 0),
                            "processed": Rule(">", 0)}
