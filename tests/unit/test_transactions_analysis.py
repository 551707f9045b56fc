"""Several sends per value (producer restarts) and transactions, on small logs with planted anomalies;
every expected number worked out by hand in the comments."""

import pyarrow as pa
import pytest

from harness.analysis import metrics
from harness.analysis.anomalies import DeliveryLogError, changed_offsets, check_partition, torn_transactions


def acks(rows, partition=0):
    """rows: (value, outcome, offset or None, session[, txn[, error]])."""
    cols = list(zip(*[(partition, r[0], r[1], r[2], r[5] if len(r) > 5 else None, r[3], r[4] if len(r) > 4 else None)
                      for r in rows]))
    names = ["partition", "value", "outcome", "offset", "error", "session", "txn"]
    types = [pa.int32(), pa.int64(), pa.string(), pa.int64(), pa.string(), pa.int32(), pa.int64()]
    return pa.table({n: pa.array(c, t) for n, c, t in zip(names, cols, types)})


def log(pairs, partition=0):
    """pairs: (offset, value) in offset order."""
    return pa.table({"partition": pa.array([partition] * len(pairs), pa.int32()),
                     "offset": pa.array([o for o, _ in pairs], pa.int64()),
                     "value": pa.array([v for _, v in pairs], pa.int64())})


def transactions(rows):
    """rows: (txn, session, outcome, cause)."""
    return pa.table({"txn": pa.array([r[0] for r in rows], pa.int64()),
                     "session": pa.array([r[1] for r in rows], pa.int32()),
                     "outcome": [r[2] for r in rows], "error": pa.nulls(len(rows), pa.string()),
                     "cause": pa.array([r[3] for r in rows], pa.string())})


def rows(findings, table):
    return findings.table(table).drop(["partition"]).to_pylist()


# -- several sends of one value (sessions) --------------------------------------------------------

def test_a_restart_resends_what_was_not_acknowledged_and_the_copies_are_duplicates():
    # Session 0 sent 0..3: 0 and 1 acked at 0 and 1; 2 and 3 purged in flight (unknown) but written at 2 and 3.
    # Session 1 sent 2 and 3 again (acked at 4 and 5), then 4 (acked at 6).
    f = check_partition(0, [acks([(0, "acked", 0, 0), (1, "acked", 1, 0), (2, "unknown", None, 0),
                                  (3, "unknown", None, 0), (2, "acked", 4, 1), (3, "acked", 5, 1),
                                  (4, "acked", 6, 1)])],
                        [log([(0, 0), (1, 1), (2, 2), (3, 3), (4, 2), (5, 3), (6, 4)])])
    m = f.metrics
    # By value: 5 values sent, each acked by its best send (2 and 3 in session 1).
    assert (m["sent"], m["acked"], m["unknown"], m["rejected"]) == (5, 5, 0, 0)
    # 7 records, 5 distinct: 2 and 3 read twice; one jump-back run (offsets 4-5, 2 <= 3), size 3 - 2 = 1.
    assert (m["received"], m["unique"], m["duplicates"]) == (7, 5, 2)
    assert (m["jump_back_runs"], m["max_jump_back"]) == (1, 1)
    # Every acked send's offset holds its value; nothing lost; sends go up within each session.
    assert (m["inconsistent_offsets"], m["lost"], m["received_unacked"], m["nonmonotonic_sends"]) == (0, 0, 0, 0)
    assert all(m[k] == 0 for k in ("aborted_reads", "lost_committed", "torn_transactions", "zombie_writes_visible"))


def test_a_value_twice_in_one_session_contradicts_the_log_but_once_per_session_does_not():
    with pytest.raises(DeliveryLogError, match="value 1 recorded more than once in session 0"):
        check_partition(0, [acks([(0, "acked", 0, 0), (1, "acked", 1, 0), (1, "unknown", None, 0)])], [])
    with pytest.raises(DeliveryLogError, match="value 1 recorded more than once in session 1"):  # across batches
        check_partition(0, [acks([(1, "unknown", None, 0), (1, "unknown", None, 1)]),
                            acks([(1, "acked", 3, 1)])], [])
    f = check_partition(0, [acks([(1, "unknown", None, 0)]), acks([(1, "unknown", None, 1), (1, "acked", 0, 2)])],
                        [log([(0, 1)])])
    assert (f.metrics["sent"], f.metrics["acked"]) == (1, 1)


