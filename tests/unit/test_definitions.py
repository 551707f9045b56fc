"""Each anomaly definition of analysis/anomalies.py on its own: a pure function over a partition's arrays,
tried on small hand-made arrays whose answer is worked out in the comment beside it. (The streaming
checker that composes them is compared with the plain-Python oracle in test_anomalies_property.py and
test_transactions_property.py.)"""

import numpy as np
import pyarrow as pa

from harness.analysis import anomalies as a

I = lambda *x: np.array(x, dtype=np.int64)  # noqa: E731
B = lambda *x: np.array(x, dtype=bool)  # noqa: E731
ACK, REJ, UNK = a.ACKED, a.REJECTED, a.UNKNOWN


def test_jump_backs_compare_with_the_highest_read_before_earlier_batches_included():
    jump, before = a.jump_backs(I(3, 1, 4, 4, 2), highest=a.NONE)
    assert jump.tolist() == [False, True, False, True, True] and before[1:].tolist() == [3, 3, 4, 4]
    jump, _ = a.jump_backs(I(5, 9), highest=7)  # 5 is below the 7 of an earlier batch
    assert jump.tolist() == [True, False]
    assert a.jump_backs(I(), highest=7)[0].tolist() == []


def test_duplicate_cases_tell_a_repeat_from_a_first_late_copy():
    values, offsets = I(0, 2, 1, 2, 1), I(10, 11, 12, 13, 14)
    jump, _ = a.jump_backs(values, a.NONE)
    first = np.full(3, -1, np.int64)
    first[values[~jump]] = offsets[~jump]
    repeat, rows, firsts = a.duplicate_cases(values, offsets, jump, first)
    # 1 at 12 is late but new (a reorder); 2 at 13 repeats 11; 1 at 14 repeats the reorder at 12
    assert repeat.tolist() == [False, False, False, True, True]
    assert rows == [(2, 13, 11), (1, 14, 12)] and firsts == [(1, 12)]
    assert first.tolist() == [10, -1, 11]  # not changed


def test_run_kind():
    assert (a.run_kind(3, 3), a.run_kind(3, 0), a.run_kind(3, 1)) == ("duplicate", "reorder", "mixed")


def test_outcome_cases_by_what_the_client_was_told_and_whether_it_was_read():
    code, present = np.array([0, ACK, REJ, UNK, REJ, UNK], np.int8), B(False, False, False, False, True, True)
    assert np.flatnonzero(a.missing_cases(code, present)).tolist() == [2, 3]  # never sent (0) is not missing
    assert np.flatnonzero(a.rejected_visible_cases(code, present)).tolist() == [4]
    assert np.flatnonzero(a.received_unacked_cases(code, present)).tolist() == [5]


def test_lost_cases_after_a_complete_read_and_without_one():
    absent, told = B(True, False, True, True), I(0, 1, 5, -1001)
    lost, unseen, deleted = a.lost_cases(absent, told, highest=1, read=(1, 9))
    assert (lost.tolist(), unseen.tolist(), deleted.tolist()) == (
        [False, False, True, True], [False] * 4, [True, False, False, False])  # offset 0 below the log start 1
    lost, unseen, _ = a.lost_cases(absent, told, highest=1, read=None)
    assert lost.tolist() == [True, False, False, False] and unseen.tolist() == [False, False, True, True]


def test_minus_one_batches_and_nonmonotonic_sends():
    offsets, sessions = I(5, -1, 0, 1, 9, 0), np.array([0, 0, 0, 0, 0, 1], np.int32)
    assert a.minus_one_batches(offsets, sessions).tolist() == [False, True, True, True, False, False]
    assert a.nonmonotonic_cases(I(5, 3, 7, 2), np.array([0, 0, 0, 1], np.int32)).tolist() == [1]
    # -1 alone (then 9, or -1 again, or another session's 0): told no offset, no batch
    offsets, sessions = I(-1, 9, -1, -1, 0), np.array([0, 0, 0, 0, 1], np.int32)
    assert a.minus_one_batches(offsets, sessions).tolist() == [False] * 5


