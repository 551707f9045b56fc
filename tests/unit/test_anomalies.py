"""Each anomaly definition on small logs with planted anomalies; expected numbers worked out by hand.

No Spark here: anomalies.check_partition is the definitions themselves (engine/partitions.py only runs
it once per topic partition).
"""

import numpy as np
import pyarrow as pa
import pytest

from harness.analysis import anomalies, metrics
from harness.analysis.anomalies import NO_OFFSET, DeliveryLogError, OutOfOrder, check_partition


def acks(rows, partition=0):
    """rows: (value, outcome[, offset[, error]]); an acked row without an offset gets offset = value."""
    full = []
    for r in rows:
        value, outcome = r[0], r[1]
        offset = r[2] if len(r) > 2 else (value if outcome == "acked" else None)
        full.append((partition, value, outcome, offset, r[3] if len(r) > 3 else None))
    p, v, o, off, err = zip(*full) if full else ((), (), (), (), ())
    return pa.table({"partition": pa.array(p, pa.int32()), "value": pa.array(v, pa.int64()),
                     "outcome": pa.array(o, pa.string()), "offset": pa.array(off, pa.int64()),
                     "error": pa.array(err, pa.string())})


def log(values, offsets=None, partition=0):
    """values in offset order (None: a record that is not a number); offsets default to 0, 1, 2, ..."""
    offsets = list(range(len(values))) if offsets is None else offsets
    return pa.table({"partition": pa.array([partition] * len(values), pa.int32()),
                     "offset": pa.array(offsets, pa.int64()), "value": pa.array(values, pa.int64())})


def acked(n):
    return [(v, "acked") for v in range(n)]


def check(ack_rows, values, offsets=None, batch=None):
    table = log(values, offsets)
    batches = table.to_batches(max_chunksize=batch) if batch else [table]
    return check_partition(0, [acks(ack_rows)], batches)


def rows(findings, table):
    return findings.table(table).drop(["partition"]).to_pylist()


def test_every_registry_metric_is_computed():
    f = check(acked(3), [0, 1, 2])
    # The consumer metrics are the consumer group's (analysis/consumption.py), not a partition's log.
    assert set(f.metrics) == {m.key for m in metrics.METRICS if not m.consumer and not m.planned}
    assert set(anomalies.TABLES) >= {"partitions", "series"}


def test_clean_log_has_no_anomaly():
    f = check(acked(5), [0, 1, 2, 3, 4])
    assert f.metrics["acked"] == f.metrics["received"] == f.metrics["unique"] == 5
    assert all(f.metrics[m.key] == 0 for m in metrics.METRICS if m.fatal and not m.consumer)
    assert (f.metrics["duplicates"], f.metrics["jump_back_runs"], f.metrics["unseen"]) == (0, 0, 0)


def test_retried_batch_is_one_duplicate_run():
    # 1,2,3 written twice: the seed article's "JUMP BACK" shape. Acks point at the second copies.
    f = check([(0, "acked", 0), (1, "acked", 4), (2, "acked", 5), (3, "acked", 6), (4, "acked", 7), (5, "acked", 8)],
              [0, 1, 2, 3, 1, 2, 3, 4, 5])
    m = f.metrics
    assert (m["received"], m["unique"], m["duplicates"]) == (9, 6, 3)
    assert (m["jump_back_runs"], m["max_jump_back"], m["reorders"], m["lost"]) == (1, 2, 0, 0)
    assert rows(f, "jump_back_runs") == [{"first_offset": 4, "last_offset": 6, "first_value": 1,
                                          "highest_before": 3, "size": 2, "length": 3, "kind": "duplicate"}]
    assert [(r["value"], r["offset"], r["first_offset"]) for r in rows(f, "duplicates")] == [(1, 4, 1), (2, 5, 2),
                                                                                            (3, 6, 3)]
    assert m["inconsistent_offsets"] == 0  # each ack points at a copy of its value


def test_jump_back_size_is_the_articles():
    # The seed article: "Msg: m=65899 Last-acked=65929 JUMP BACK 30", 31 repeated records.
    values = list(range(65930)) + list(range(65899, 65930)) + [65930]
    f = check(acked(65931), values, offsets=list(range(len(values))))
    run = rows(f, "jump_back_runs")[0]
    assert (run["first_value"], run["highest_before"], run["size"], run["length"]) == (65899, 65929, 30, 31)
    assert f.metrics["max_jump_back"] == 30
    assert f.metrics["duplicates"] == 31