def test_a_values_outcome_is_its_best_sends():
    # 0: rejected, then unknown -> unknown (absent: missing). 1: rejected twice -> rejected, and read: rejected-visible.
    # 2: acked (at 7), then unknown -> acked; absent while 3 was read -> lost. 3: unknown, then acked at 1.
    f = check_partition(0, [acks([(0, "rejected", None, 0), (1, "rejected", None, 0), (2, "acked", 7, 0),
                                  (3, "unknown", None, 0), (0, "unknown", None, 1), (1, "rejected", None, 1),
                                  (2, "unknown", None, 1), (3, "acked", 1, 1)])],
                        [log([(0, 1), (1, 3)])])
    m = f.metrics
    assert (m["sent"], m["acked"], m["unknown"], m["rejected"]) == (4, 2, 1, 1)
    assert (m["missing"], m["rejected_visible"], m["lost"]) == (1, 1, 1)
    assert rows(f, "lost") == [{"value": 2, "offset": 7}]
    assert m["inconsistent_offsets"] == 0  # value 2 is nowhere: lost, not also an inconsistent offset


def test_nonmonotonic_sends_are_counted_within_a_session_only():
    # Session 0: 0 at 0, 1 at 5. Session 1: 2 at 3 (below 5, but another session), 3 at 2 (below 3: counted).
    f = check_partition(0, [acks([(0, "acked", 0, 0), (1, "acked", 5, 0), (2, "acked", 3, 1), (3, "acked", 2, 1)])],
                        [log([(0, 0), (2, 3), (3, 2), (5, 1)])])
    assert f.metrics["nonmonotonic_sends"] == 1
    assert rows(f, "nonmonotonic_sends") == [{"value": 3, "offset": 2, "previous_value": 2, "previous_offset": 3}]


# -- transactions ---------------------------------------------------------------------------------

BOOK = transactions([
    (0, 0, "committed", None), (1, 0, "aborted", "planned"), (2, 0, "committed", None), (3, 0, "aborted", "restart"),
    (4, 1, "committed", None), (5, 1, "unknown", "error"), (6, 1, "aborted", "fenced"), (7, 2, "committed", None)])
SENDS = [
    (0, "acked", 0, 0, 0), (1, "acked", 1, 0, 0),  # txn 0, committed
    (2, "acked", 2, 0, 1), (3, "acked", 3, 0, 1),  # txn 1, aborted on purpose (offset 4: its abort marker)
    (4, "acked", 5, 0, 2), (5, "acked", 6, 0, 2),  # txn 2, committed
    (6, "acked", 8, 0, 3), (7, "unknown", None, 0, 3, "_PURGE_QUEUE"),  # txn 3, abandoned by a restart
    (6, "acked", 10, 1, 4), (7, "acked", 11, 1, 4),  # txn 4: 6 and 7 again, committed
    (8, "acked", 13, 1, 5), (9, "acked", 14, 1, 5),  # txn 5: commit outcome unknown
    (10, "acked", 16, 1, 6), (11, "rejected", None, 1, 6, "_FENCED"),  # txn 6: a fenced zombie's
    (12, "acked", 18, 2, 7),  # txn 7, committed
]
READ_COMMITTED = log([(0, 0), (1, 1),
                      (2, 2),  # planted: txn 1 (aborted) visible
                      (5, 4),  # planted: 5 (txn 2, committed) missing at offset 6
                      (8, 6),  # planted: txn 3's copy of 6 visible at the offset it was acked at
                      (10, 6), (11, 7),
                      (13, 8),  # planted: 9 missing, so unknown txn 5 is partly visible
                      (16, 10),  # planted: the zombie's record visible
                      (18, 12)])