def test_untold_sends_are_the_lone_minus_ones_in_send_order():
    values, offsets, sessions = I(4, 1, 2, 3, 0), I(0, -1, -1, 5, a.NO_OFFSET), np.array([0, 0, 0, 0, 0], np.int32)
    # send order: 0 (untold, -1001), 1 told -1, 2 told -1, 3 told 5, 4 told 0: both -1s stand alone
    assert a.untold_sends(values, offsets, sessions).tolist() == [False, True, True, False, False]
    values, offsets = I(1, 2, 3), I(-1, 0, 1)  # a batch told -1, 0, 1: base_offset_minus_one, not untold
    assert a.untold_sends(values, offsets, np.zeros(3, np.int32)).tolist() == [False] * 3


def test_misplaced_cases_split_the_quirk_and_truncated_acks_from_real_inconsistencies_and_leave_lost_values_out():
    first, epochs = I(4, -1, 6, 1, 8), np.array([2, -1, 2, 3, -1], np.int32)
    misplaced = [(0, 9, 7, "holds another value", 0, 2), (1, 3, None, "no record at this offset", 0, -1),
                 (2, 0, 0, "holds another value", 1, 5),  # in a base -1 batch: the quirk, whatever the epochs
                 (3, 5, 9, "holds another value", 0, 4),  # the offset rewritten under a later epoch
                 (4, 6, 1, "holds another value", 0, 4)]  # the value's copy of unknown epoch: not provably truncated
    inconsistent, quirk, truncated = a.misplaced_cases(misplaced, first, {(1, 2)}, epochs)
    assert inconsistent == [(0, 9, 7, "holds another value", 4), (4, 6, 1, "holds another value", 8)]
    assert quirk == [(2, 0, 0, "holds another value", 6)]  # value 1 is absent: lost, in none of them
    assert truncated == [(3, 5, 9, "holds another value of leader epoch 4 (the value's copy: epoch 3)", 1)]


def test_gap_cases_name_each_run_of_absent_values_by_its_worst():
    absent, lost = B(False, True, True, False, True), B(False, False, True, False, False)
    none = B(False, False, False, False, False)
    assert a.gap_cases(absent, lost, none, none) == [(1, 2, 2, 1, 0, "lost"), (4, 4, 1, 0, 0, "missing")]


def test_record_transactions_by_the_acked_offset_first_then_by_value():
    rank = np.array([a.COMMITTED, a.COMMITTED], np.int8)
    txn = I(0, 0)
    # value 1 was also sent in fenced txn 2 and told offset 6, as was value 0: both sends told offset 6
    written = (I(6, 6), I(0, 1), np.array([a.FENCED, a.FENCED], np.int8), I(2, 2))
    r, t = a.record_transactions(I(6, 7), I(1, 1), rank, txn, written)
    assert r.tolist() == [a.FENCED, a.COMMITTED] and t.tolist() == [2, 0]  # offset 7: no send told it


def test_transaction_cases():
    rank = np.array([a.COMMITTED, a.COMMITTED, a.ABORTED_TXN, 0], np.int8)
    txn, present = I(0, 0, 1, -1), B(True, False, False, True)
    assert a.lost_committed_cases(rank, present).tolist() == [1]
    keys, sent, visible = a.transaction_parts(rank, txn, present)
    assert (keys.tolist(), sent.tolist(), visible.tolist()) == ([0, 1], [2, 1], [1, 0])
    assert a.torn_cases(sent, visible).tolist() == [True, False]


def test_changed_offsets_between_two_reads():
    log = pa.table({"offset": I(0, 1, 2), "value": pa.array([0, 1, None], pa.int64())})
    other = pa.table({"offset": I(1, 2, 3), "value": pa.array([5, None, 3], pa.int64())})
    assert a.changed_offsets(log, other, "read_uncommitted") == [(1, 1, 5, "another record in the read_uncommitted read", 1)]