def test_repeat_of_the_value_just_read_is_a_jump_back_of_size_zero():
    f = check(acked(4), [0, 1, 2, 2, 3], offsets=[0, 1, 2, 3, 4])
    assert (f.metrics["duplicates"], f.metrics["jump_back_runs"], f.metrics["max_jump_back"]) == (1, 1, 0)


def test_reorder_without_duplicate():
    f = check([(0, "acked", 0), (1, "acked", 2), (2, "acked", 1), (3, "acked", 3)], [0, 2, 1, 3])
    m = f.metrics
    assert (m["duplicates"], m["jump_back_runs"], m["max_jump_back"], m["reorders"]) == (0, 1, 1, 1)
    assert rows(f, "jump_back_runs")[0]["kind"] == "reorder"
    # value 2 (the later send) acked at offset 1, value 1 at offset 2: value 2 comes before... in send
    # order 1 then 2, offsets 2 then 1: one nonmonotonic send (value 2).
    assert m["nonmonotonic_sends"] == 1
    assert rows(f, "nonmonotonic_sends") == [{"value": 2, "offset": 1, "previous_value": 1, "previous_offset": 2}]


def test_mixed_run():
    # after 3: 1 is a repeat, 2 arrives for the first time (late).
    f = check(acked(5), [0, 1, 3, 1, 2, 4], offsets=list(range(6)))
    m = f.metrics
    assert (m["duplicates"], m["reorders"], m["jump_back_runs"], m["max_jump_back"]) == (1, 1, 1, 2)
    assert rows(f, "jump_back_runs")[0]["kind"] == "mixed"


def test_lost_needs_a_later_value_read_and_unseen_does_not():
    # acked 0..9; read 0,1,2,4,5,6: 3 is lost (4..6 were read after it was sent), 7,8,9 unseen.
    f = check(acked(10), [0, 1, 2, 4, 5, 6], offsets=[0, 1, 2, 4, 5, 6])
    m = f.metrics
    assert (m["lost"], m["unseen"], m["missing"]) == (1, 3, 0)
    assert [r["value"] for r in rows(f, "lost")] == [3]
    assert [r["value"] for r in rows(f, "unseen")] == [7, 8, 9]
    gaps = rows(f, "gaps")
    assert [(g["first_value"], g["last_value"], g["values"], g["kind"]) for g in gaps] == [
        (3, 3, 1, "lost"), (7, 9, 3, "unseen")]


def test_missing_received_unacked_and_rejected_visible():
    # 0 acked read; 1 unknown read (received-unacked); 2 unknown absent (missing);
    # 3 rejected absent (missing); 4 rejected but read (rejected-visible); 5 acked read.
    ack_rows = [(0, "acked", 0), (1, "unknown", None, "_MSG_TIMED_OUT"), (2, "unknown", None, "_TRANSPORT"),
                (3, "rejected", None, "MSG_SIZE_TOO_LARGE"), (4, "rejected", None, "TOPIC_AUTHORIZATION_FAILED"),
                (5, "acked", 3)]
    f = check(ack_rows, [0, 1, 4, 5])
    m = f.metrics
    assert (m["sent"], m["acked"], m["rejected"], m["unknown"]) == (6, 2, 2, 2)
    assert (m["received_unacked"], m["missing"], m["rejected_visible"], m["lost"]) == (1, 2, 1, 0)
    assert rows(f, "rejected_visible") == [{"value": 4, "offset": 2, "error": "TOPIC_AUTHORIZATION_FAILED"}]
    assert [(g["first_value"], g["last_value"], g["kind"]) for g in rows(f, "gaps")] == [(2, 3, "missing")]