def test_transaction_anomalies_planted_in_one_partition():
    f = check_partition(0, [acks(SENDS)], [READ_COMMITTED], transactions=BOOK)
    m = f.metrics
    # aborted reads: offset 2 (value 2 of txn 1) and offset 8 (txn 3's copy of 6, found by its acked offset
    # although 6 belongs to committed txn 4).
    assert m["aborted_reads"] == 2
    assert rows(f, "aborted_reads") == [{"value": 2, "offset": 2, "txn": 1}, {"value": 6, "offset": 8, "txn": 3}]
    # lost committed: 5 (txn 2).
    assert m["lost_committed"] == 1
    assert rows(f, "lost_committed") == [{"value": 5, "txn": 2, "offset": 6}]
    # torn here: txn 1 (2, 3: one read), txn 2 (4, 5: one read), txn 5 (8, 9: one read). txn 3 owns nothing (its
    # values belong to committed txn 4, 2 of 2 read); txn 6 owns 10 only (11 was never transmitted): 1 of 1.
    assert m["torn_transactions"] == 3
    parts = {r["txn"]: (r["sent"], r["visible"]) for r in rows(f, "transaction_parts")}
    assert parts == {0: (2, 2), 1: (2, 1), 2: (2, 1), 4: (2, 2), 5: (2, 1), 6: (1, 1), 7: (1, 1)}
    # zombie writes: 10 at offset 16, txn 6 of session 1.
    assert m["zombie_writes_visible"] == 1
    assert rows(f, "zombie_writes_visible") == [{"value": 10, "offset": 16, "txn": 6, "session": 1}]


def test_a_transactional_sends_outcome_follows_its_transaction():
    f = check_partition(0, [acks(SENDS)], [READ_COMMITTED], transactions=BOOK)
    m = f.metrics
    # Values 0..12. Acked (their transaction committed): 0, 1, 4, 5, 6, 7, 12 = 7. Unknown (aborted, unknown or
    # fenced transaction): 2, 3, 8, 9, 10 = 5. Rejected (refused, never transmitted): 11.
    assert (m["sent"], m["acked"], m["unknown"], m["rejected"]) == (13, 7, 5, 1)
    # 10 records, 9 distinct (6 twice): one duplicate, a jump-back run of size 0 at offset 10.
    assert (m["received"], m["unique"], m["duplicates"], m["jump_back_runs"], m["max_jump_back"]) == (10, 9, 1, 1, 0)
    # 5 is acked (committed) and absent: lost_committed, the transactional name of its loss, and nothing else
    # (not lost, not an inconsistent offset although its acked offset 6 holds nothing).
    assert (m["lost_committed"], m["lost"], m["unseen"], m["inconsistent_offsets"]) == (1, 0, 0, 0)
    # Not read: 3, 9 (unknown) and 11 (rejected): missing. Read although not acked: 2, 8, 10.
    assert (m["missing"], m["received_unacked"], m["rejected_visible"]) == (3, 3, 0)
    # Offsets of aborted transactions hold nothing under read_committed: never an inconsistent offset.
    assert rows(f, "inconsistent_offsets") == []


def test_a_clean_transactional_read_has_no_anomaly():
    # What a correct broker shows: committed transactions whole, aborted and fenced ones absent, the unknown
    # one decided by the read (here: committed, all of it visible).
    clean = log([(0, 0), (1, 1), (5, 4), (6, 5), (10, 6), (11, 7), (13, 8), (14, 9), (18, 12)])
    f = check_partition(0, [acks(SENDS)], [clean], transactions=BOOK)
    assert all(f.metrics[m.key] == 0 for m in metrics.METRICS if m.fatal and not m.consumer)
    assert (f.metrics["duplicates"], f.metrics["torn_transactions"]) == (0, 0)


def test_a_fenced_copy_is_found_by_its_acked_offset_even_when_the_value_was_committed_again():
    book = transactions([(0, 0, "aborted", "fenced"), (1, 1, "committed", None)])
    # Value 0: the zombie's send acked at 0 (txn 0), sent again by its successor and committed at 2 (txn 1).
    f = check_partition(0, [acks([(0, "acked", 0, 0, 0), (0, "acked", 2, 1, 1)])], [log([(0, 0), (2, 0)])],
                        transactions=book)
    m = f.metrics
    assert (m["zombie_writes_visible"], m["aborted_reads"], m["duplicates"], m["lost_committed"]) == (1, 0, 1, 0)
    assert rows(f, "zombie_writes_visible") == [{"value": 0, "offset": 0, "txn": 0, "session": 0}]


