"""Every check on small logs with planted anomalies; expected numbers worked out by hand."""

import pytest

from harness.analysis import checks


def summarize(log, acks):
    return checks.summarize(checks.analyze(log, acks))


def runs_of(log, acks):
    return checks.jump_back_runs(checks.analyze(log, acks)).collect()


def make(spark, log: dict[int, list[int]], acks: dict[int, list[tuple[int, str]]]):
    """log: partition -> values in offset order; acks: partition -> [(value, outcome)]."""
    log_rows = [(p, off, v) for p, values in log.items() for off, v in enumerate(values)]
    ack_rows = [(p, v, o, None) for p, items in acks.items() for v, o in items]
    log_df = spark.createDataFrame(log_rows, "partition int, offset long, value long")
    acks_df = spark.createDataFrame(ack_rows, "partition int, value long, outcome string, offset long")
    return log_df, acks_df


def acked(n):
    return [(v, "acked") for v in range(n)]


def test_retried_batch_is_one_duplicate_run(spark):
    # 1,2,3 written twice: the article's "JUMP BACK" shape.
    log, acks = make(spark, {0: [0, 1, 2, 3, 1, 2, 3, 4, 5]}, {0: acked(6)})
    s = summarize(log, acks)
    assert (s["received"], s["unique"], s["duplicates"]) == (9, 6, 3)
    assert (s["jump_back_runs"], s["max_jump_back"], s["reorders"], s["lost"]) == (1, 3, 0, 0)
    run = runs_of(log, acks)[0]
    assert (run.first_offset, run.last_offset, run.first_value, run.highest_before) == (4, 6, 1, 3)
    assert (run.size, run.length, run.kind) == (3, 3, "duplicate")
    dups = sorted((r.value, r.offset, r.first_offset) for r in checks.duplicates(checks.analyze(log, acks)).collect())
    assert dups == [(1, 4, 1), (2, 5, 2), (3, 6, 3)]


def test_single_repeat_is_a_jump_back_of_size_one(spark):
    log, acks = make(spark, {0: [0, 1, 2, 2, 3]}, {0: acked(4)})
    s = summarize(log, acks)
    assert (s["duplicates"], s["jump_back_runs"], s["max_jump_back"]) == (1, 1, 1)


def test_reorder_without_duplicate(spark):
    log, acks = make(spark, {0: [0, 2, 1, 3]}, {0: acked(4)})
    s = summarize(log, acks)
    assert (s["duplicates"], s["jump_back_runs"], s["max_jump_back"], s["reorders"]) == (0, 1, 2, 1)
    assert runs_of(log, acks)[0].kind == "reorder"


def test_mixed_run(spark):
    # after 3: 1 is a repeat, 2 arrives for the first time (late).
    log, acks = make(spark, {0: [0, 1, 3, 1, 2, 4]}, {0: acked(5)})
    s = summarize(log, acks)
    assert (s["duplicates"], s["reorders"], s["jump_back_runs"], s["max_jump_back"]) == (1, 1, 1, 3)
    assert runs_of(log, acks)[0].kind == "mixed"


def test_consecutive_jump_backs_form_one_run_and_separate_ones_two(spark):
    log, acks = make(spark, {0: [0, 1, 2, 1, 2, 0, 3, 4, 4, 5]}, {0: acked(6)})
    runs = sorted((r.first_offset, r.length, r.size) for r in runs_of(log, acks))
    assert runs == [(3, 3, 2), (8, 1, 1)]
    assert summarize(log, acks)["duplicates"] == 4


def test_partitions_are_checked_separately(spark):
    # p1 starting again at 0 is no jump-back even though p0 went higher.
    log, acks = make(spark, {0: [0, 1, 2, 3], 1: [0, 1, 1]}, {0: acked(4), 1: acked(2)})
    s = summarize(log, acks)
    assert (s["received"], s["duplicates"], s["jump_back_runs"]) == (7, 1, 1)
    assert runs_of(log, acks)[0].partition == 1


def test_lost_missing_and_received_unacked(spark):
    outcomes = [(0, "acked"), (1, "unknown"), (2, "acked"), (3, "rejected"), (4, "acked"), (5, "unknown")]
    log, acks = make(spark, {0: [0, 1, 3, 4]}, {0: outcomes})
    s = summarize(log, acks)
    assert (s["lost"], s["missing"], s["received_unacked"]) == (1, 1, 2)
    assert (s["sent"], s["acked"], s["rejected"], s["unknown"]) == (6, 3, 1, 2)
    f = checks.analyze(log, acks)
    assert [r.value for r in checks.lost(f).collect()] == [2]
    assert sorted((g.first_value, g.kind) for g in checks.gaps(f).collect()) == [(2, "lost"), (5, "missing")]


def test_gaps_are_runs_of_absent_values_classified_by_outcome(spark):
    outcomes = [(v, "acked") for v in range(10)]
    outcomes[3] = (3, "unknown")
    outcomes[4] = (4, "unknown")
    log, acks = make(spark, {0: [0, 1, 2, 5, 6, 9]}, {0: outcomes})
    gaps = sorted((g.first_value, g.last_value, g.values, g.kind) for g in checks.gaps(checks.analyze(log, acks)).collect())
    assert gaps == [(3, 4, 2, "missing"), (7, 8, 2, "lost")]
    s = summarize(log, acks)
    assert (s["lost"], s["missing"]) == (2, 2)


def test_value_never_sent_is_unexpected_not_ignored(spark):
    log, acks = make(spark, {0: [0, 1, 99, 2]}, {0: acked(3)})
    s = summarize(log, acks)
    assert s["unexpected"] == 1
    assert s["jump_back_runs"] == 1  # 2 after 99 is out of order


def test_clean_log_has_no_anomaly(spark):
    log, acks = make(spark, {0: list(range(50)), 1: list(range(40))}, {0: acked(50), 1: acked(40)})
    s = summarize(log, acks)
    assert s["received"] == s["unique"] == s["acked"] == 90
    for metric in ("duplicates", "jump_back_runs", "max_jump_back", "lost", "missing", "received_unacked",
                   "reorders", "unexpected"):
        assert s[metric] == 0, metric


def test_empty_log_loses_every_acked_value(spark):
    log, acks = make(spark, {}, {0: acked(5)})
    s = summarize(log, acks)
    assert (s["received"], s["lost"], s["jump_back_runs"], s["max_jump_back"]) == (0, 5, 0, 0)