def test_inconsistent_offsets_each_cause():
    # log: offsets 0,1,2,4,5,7 hold values 0,1,2,3,4,6 (offsets 3 and 6 are holes).
    ack_rows = [(0, "acked", 0),     # right
                (1, "acked", 2),     # offset 2 holds 2: another value (1 is at offset 1)
                (2, "acked", 3),     # no record at offset 3
                (3, "acked", -5),    # a negative offset
                (4, "acked", 9),     # beyond the end of the log
                (5, "acked", 6),     # offset 6 holds nothing, and 5 is nowhere: lost, nothing else
                (6, "acked", NO_OFFSET)]  # acks=0: the client was told no offset, nothing to check
    f = check(ack_rows, [0, 1, 2, 3, 4, 6], offsets=[0, 1, 2, 4, 5, 7])
    got = {(r["value"], r["offset"], r["found_value"], r["cause"], r["found_at"])
           for r in rows(f, "inconsistent_offsets")}
    assert got == {(1, 2, 2, "holds another value", 1), (2, 3, None, "no record at this offset", 2),
                   (3, -5, None, "negative offset (the client was told none)", 4),
                   (4, 9, None, "beyond the end of the log", 5)}
    assert f.metrics["inconsistent_offsets"] == 4
    assert (f.metrics["lost"], f.metrics["unseen"]) == (1, 0)  # 5: acked, absent, a later value (6) read


def test_an_acked_value_absent_from_the_log_is_lost_and_nothing_else():
    # One event, one name: 2 and 3 are gone; their acked offsets hold other values (new records took them,
    # as after a truncation) or nothing. Complete read or not, it is loss, never an inconsistent offset.
    ack_rows = [(0, "acked", 0), (1, "acked", 1), (2, "acked", 2), (3, "acked", 3), (4, "acked", 2), (5, "acked", 5)]
    for read in ((0, 6), None):
        f = check_partition(0, [acks(ack_rows)], [log([0, 1, 4, 5], offsets=[0, 1, 2, 5])], read=read)
        assert (f.metrics["lost"], f.metrics["inconsistent_offsets"], f.metrics["base_offset_minus_one"]) == (2, 0, 0)
        assert [r["value"] for r in rows(f, "lost")] == [2, 3]


@pytest.mark.parametrize("batch", [None, 1, 3, 7])
@pytest.mark.parametrize("where", ["tail", "middle"])
def test_acked_records_removed_from_a_complete_read_are_lost_wherever_they_sat(where, batch):
    # 20 values acked at offsets 0..19; the log misses 5 of them, at its end or in its middle, fed in batches
    # of any size. After a complete read both are loss (exactly 5); without the proof the tail is unseen.
    gone = range(15, 20) if where == "tail" else range(7, 12)
    kept = [v for v in range(20) if v not in gone]
    table = log(kept, offsets=kept)
    batches = table.to_batches(max_chunksize=batch) if batch else [table]
    f = check_partition(0, [acks(acked(20))], batches, read=(0, 20))
    assert (f.metrics["lost"], f.metrics["unseen"], f.metrics["inconsistent_offsets"]) == (5, 0, 0)
    assert [r["value"] for r in rows(f, "lost")] == list(gone)
    assert [(g["first_value"], g["values"], g["kind"]) for g in rows(f, "gaps")] == [(gone[0], 5, "lost")]
    unproven = check_partition(0, [acks(acked(20))], batches)
    assert (unproven.metrics["lost"], unproven.metrics["unseen"]) == ((0, 5) if where == "tail" else (5, 0))


def test_records_deleted_before_the_read_are_named_not_lost():
    # The log starts at offset 3 (retention deleted 0..2 before the read): 3 records deleted; acked values told
    # an offset among them are listed there, not as lost. 7 is lost (told offset 7, above the log start).
    f = check_partition(0, [acks(acked(8))], [log([3, 4, 5, 6], offsets=[3, 4, 5, 6])], read=(3, 8))
    assert (f.metrics["deleted_before_read"], f.metrics["lost"], f.metrics["unseen"]) == (3, 1, 0)
    assert [r["value"] for r in rows(f, "deleted_before_read")] == [0, 1, 2]
    assert [(g["first_value"], g["kind"]) for g in rows(f, "gaps")] == [(0, "deleted"), (7, "lost")]