def test_a_copy_of_a_restart_aborted_send_is_an_aborted_read_though_that_send_was_never_acknowledged():
    # As kafka-python's child on Tansu (2026-11-28, seed 14): values 0 and 1 sent in txn 0, which a restart aborted
    # (their sends' outcome unknown, no offset told), then sent again and committed in txn 1, acked at 4 and 5.
    # read_committed shows both copies: those at 2 and 3 can be none but txn 0's (aborted reads, and duplicates).
    book = transactions([(0, 0, "aborted", "restart"), (1, 1, "committed", None)])
    sends = acks([(0, "unknown", None, 0, 0), (1, "unknown", None, 0, 0), (0, "acked", 4, 1, 1), (1, "acked", 5, 1, 1)])
    f = check_partition(0, [sends], [log([(2, 0), (3, 1), (4, 0), (5, 1)])], transactions=book)
    m = f.metrics
    assert (m["aborted_reads"], m["duplicates"], m["torn_transactions"], m["lost_committed"]) == (2, 2, 0, 0)
    assert rows(f, "aborted_reads") == [{"value": 0, "offset": 2, "txn": 0}, {"value": 1, "offset": 3, "txn": 0}]
    # Where the committed send was told no offset, which copy is whose is not known: duplicates only.
    untold = acks([(0, "unknown", None, 0, 0), (1, "unknown", None, 0, 0), (0, "acked", None, 1, 1),
                   (1, "acked", None, 1, 1)])
    m = check_partition(0, [untold], [log([(2, 0), (3, 1), (4, 0), (5, 1)])], transactions=book).metrics
    assert (m["aborted_reads"], m["duplicates"]) == (0, 2)


def test_a_transaction_missing_from_the_transactions_log_is_a_damaged_log():
    with pytest.raises(DeliveryLogError, match="transaction 3 is in the delivery log but not in the transactions log"):
        check_partition(0, [acks([(0, "acked", 0, 0, 3)])], [], transactions=transactions([(0, 0, "committed", None)]))
    with pytest.raises(DeliveryLogError, match="outcome 'maybe'"):
        check_partition(0, [acks([(0, "acked", 0, 0, 0)])], [], transactions=transactions([(0, 0, "maybe", None)]))


def test_torn_is_counted_across_partitions_by_the_driver():
    # txn 2: 2 values in p0 (1 read) and 1 in p1 (read): torn in p0 already. txn 9: 1 value in each partition,
    # read in p1 only: whole in each partition, torn across them. txn 10: all read; txn 11: none read.
    parts = pa.table({"partition": pa.array([0, 1, 0, 1, 0, 1, 0, 1], pa.int32()),
                      "txn": pa.array([2, 2, 9, 9, 10, 10, 11, 11], pa.int64()),
                      "sent": pa.array([2, 1, 1, 1, 1, 1, 1, 1], pa.int64()),
                      "visible": pa.array([1, 1, 0, 1, 1, 1, 0, 0], pa.int64())})
    book = transactions([(2, 0, "committed", None), (9, 0, "unknown", "error"), (10, 0, "committed", None),
                         (11, 1, "aborted", "planned")])
    n, table = torn_transactions(parts, book)
    assert n == 2
    assert table.to_pylist() == [
        {"txn": 2, "session": 0, "outcome": "committed", "cause": None, "sent": 3, "visible": 2},
        {"txn": 9, "session": 0, "outcome": "unknown", "cause": "error", "sent": 2, "visible": 1}]


