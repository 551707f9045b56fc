"""ddmin over a fault schedule (harness/shrink.py) with plain predicates: no run, no clock."""

import pytest

from harness.shrink import shrink


def counting(predicate):
    calls = []

    def fails(subset):
        calls.append(tuple(subset))
        return predicate(set(subset))
    return fails, calls


def test_one_guilty_fault_among_sixteen_is_found_in_few_runs():
    fails, calls = counting(lambda s: 11 in s)
    found = shrink(list(range(16)), fails, max_runs=30)
    assert found.faults == [11] and found.minimal
    assert found.runs == len(calls) == len(set(calls)) <= 12  # never the same subset twice


def test_two_faults_that_fail_only_together_are_both_kept():
    fails, _ = counting(lambda s: {2, 13} <= s)
    found = shrink(list(range(16)), fails, max_runs=60)
    assert sorted(found.faults) == [2, 13] and found.minimal


def test_a_fault_that_needs_any_one_of_three_helpers_keeps_one():
    fails, _ = counting(lambda s: 5 in s and bool(s & {0, 9, 15}))
    found = shrink(list(range(16)), fails, max_runs=60)
    assert 5 in found.faults and len(found.faults) == 2 and found.minimal


def test_nothing_smaller_failing_keeps_the_whole_schedule():
    fails, calls = counting(lambda s: s == {0, 1, 2, 3})
    found = shrink([0, 1, 2, 3], fails, max_runs=30)
    assert found.faults == [0, 1, 2, 3] and found.minimal and found.runs == len(calls)


def test_the_budget_stops_the_search_and_says_so():
    fails, calls = counting(lambda s: 11 in s and 3 in s)
    found = shrink(list(range(16)), fails, max_runs=3)
    assert found.runs == len(calls) == 3 and not found.minimal
    assert {3, 11} <= set(found.faults)  # what it keeps still fails


@pytest.mark.parametrize("n", [0, 1])
def test_a_schedule_of_one_fault_or_none_is_already_minimal(n):
    fails, calls = counting(lambda s: True)
    found = shrink(list(range(n)), fails, max_runs=5)
    assert found.faults == list(range(n)) and found.minimal and calls == []


# -- which variant and check, and the replay file ----------------------------------------------------------

from harness.exits import UsageError  # noqa: E402
from harness.shrink import replay_rows, still_fails, target  # noqa: E402


def summary(**variants):
    return {"variants": {name: {"verdict": "fail" if failed else "pass",
                                "expectations": [{"metric": m, "status": "fail" if m in failed else "pass"}
                                                 for m in ("duplicates", "lost", "unexpected")]}
                         for name, failed in variants.items()}}


def test_the_first_failed_variant_and_its_first_failed_check_by_default():
    s = summary(off=[], on=["lost", "unexpected"])
    assert target(s, None, None, "R") == ("on", "lost")
    assert target(s, "on", "unexpected", "R") == ("on", "unexpected")


@pytest.mark.parametrize("variant, metric, said", [
    (None, None, "R: no variant failed (off pass, on pass): nothing to shrink"),
    ("nope", None, "--variant nope: no such variant in R (off, on)"),
    ("off", "lost", "--check lost: not a failed check of off (failed: none)"),
])
def test_a_run_with_nothing_failed_to_shrink_is_bad_input(variant, metric, said):
    with pytest.raises(UsageError) as e:
        target(summary(off=[], on=[]), variant, metric, "R")
    assert str(e.value) == said


def test_a_try_fails_only_by_the_same_check_of_the_same_variant():
    s = summary(off=["duplicates"], on=["lost"])
    assert still_fails(s, "on", "lost") and not still_fails(s, "on", "duplicates")
    assert not still_fails(s, "other", "lost") and not still_fails(None, "on", "lost")


def test_the_replay_file_keeps_the_variants_rows_of_the_kept_faults():
    rows = [{"variant": v, "id": i, "kind": "lost-acks"} for v in ("off", "on") for i in range(3)]
    assert replay_rows(rows, "on", {0, 2}) == [{"variant": "on", "id": 0, "kind": "lost-acks"},
                                               {"variant": "on", "id": 2, "kind": "lost-acks"}]