def test_a_batch_acknowledged_with_base_offset_minus_one_has_its_own_name():
    # Values 0..5 are at offsets 0..5. The batch 3, 4, 5 was a retry the broker deduplicated and answered with
    # base offset -1: the client was told -1, 0, 1. Those three are base_offset_minus_one, nothing else; a wrong
    # offset outside such a batch (value 2 told 4) is still an inconsistent offset.
    ack_rows = [(0, "acked", 0), (1, "acked", 1), (2, "acked", 4), (3, "acked", -1), (4, "acked", 0), (5, "acked", 1)]
    f = check(ack_rows, [0, 1, 2, 3, 4, 5])
    m = f.metrics
    assert (m["base_offset_minus_one"], m["inconsistent_offsets"], m["lost"]) == (3, 1, 0)
    assert [(r["value"], r["offset"], r["found_at"]) for r in rows(f, "base_offset_minus_one")] == [
        (3, -1, 3), (4, 0, 4), (5, 1, 5)]
    assert [r["value"] for r in rows(f, "inconsistent_offsets")] == [2]
    assert m["nonmonotonic_sends"] == 0  # 3 at -1 after 2 at 4 is the same event: not counted again
    # A value of such a batch that is nowhere in the log is lost, not the quirk.
    g = check(ack_rows, [0, 1, 2, 3, 4])
    assert (g.metrics["base_offset_minus_one"], g.metrics["lost"]) == (2, 0)
    assert g.metrics["unseen"] == 1


def test_a_send_told_minus_one_alone_was_told_no_offset_and_is_no_anomaly():
    # librdkafka's implicit ack: the request carrying values 2 and 3 got no answer, a later batch (4, 5) succeeded,
    # so 2 and 3 are delivered with no offset (None in confluent-kafka, -1 in the delivery log). A CI run on
    # Apache Kafka once called such a send base_offset_minus_one (fatal there): it is checked for loss only.
    ack_rows = [(0, "acked", 0), (1, "acked", 1), (2, "acked", -1), (3, "acked", -1), (4, "acked", 4),
                (5, "acked", 5)]
    f = check(ack_rows, [0, 1, 2, 3, 4, 5])
    m = f.metrics
    assert (m["base_offset_minus_one"], m["inconsistent_offsets"], m["nonmonotonic_sends"], m["lost"]) == (0, 0, 0, 0)
    g = check(ack_rows, [0, 1, 2, 4, 5])  # told no offset and nowhere in the log: lost all the same
    assert (g.metrics["lost"], g.metrics["base_offset_minus_one"]) == (1, 0)
    assert [r["value"] for r in rows(g, "lost")] == [3]


def test_inconsistent_offset_in_a_hole_between_batches():
    # Offset 2 falls between two batches; the ack for value 2 says offset 2, the record is at 3.
    ack_rows = [(0, "acked", 0), (1, "acked", 1), (2, "acked", 2), (3, "acked", 4)]
    whole = check(ack_rows, [0, 1, 2, 3], offsets=[0, 1, 3, 4])
    split = check(ack_rows, [0, 1, 2, 3], offsets=[0, 1, 3, 4], batch=2)
    assert whole.metrics == split.metrics
    assert [(r["value"], r["cause"]) for r in rows(split, "inconsistent_offsets")] == [
        (2, "no record at this offset")]


def test_nonmonotonic_sends_compare_each_acked_send_with_the_previous_one():
    # Send order 0..4; acked offsets 0, 3, 1, 2, 4 -> value 2 (offset 1 < 3) is the only one going back.
    ack_rows = [(0, "acked", 0), (1, "acked", 3), (2, "acked", 1), (3, "acked", 2), (4, "acked", 4)]
    f = check(ack_rows, [0, 2, 3, 1, 4])
    assert f.metrics["nonmonotonic_sends"] == 1
    assert rows(f, "nonmonotonic_sends")[0]["value"] == 2


def test_unexpected_values_are_counted_and_left_out_of_the_order_analysis():
    # A value far beyond anything sent, a negative one, and a record that is not a number:
    # none of them makes the later records jump-backs, and none costs memory by its size.
    f = check(acked(4), [0, 10**12, 1, -5, None, 2, 3])
    m = f.metrics
    assert (m["unexpected"], m["received"], m["jump_back_runs"], m["duplicates"]) == (3, 4, 0, 0)
    assert rows(f, "unexpected") == [{"offset": 1, "value": 10**12}, {"offset": 3, "value": -5},
                                     {"offset": 4, "value": None}]
    # acks said offsets 1..3 for values 1..3; strays are there and the values are at 2, 5 and 6
    assert f.metrics["inconsistent_offsets"] == 3