def test_an_offset_that_held_another_record_in_the_read_uncommitted_read_is_inconsistent():
    # The same partition read twice: read_committed leaves aborted records out (offsets only one read has are
    # no change), but an offset both reads hold must hold the same record. Offset 2 changed from 5 to 7, offset
    # 3 from a number to a record that is not one; offset 4 holds a non-number in both (no change).
    committed = pa.table({"offset": pa.array([0, 2, 3, 4], pa.int64()), "value": pa.array([0, 5, 6, None], pa.int64())})
    uncommitted = pa.table({"offset": pa.array([0, 1, 2, 3, 4], pa.int64()),
                            "value": pa.array([0, 9, 7, None, None], pa.int64())})
    changed = changed_offsets(committed, uncommitted, "read_uncommitted")
    cause = "another record in the read_uncommitted read"
    assert changed == [(5, 2, 7, cause, 2), (6, 3, None, cause, 3)]
    f = check_partition(0, [acks([(0, "acked", 0, 0, 0)])], [log([(0, 0)])], transactions=BOOK, changed=changed)
    assert f.metrics["inconsistent_offsets"] == 2
    assert [(r["value"], r["offset"], r["found_value"]) for r in rows(f, "inconsistent_offsets")] == [
        (5, 2, 7), (6, 3, None)]


def test_committed_values_a_read_did_not_reach_are_unseen_not_lost_committed_or_torn():
    # Two committed transactions: 0, 1, 2 (txn 0) and 3, 4, 5 (txn 1), acked at offsets 0..2 and 4..6 (3: txn 0's
    # commit marker). The read_committed read holds 0..3 only: an open (hanging) transaction of another producer
    # holds the last stable offset at 5, so 4 and 5 cannot be read, and the read is not known to be complete.
    sends = [(v, "acked", v if v < 3 else v + 1, 0, 0 if v < 3 else 1) for v in range(6)]
    book = transactions([(0, 0, "committed", None), (1, 0, "committed", None)])
    read = log([(0, 0), (1, 1), (2, 2), (4, 3)])
    f = check_partition(0, [acks(sends)], [read], transactions=book)
    m = f.metrics
    # Nothing beyond the highest value read (3) is judged: 4 and 5 are unseen (lost or hidden, nobody can tell).
    assert (m["unseen"], m["lost_committed"], m["torn_transactions"], m["lost"]) == (2, 0, 0, 0)
    # The same log after a read proved complete: 4 and 5 are lost, and txn 1 is torn (1 of 3 read).
    f = check_partition(0, [acks(sends)], [read], transactions=book, read=(0, 5))
    m = f.metrics
    assert (m["unseen"], m["lost_committed"], m["torn_transactions"], m["lost"]) == (0, 2, 1, 0)


# -- a send reported failed in a committed transaction ----------------------------------------------------

def reported(rows, partition=0):
    """rows: (value, outcome, offset or None, txn, error, latency_ms or None), session 0: a latency and an error
    say the client's delivery report told the failure; a refusal in produce() has no latency."""
    return pa.table({"partition": pa.array([partition] * len(rows), pa.int32()),
                     "value": pa.array([r[0] for r in rows], pa.int64()), "outcome": [r[1] for r in rows],
                     "offset": pa.array([r[2] for r in rows], pa.int64()),
                     "error": pa.array([r[4] for r in rows], pa.string()),
                     "latency_ms": pa.array([r[5] for r in rows], pa.float64()),
                     "session": pa.array([0] * len(rows), pa.int32()),
                     "txn": pa.array([r[3] for r in rows], pa.int64())})


FAILED_BOOK = transactions([(0, 0, "committed", None), (1, 0, "aborted", "error"), (2, 0, "committed", None)])
FAILED_SENDS = [
    (0, "acked", 0, 0, None, 5.0),
    (1, "unknown", None, 0, "KafkaTimeoutError", 120000.0),  # told failed, committed all the same: counted
    (2, "unknown", None, 1, "KafkaTimeoutError", 120000.0),  # its transaction aborted: not counted
    (3, "rejected", None, 2, "MSG_SIZE_TOO_LARGE", None),  # refused in produce(), told at once: not counted
    (4, "unknown", None, 2, None, None),  # never reported (the client torn down): not counted
    (5, "rejected", None, 2, "MessageSizeTooLargeError", 3.0),  # rejected through its report: counted
]


