"""The verdict: fatal anomalies by default, allow lists, expectation rules, and the exit status."""

import pytest

from harness import summary, verdict
from harness.analysis import metrics
from harness.exits import Exit, exit_for_verdict
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


def test_a_variant_that_did_not_do_what_it_planned_never_passes():
    # Its client failed for good, or it acknowledged nothing: unknown (exit 3) with the reason, whatever its
    # anomaly metrics say.
    for facts, metric in (({"producer_error": "_FATAL: Fenced"}, "producer_error"), ({"acked": 0}, "acked")):
        entry = summary.variant_entry(clean(**facts), {}, [])
        unknown = [c["metric"] for c in entry["expectations"] if c["status"] == verdict.UNKNOWN]
        assert unknown == [metric] and entry["verdict"] == verdict.UNKNOWN, facts
        run = summary.build("r", "e", "complete", {"v": entry})
        assert exit_for_verdict(run["verdict"]) == Exit.INFRA
    # Unless the experiment says it expects exactly that (a rule on acked).
    assert summary.variant_entry(clean(acked=0), {"acked": Rule("==", 0)}, [])["verdict"] == PASS


@pytest.mark.parametrize("runs, expected", [
    (["pass", "pass"], "pass"),
    (["pass", "error", "fail"], "fail"),  # a broken guarantee is the finding, whatever else happened
    (["pass", "incomplete", "error"], "incomplete"),  # could not be judged: the first such verdict
    (["unknown", "pass"], "unknown"),  # any verdict that is neither pass nor fail
    ([], "incomplete"),
])
def test_the_series_verdict(runs, expected):
    assert verdict.series_verdict(runs) == expected


@pytest.mark.parametrize("word", ["pass", "fail", "incomplete", "interrupted", "error", "unknown"])
def test_one_verdict_to_exit_mapping_for_a_run_and_a_series(word):
    """The series' exit status is exit_for_verdict of its verdict (repeat.py has no mapping of its own);
    anything not pass or fail exits 3."""
    from harness import repeat

    assert exit_for_verdict(word) == {"pass": Exit.OK, "fail": Exit.FAILED}.get(word, Exit.INFRA)
    assert repeat.exit_code([{"verdict": "pass"}, {"verdict": word}]) == exit_for_verdict(word)