def test_value_beyond_what_this_partition_was_sent_is_unexpected():
    f = check(acked(3), [0, 1, 2, 3])  # 3 was never sent to this partition
    assert (f.metrics["unexpected"], f.metrics["received"]) == (1, 3)


def test_batches_of_any_size_give_the_same_findings():
    ack_rows = [(v, "acked", o) for v, o in [(0, 0), (1, 4), (2, 5), (3, 6), (4, 7), (5, 10)]] + [(6, "unknown")]
    values = [0, 1, 2, 3, 1, 2, 3, 4, None, 2, 5, 6]
    whole = check(ack_rows, values)
    for size in (1, 2, 3, 5):
        split = check(ack_rows, values, batch=size)
        assert split.metrics == whole.metrics, size
        for table in anomalies.TABLES:
            assert split.table(table).equals(whole.table(table)), (size, table)


def test_jump_back_run_continues_across_batch_boundaries():
    f = check(acked(6), [0, 1, 2, 3, 4, 1, 2, 3, 5], batch=6)
    assert rows(f, "jump_back_runs") == [{"first_offset": 5, "last_offset": 7, "first_value": 1,
                                          "highest_before": 4, "size": 3, "length": 3, "kind": "duplicate"}]


def test_acks_spread_over_batches_and_a_partition_nobody_read():
    two = [acks(acked(3)[:2]), acks(acked(3)[2:])]
    f = check_partition(0, two, [])
    assert (f.metrics["acked"], f.metrics["unseen"], f.metrics["lost"]) == (3, 3, 0)


def test_out_of_order_log_is_refused():
    with pytest.raises(OutOfOrder):
        check(acked(3), [0, 1, 2], offsets=[0, 2, 1])
    with pytest.raises(OutOfOrder):
        check(acked(3), [0, 1, 2], offsets=[0, 1, 1])


@pytest.mark.parametrize("rows_, message", [
    ([(0, "acked"), (0, "unknown")], "value 0 recorded more than once"),
    ([(0, "acked"), (1, "maybe")], "unknown outcome 'maybe'"),
    ([(0, None)], "unknown outcome None"),
])
def test_contradictory_delivery_logs_are_refused(rows_, message):
    with pytest.raises(DeliveryLogError, match=message):
        check(rows_, [0])


def test_value_recorded_twice_across_batches_is_refused():
    with pytest.raises(DeliveryLogError, match="value 1 recorded more than once"):
        check_partition(0, [acks(acked(2)), acks([(1, "acked")])], [])


def test_series_counts_records_by_timestamp_and_acks_by_acknowledgement_time():
    table = log([0, 1, 2, 1]).append_column(
        "timestamp", pa.array([1_000, 1_500, 2_000, 2_100], pa.timestamp("ms")))
    ack_table = acks(acked(3)).append_column("sent_at", pa.array([1_000, 1_400, 1_900], pa.timestamp("ms"))) \
        .append_column("latency_ms", pa.array([50.0, 700.0, 20.0], pa.float64()))
    f = check_partition(0, [ack_table], [table])
    # records: second 1 -> 0,1; second 2 -> 2 and the repeat of 1. Acks at 1050, 2100, 1920 ms.
    assert f.table("series").drop(["latency_p50_ms", "latency_p99_ms"]).to_pylist() == [
        {"second": 1, "records": 2, "duplicates": 0, "jump_backs": 0, "acks": 2},
        {"second": 2, "records": 2, "duplicates": 1, "jump_backs": 1, "acks": 1}]


def test_memory_is_sized_by_values_sent_not_by_values_read():
    f_small = check(acked(2), [0, 1, 2**40])
    assert f_small.metrics["unexpected"] == 1
    outcomes = anomalies.Outcomes(0)
    anomalies.feed_acks(outcomes, acks(acked(2)))
    check_ = anomalies.PartitionCheck(outcomes.trimmed())
    anomalies.feed_log(check_, log([0, 1, 2**40]))
    assert check_.first.nbytes == 2 * np.dtype(np.int64).itemsize