def test_a_send_reported_failed_in_a_committed_transaction_is_failed_committed_whatever_the_log_holds():
    # Value 1 is in the log (the broker wrote it after the client gave up on it), 4 too; 2, 3 and 5 are not.
    f = check_partition(0, [reported(FAILED_SENDS)], [log([(0, 0), (1, 1), (3, 4)])], transactions=FAILED_BOOK)
    assert f.metrics["failed_committed"] == 2
    assert rows(f, "failed_committed") == [{"value": 1, "txn": 0, "error": "KafkaTimeoutError"},
                                           {"value": 5, "txn": 2, "error": "MessageSizeTooLargeError"}]
    # Nothing else: the committed values the log holds are read, the refused and rejected ones were never sent.
    assert [m.key for m in metrics.METRICS if m.fatal and f.metrics.get(m.key)] == ["failed_committed"]


def test_failed_committed_needs_a_committed_transaction_and_the_clients_report():
    # The same sends with the transactions aborted: nothing; and without latencies (a log of an older release,
    # or every failure a refusal): nothing, there is no telling a report from a refusal.
    aborted = transactions([(0, 0, "aborted", "error"), (1, 0, "aborted", "error"), (2, 0, "aborted", "planned")])
    f = check_partition(0, [reported(FAILED_SENDS)], [log([])], transactions=aborted)
    assert f.metrics["failed_committed"] == 0
    unreported = [r[:5] + (None,) for r in FAILED_SENDS]
    f = check_partition(0, [reported(unreported)], [log([(0, 0), (1, 1), (3, 4)])], transactions=FAILED_BOOK)
    assert f.metrics["failed_committed"] == 0
    # Outside transactions a failed send is just that (unknown or rejected), never failed committed.
    plain = [(v, o, off, None, e, lat) for v, o, off, _, e, lat in FAILED_SENDS]
    f = check_partition(0, [reported(plain)], [log([(0, 0), (1, 1), (3, 4)])])
    assert f.metrics["failed_committed"] == 0


def test_an_aborted_transactions_values_sent_again_in_the_same_session_are_one_value_each():
    # What librdkafka's transactional workload does after an abortable error (a commit timed out): it aborts and
    # sends the transaction's values again in its next transaction, with the same instance (session 0). Seen on
    # Kafka 4.1.0 (2026-11-29): value 667 sent in txn 20 (aborted), 21 (aborted), 22 (committed), all in session 0;
    # the analysis refused that log as contradictory until a value could be sent once per transaction.
    book = transactions([(20, 0, "aborted", "error"), (21, 0, "aborted", "error"), (22, 0, "committed", None)])
    sends = [(0, "unknown", None, 0, 20, "_PURGE_QUEUE"), (1, "unknown", None, 0, 20, "_PURGE_QUEUE"),
             (0, "unknown", None, 0, 21, "_PURGE_QUEUE"), (1, "unknown", None, 0, 21, "_PURGE_QUEUE"),
             (0, "acked", 0, 0, 22), (1, "acked", 1, 0, 22)]
    f = check_partition(0, [acks(sends)], [log([(0, 0), (1, 1)])], transactions=book)
    m = f.metrics
    assert (m["sent"], m["acked"], m["unknown"], m["duplicates"], m["lost_committed"]) == (2, 2, 0, 0, 0), m
    assert all(m[x.key] == 0 for x in metrics.METRICS if x.fatal and not x.consumer), m
    # A copy the aborted transaction wrote and read_committed shows is still an aborted read.
    f = check_partition(0, [acks([(0, "acked", 0, 0, 20), (0, "acked", 1, 0, 22)])], [log([(0, 0), (1, 0)])],
                        transactions=book)
    assert (f.metrics["aborted_reads"], f.metrics["duplicates"]) == (1, 1)
    # Twice in one transaction of a session still contradicts the log, and says where.
    with pytest.raises(DeliveryLogError, match="value 0 recorded more than once in transaction 22 of session 0"):
        check_partition(0, [acks([(0, "acked", 0, 0, 22), (0, "acked", 1, 0, 22)])], [], transactions=book)
