"""The anomaly definitions: one topic partition at a time, streaming numpy, no Spark and no I/O.

    check_partition(partition, acks_batches, log_batches, read=(start, end)) -> Findings (metrics + detail tables)

acks batches are the delivery log (partition, value, outcome, offset[, error, sent_at, latency_ms, session,
txn]), log batches the partition as read back (partition, offset, value[, timestamp]) in offset order;
a value that is not the workload's (another format, another producer) arrives as null. A value may be
sent several times, once per session (the application sends again after a producer restart what was
not acknowledged) and, in a session, once per transaction (it sends an aborted transaction's values again in
its next one); the same value twice otherwise contradicts the log. A value's outcome is its
best send's: acked if any send was, else unknown if any was, else rejected. The transactions log
(transactions.parquet, transactional variants only) says how each transaction ended.
engine/partitions.py runs this once per topic partition; bench/analysis.py runs it in one process.

Definitions (the README's Words; the registry in metrics.py has one line for each; each is a pure
function below -- jump_backs, duplicate_cases, lost_cases, missing_cases, ... -- that PartitionCheck composes):
  received     records read that carry a value the workload sent to this partition
  duplicate    an extra copy of a value already read (duplicates = received - unique)
  jump-back    a record whose value is not above the highest value read before it; consecutive
               jump-backs form a run of size highest_before - first_value (the seed article's
               "m=65899 Last-acked=65929 JUMP BACK 30"), kind duplicate / reorder / mixed
  lost         acked, never read by a complete final read (`read` given: the partition read from its log
               start to its end, re-checked until the end held still), wherever it sat: middle or tail
  unseen       acked, never read, when the read is not known to be complete (`read` None: a run folder
               of an older release, or a read whose end kept moving): lost if a later value (by send
               order) was read, else unseen (lost or late, nobody can tell; the verdict is unknown)
  deleted_before_read  the partition's log start offset at the final read: records the broker deleted
               before it (retention, truncation of the start); an acked value told an offset among them is
               counted here, not as lost
  missing      rejected or unknown, never read
  received_unacked  unknown and read;  rejected_visible  rejected and read ("rejected" lied)
  inconsistent offset  an acked value that is in the log, but not at the offset the client was told (every
               acked send is checked), or an offset that held another record in another read of the
               partition (transactional variants: the read_uncommitted read). An acked value absent from the
               log is lost, never also this.
  base_offset_minus_one  the same for the sends of a batch the broker acknowledged with base offset -1
               (Tansu's answer to a retry it deduplicated: librdkafka then tells -1, 0, 1, ... for the
               batch's messages): its own name, so an experiment can allow exactly that broker quirk. A send
               told -1 alone was told no offset (librdkafka's implicit ack): checked for loss only
  nonmonotonic send    an acked send whose offset is below the previous acked send's of its session
               (base_offset_minus_one sends left out: one event, one name)
  unexpected   a record whose value the workload never sent to this partition (or no number at all)

Transactional variants (the log read with read_committed). A send counts as acked when its
transaction committed (the commit proves delivery), as unknown when it aborted or its commit's
outcome is unknown, as rejected when the client refused it. A value belongs to the transaction of
its best send: committed > unknown > aborted > fenced (a transaction of an instance a successor
fenced, whatever its commit returned). A record is attributed to a send first by its acked offset
(a copy written by an aborted transaction and sent again later is still found), else by its value.
  aborted read   a record of an aborted transaction visible
  zombie write   a record of a fenced transaction visible
  lost committed a value of a committed transaction not read
  torn           a transaction whose values are partly read (per partition here; across partitions
                 by the driver, from each partition's per-transaction counts: transaction_parts)
  failed committed  a send the client reported failed (rejected or unknown, through its delivery report,
                 with its error) in a transaction whose commit returned: a commit must refuse a transaction
                 with a failed send, whatever the log then holds (a send refused in produce(), told at once,
                 is not one)
Unknown transactions are neither lost nor aborted: the read decides (all read: committed, none: aborted).
A value of a committed transaction that is not read is lost_committed, not also lost.

Unexpected records are left out of the order analysis (they would make every later record a
jump-back), and memory is bounded by the values sent, never by the largest value read.

Why it is fast: a record that is not a jump-back is above every earlier value, so it is new and
distinct; only jump-backs (rare) are looked at one by one. Everything else is whole-array numpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..formats import Outcome, TxnCause, TxnOutcome
from . import metrics as registry
from .timing import TIMING_TABLES, PartitionTiming

NONE = np.iinfo(np.int64).min
NO_OFFSET = -1001  # librdkafka's RD_KAFKA_OFFSET_INVALID: no offset is told with acks=0 (null in acks.parquet)
ACKED, REJECTED, UNKNOWN = (o.code for o in Outcome)  # 0: never sent
PRIORITY = np.array([0, 3, 1, 2], dtype=np.int8)  # by code: a value's outcome is its best send's
BY_PRIORITY = np.array([0, REJECTED, UNKNOWN, ACKED], dtype=np.int8)
# What a transaction says about its sends, worst first; a value takes its best send's.
FENCED, ABORTED_TXN, UNDECIDED, COMMITTED = 1, 2, 3, 4
TXN_RANKS = {TxnOutcome.COMMITTED: COMMITTED, TxnOutcome.ABORTED: ABORTED_TXN, TxnOutcome.UNKNOWN: UNDECIDED}
_RANK_SHIFT = 40  # a value's transaction key: rank << 40 | txn (txn numbers stay far below 2**40)

_I32, _I64, _STR = pa.int32(), pa.int64(), pa.string()
# Every detail table under <variant>/anomalies/, with its columns: the one definition.
TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    "jump_back_runs": [("partition", _I32), ("first_offset", _I64), ("last_offset", _I64), ("first_value", _I64),
                       ("highest_before", _I64), ("size", _I64), ("length", _I64), ("kind", _STR)],
    "duplicates": [("partition", _I32), ("value", _I64), ("offset", _I64), ("first_offset", _I64)],
    "lost": [("partition", _I32), ("value", _I64), ("offset", _I64)],
    "unseen": [("partition", _I32), ("value", _I64), ("offset", _I64)],
    "deleted_before_read": [("partition", _I32), ("value", _I64), ("offset", _I64)],
    "gaps": [("partition", _I32), ("first_value", _I64), ("last_value", _I64), ("values", _I64), ("lost", _I64),
             ("unseen", _I64), ("kind", _STR)],
    # offset: where the client was told the value is; found_value: what that offset holds; found_at: the
    # offset of the value's first copy in the log.
    "inconsistent_offsets": [("partition", _I32), ("value", _I64), ("offset", _I64), ("found_value", _I64),
                             ("cause", _STR), ("found_at", _I64)],
    "base_offset_minus_one": [("partition", _I32), ("value", _I64), ("offset", _I64), ("found_value", _I64),
                              ("cause", _STR), ("found_at", _I64)],
    "truncated_acks": [("partition", _I32), ("value", _I64), ("offset", _I64), ("found_value", _I64),
                       ("cause", _STR), ("found_at", _I64)],
    "nonmonotonic_sends": [("partition", _I32), ("value", _I64), ("offset", _I64), ("previous_value", _I64),
                           ("previous_offset", _I64)],
    "rejected_visible": [("partition", _I32), ("value", _I64), ("offset", _I64), ("error", _STR)],
    "unexpected": [("partition", _I32), ("offset", _I64), ("value", _I64)],
    # Transactional variants (the read_committed log).
    "aborted_reads": [("partition", _I32), ("value", _I64), ("offset", _I64), ("txn", _I64)],
    "zombie_writes_visible": [("partition", _I32), ("value", _I64), ("offset", _I64), ("txn", _I64),
                              ("session", _I32)],
    "lost_committed": [("partition", _I32), ("value", _I64), ("txn", _I64), ("offset", _I64)],
    "failed_committed": [("partition", _I32), ("value", _I64), ("txn", _I64), ("error", _STR)],
    # Built by the driver from every partition's transaction_parts (a transaction spans partitions).
    "torn_transactions": [("txn", _I64), ("session", _I32), ("outcome", _STR), ("cause", _STR), ("sent", _I64),
                          ("visible", _I64)],
    # Per second: records by produce time, acknowledgements by report time, and latency quantiles of the
    # sends of that second (timing.py, filled in when the partitions are combined).
    "series": [("second", _I64), ("records", _I64), ("duplicates", _I64), ("jump_backs", _I64), ("acks", _I64),
               ("latency_p50_ms", pa.float64()), ("latency_p99_ms", pa.float64())],
    "partitions": [("partition", _I32)] + [(m.key, _I64) for m in registry.METRICS],
}


# What each partition's task returns for the driver to combine (not written to the run folder): per
# transaction, its values in this partition and how many of them were read.
TXN_TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    "transaction_parts": [("partition", _I32), ("txn", _I64), ("sent", _I64), ("visible", _I64)],
}


class DeliveryLogError(ValueError):
    """The delivery log contradicts itself (a value recorded twice, an unknown outcome, a null)."""


class OutOfOrder(Exception):
    """The log was not fed in offset order: the caller sorts the partition and starts again."""


@dataclass
class Findings:
    partition: int
    metrics: dict[str, int]
    tables: dict[str, dict[str, list]] = field(default_factory=dict)  # table -> column -> values

    def table(self, name: str) -> pa.Table:
        cols = self.tables.get(name, {})
        n = len(next(iter(cols.values()), []))
        schema = TABLES.get(name) or TIMING_TABLES.get(name) or TXN_TABLES[name]
        return pa.table({c: pa.array(cols.get(c, [None] * n), t) for c, t in schema}, schema=pa.schema(schema))


def _grow(a: np.ndarray, size: int, fill) -> np.ndarray:
    if size <= len(a):
        return a
    out = np.full(max(size, len(a) * 3 // 2), fill, dtype=a.dtype)
    out[: len(a)] = a
    return out


class TransactionBook:
    """The transactions log: each transaction's rank (COMMITTED, UNDECIDED, ABORTED_TXN or FENCED) and session."""

    def __init__(self, table: pa.Table | None = None):
        if table is None or table.num_rows == 0:
            self.txn = np.zeros(0, np.int64)
            self.rank = np.zeros(0, np.int8)
            self.session = np.zeros(0, np.int32)
            return
        txn = _ints(table.column("txn"), -1)
        outcome = table.column("outcome").to_pylist()
        if (txn < 0).any():
            raise DeliveryLogError("the transactions log has a row without a transaction number")
        bad = [o for o in outcome if o not in TXN_RANKS]
        if bad:
            raise DeliveryLogError(f"the transactions log has the outcome {bad[0]!r} "
                                   f"(allowed: {', '.join(TXN_RANKS)})")
        rank = np.array([TXN_RANKS[o] for o in outcome], dtype=np.int8)
        if "cause" in table.schema.names:
            fenced = pc.fill_null(pc.equal(table.column("cause"), str(TxnCause.FENCED)), False)
            rank[fenced.to_numpy(zero_copy_only=False)] = FENCED
        order = np.argsort(txn, kind="stable")
        self.txn, self.rank = txn[order], rank[order]
        sessions = table.column("session") if "session" in table.schema.names else pa.nulls(len(txn), pa.int32())
        self.session = _ints(sessions, -1).astype(np.int32)[order]

    def _find(self, txns: np.ndarray) -> np.ndarray:
        pos = np.minimum(np.searchsorted(self.txn, txns), max(len(self.txn) - 1, 0))
        found = (self.txn[pos] == txns) if len(self.txn) else np.zeros(len(txns), dtype=bool)
        if not found.all():
            missing = int(txns[np.flatnonzero(~found)[0]])
            raise DeliveryLogError(f"transaction {missing} is in the delivery log but not in the transactions log")
        return pos

    def ranks(self, txns: np.ndarray) -> np.ndarray:
        return self.rank[self._find(txns)]

    def sessions(self, txns: np.ndarray) -> np.ndarray:
        return self.session[self._find(txns)]


class Outcomes:
    """One partition's delivery log, indexed by value: the value's outcome code (its best send's), an acked
    offset, error name, and its transaction; plus every acked send (value, offset, session)."""

    def __init__(self, partition: int, periods: list[tuple[int, int, int]] = (), book: TransactionBook | None = None,
                 sends: int | None = None):
        self.partition = partition
        self.sends = sends  # rows of the whole delivery log: no value reaches it (None: not known)
        self.code = np.zeros(0, dtype=np.int8)
        self.offset = np.full(0, NO_OFFSET, dtype=np.int64)
        # The first send of each value (its key: session << 32 | transaction + 1, 0 outside transactions), and the
        # further ones (resends): a value may be sent once per session, and in a session once per transaction.
        self.first_send = np.full(0, -1, dtype=np.int64)
        self.more_sends: dict[int, set[int]] = {}  # value -> keys of its further sends
        self.txn_key = np.full(0, -1, dtype=np.int64)  # value -> rank << 40 | txn of its best transactional send
        # value -> rank << 40 | txn of its best send in a transaction that did not commit, never acknowledged
        self.untold_key = np.full(0, -1, dtype=np.int64)
        self.errors: dict[int, str] = {}  # value -> librdkafka error name, for sends that were not acked
        self.ack_seconds: dict[int, int] = {}  # acknowledgement second -> acks, when times were recorded
        self.timing = PartitionTiming(periods)
        self.book = book or TransactionBook()
        self.transactional = False  # some send carried a transaction
        self._acked: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # acked sends: (value, offset, session)
        # Sends the broker acknowledged in transactions that did not commit: (offset, value, rank, txn).
        self._written: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.failed_committed: list[tuple[int, int, str]] = []  # (value, txn, error): failed committed sends

    def feed(self, values: np.ndarray, codes: np.ndarray, offsets: np.ndarray,
             errors: list | None = None, acked_at_ms: np.ndarray | None = None,
             sessions: np.ndarray | None = None, txns: np.ndarray | None = None,
             reported: np.ndarray | None = None) -> None:
        """reported: the rows whose outcome came through the client's delivery report (a latency and an error
        for a failure; not a send refused in produce(), nor one never reported): where failed committed looks."""
        if len(values) == 0:
            return
        if values.min() < 0:
            raise DeliveryLogError(f"partition {self.partition}: negative value {int(values.min())}")
        if (codes == 0).any():
            raise DeliveryLogError(f"partition {self.partition}: a row without a known outcome")
        sessions = np.zeros(len(values), np.int32) if sessions is None else sessions
        top = int(values.max()) + 1
        if self.sends is not None and top > self.sends:  # before the arrays grow to it
            raise DeliveryLogError(f"partition {self.partition}: value {top - 1:,} but only {self.sends:,} sends "
                                   "recorded (values are 0, 1, 2, ... per partition)")
        self.code = _grow(self.code, top, 0)
        self.offset = _grow(self.offset, top, NO_OFFSET)
        self.first_send = _grow(self.first_send, top, -1)
        keys = sessions.astype(np.int64) << 32
        if txns is not None:  # an application sends an aborted transaction's values again, in a new transaction
            keys |= np.where(txns >= 0, txns + 1, 0)
        self._sessions(values, keys)
        code, told = codes.copy(), offsets.copy()
        if txns is not None and (txns >= 0).any():
            self._transactions(values, codes, offsets, txns, code, told, errors, reported)
        priority = PRIORITY[code]
        order = np.argsort(priority, kind="stable")  # so the best send of a value is written last
        v, pr = values[order], priority[order]
        better = pr > PRIORITY[self.code[v]]
        self.code[v[better]] = BY_PRIORITY[pr[better]]
        acked = code == ACKED
        self.offset[values[acked]] = told[acked]
        self._acked.append((values[acked], told[acked], sessions[acked]))
        if errors is not None:
            for i in np.flatnonzero(codes != ACKED).tolist():
                if errors[i] is not None:
                    self.errors[int(values[i])] = errors[i]
        if acked_at_ms is not None:
            _count_seconds(self.ack_seconds, acked_at_ms[codes == ACKED] // 1000)

    def _sessions(self, values: np.ndarray, sessions: np.ndarray) -> None:
        """A value may be sent once per session and, in a session, once per transaction (`sessions`: each send's
        key, as first_send holds them); twice under one key contradicts the log."""
        if sessions[0] == sessions.min() == sessions.max():  # one session (the common case): values only
            v = np.sort(values)
            same = np.flatnonzero(np.diff(v) == 0)
            if len(same):
                self._twice(int(v[same[0]]), int(sessions[0]))
        else:
            order = np.lexsort((sessions, values))
            v, s = values[order], sessions[order]
            same = np.flatnonzero((np.diff(v) == 0) & (np.diff(s) == 0))
            if len(same):
                self._twice(int(v[same[0]]), int(s[same[0]]))
        first = self.first_send[values]
        clash = np.flatnonzero(first == sessions)
        if len(clash):
            self._twice(int(values[clash[0]]), int(sessions[clash[0]]))
        new = first == -1
        self.first_send[values[new]] = sessions[new]  # with a value twice in the batch, one session wins
        again = np.flatnonzero(self.first_send[values] != sessions)
        for i in again.tolist():  # resends: rare
            value, session = int(values[i]), int(sessions[i])
            seen = self.more_sends.setdefault(value, set())
            if session in seen:
                self._twice(value, session)
            seen.add(session)

    def _twice(self, value: int, key: int) -> None:
        session, txn = key >> 32, (key & 0xFFFFFFFF) - 1
        where = f"transaction {txn} of session {session}" if txn >= 0 else f"session {session}"
        raise DeliveryLogError(f"partition {self.partition}: value {value} recorded more than once in {where}")

    def _transactions(self, values, codes, offsets, txns, code, told, errors=None, reported=None) -> None:
        """Transactional sends: outcome by their transaction (code, told changed in place); failed committed
        sends noted."""
        self.transactional = True
        in_txn = txns >= 0
        rank = np.zeros(len(values), dtype=np.int8)
        rank[in_txn] = self.book.ranks(txns[in_txn])
        if reported is not None and errors is not None:
            failed = np.flatnonzero(in_txn & (rank == COMMITTED) & (codes != ACKED) & reported)
            self.failed_committed += [(int(values[i]), int(txns[i]), errors[i]) for i in failed.tolist()]
        sent = in_txn & (codes != REJECTED)  # refused sends were never transmitted: they stay rejected
        committed, other = sent & (rank == COMMITTED), sent & (rank != COMMITTED)
        code[committed] = ACKED
        told[committed & (codes != ACKED)] = NO_OFFSET  # delivered (the commit says so), offset never told
        code[other] = UNKNOWN
        told[other] = NO_OFFSET
        written = other & (codes == ACKED) & (offsets != NO_OFFSET)
        if written.any():
            self._written.append((offsets[written], values[written], rank[written], txns[written]))
        key = (rank.astype(np.int64) << _RANK_SHIFT) | txns
        top = int(values.max()) + 1
        self.txn_key = _grow(self.txn_key, top, -1)
        np.maximum.at(self.txn_key, values[sent], key[sent])
        untold = other & ~written
        if untold.any():
            self.untold_key = _grow(self.untold_key, top, -1)
            np.maximum.at(self.untold_key, values[untold], key[untold])

    def trimmed(self) -> "Outcomes":
        sent = np.flatnonzero(self.code)
        n = int(sent[-1]) + 1 if len(sent) else 0
        self.code, self.offset = self.code[:n], self.offset[:n]
        if self.transactional:  # allocated only when transactions appeared
            self.txn_key = _grow(self.txn_key, n, -1)[:n]
            self.untold_key = _grow(self.untold_key, n, -1)[:n]
        return self

    # -- what the checks read ----------------------------------------------------------------
    def acked_sends(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every acked send: (value, offset, session) arrays (joined once, when the log is complete)."""
        if not self._acked:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32)
        if len(self._acked) > 1:
            self._acked = [tuple(np.concatenate([a[k] for a in self._acked]) for k in range(3))]
        return self._acked[0]

    def written(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Acked sends of transactions that did not commit, by offset: (offset, value, rank, txn)."""
        if not self._written:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int64)
        cols = [np.concatenate([w[k] for w in self._written]) for k in range(4)]
        order = np.argsort(cols[0], kind="stable")
        return tuple(c[order] for c in cols)

    def value_rank(self) -> np.ndarray:
        return np.where(self.txn_key < 0, 0, self.txn_key >> _RANK_SHIFT).astype(np.int8)

    def value_txn(self) -> np.ndarray:
        return np.where(self.txn_key < 0, -1, self.txn_key & ((1 << _RANK_SHIFT) - 1))

    def untold(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per value: (rank, txn) of its best never-acknowledged send in a transaction that did not commit (rank 0:
        none), and the offset its acknowledged send was told (NO_OFFSET: none)."""
        key = self.untold_key
        return (np.where(key < 0, 0, key >> _RANK_SHIFT).astype(np.int8),
                np.where(key < 0, -1, key & ((1 << _RANK_SHIFT) - 1)), self.offset)


def _count_seconds(counts: dict[int, int], seconds: np.ndarray) -> None:
    if len(seconds) == 0:
        return
    keys, n = np.unique(seconds, return_counts=True)
    for k, c in zip(keys.tolist(), n.tolist()):
        counts[k] = counts.get(k, 0) + c


class PartitionCheck:
    """Feed one partition's records in offset order, batch by batch; finish() gives the findings."""

    def __init__(self, outcomes: Outcomes, read: tuple[int, int] | None = None, changed: list[tuple] = ()):
        self.outcomes = outcomes
        self.partition = outcomes.partition
        self.read = read  # (log start, end) of a complete final read; None: not known to be complete
        self.changed = list(changed)  # offsets that held another record in another read (changed_offsets)
        n = len(outcomes.code)
        self.first = np.full(n, -1, dtype=np.int64)  # offset of each value's first copy
        self.first_epoch = np.full(n, -1, dtype=np.int32)  # its leader epoch (-1: not known)
        self.received = self.repeats = self.reorders = 0
        self.highest = NONE
        self.last_offset = NONE
        self.open_run: list | None = None  # [first_offset, last_offset, first_value, highest_before, length, repeats]
        self.runs: list[tuple] = []
        self.duplicates: list[tuple] = []  # (value, offset, first_offset)
        self.unexpected: list[tuple] = []  # (offset, value or None)
        self.seconds: dict[int, list[int]] = {}  # epoch second -> [records, duplicates, jump_backs]
        values, offsets, sessions = outcomes.acked_sends()
        told = (offsets != NO_OFFSET) & ~untold_sends(values, offsets, sessions)
        order = np.argsort(offsets[told], kind="stable")
        # Acked sends, by offset.
        self.ack_val, self.ack_off, self.ack_ses = values[told][order], offsets[told][order], sessions[told][order]
        self.ack_i = 0  # acks before this index were checked against the log
        # Acked sends whose told offset does not hold their value: (value, offset, found_value, cause, session,
        # leader epoch of the record at the offset or -1). Whether that is an inconsistent offset (the value is
        # elsewhere in the log), a truncated ack, a loss (it is nowhere) or the base-offset -1 quirk is decided
        # in finish(), when the whole log has been seen.
        self.misplaced: list[tuple] = []
        # Transactional variants: each value's transaction, and where non-committed transactions wrote.
        if outcomes.transactional:
            self.rank, self.txn = outcomes.value_rank(), outcomes.value_txn()
            self.untold = outcomes.untold()
        self.w_off, self.w_val, self.w_rank, self.w_txn = outcomes.written()
        self.aborted_reads: list[tuple] = []  # (value, offset, txn)
        self.zombie_writes: list[tuple] = []  # (value, offset, txn)

    # -- streaming ---------------------------------------------------------------------
    def feed(self, offsets: np.ndarray, values: np.ndarray, valid: np.ndarray,
             timestamps_ms: np.ndarray | None = None, epochs: np.ndarray | None = None) -> None:
        """values[i] is meaningful only where valid[i] (the record held a decimal number); epochs[i] is the
        record's leader epoch, -1 (or no array) when not known."""
        if len(offsets) == 0:
            return
        if offsets[0] <= self.last_offset or (len(offsets) > 1 and np.any(np.diff(offsets) <= 0)):
            raise OutOfOrder(f"partition {self.partition}")
        self.last_offset = int(offsets[-1])
        if epochs is None:
            epochs = np.full(len(offsets), -1, dtype=np.int32)
        self._check_acked_offsets(offsets, values, valid, epochs)
        n = len(self.outcomes.code)
        sent = valid & (values >= 0) & (values < n)
        sent[sent] = self.outcomes.code[values[sent]] != 0
        if not sent.all():
            stray = np.flatnonzero(~sent)
            self.unexpected += [(o, v if ok else None) for o, v, ok in
                                zip(offsets[stray].tolist(), values[stray].tolist(), valid[stray].tolist())]
            offsets, values, epochs = offsets[sent], values[sent], epochs[sent]
            timestamps_ms = timestamps_ms[sent] if timestamps_ms is not None else None
        if len(values):
            if self.outcomes.transactional:
                self._attribute(offsets, values)
            self._order(offsets, values, timestamps_ms)
            at = self.first[values]  # the epoch of each value whose first copy is in this batch
            pos = np.minimum(np.searchsorted(offsets, at), len(offsets) - 1)
            here = offsets[pos] == at
            self.first_epoch[values[here]] = epochs[pos[here]]

    def _attribute(self, offsets: np.ndarray, values: np.ndarray) -> None:
        """Records of aborted or fenced transactions: aborted reads and zombie writes."""
        rank, txn = record_transactions(offsets, values, self.rank, self.txn,
                                        (self.w_off, self.w_val, self.w_rank, self.w_txn), self.untold)
        for which, into in ((ABORTED_TXN, self.aborted_reads), (FENCED, self.zombie_writes)):
            k = np.flatnonzero(rank == which)
            into += zip(values[k].tolist(), offsets[k].tolist(), txn[k].tolist())

    def _check_acked_offsets(self, offsets, values, valid, epochs) -> None:
        """Each acked offset in this batch's range must hold the acked value."""
        lo = np.searchsorted(self.ack_off, offsets[0], "left")
        hi = np.searchsorted(self.ack_off, offsets[-1], "right")
        for i in range(self.ack_i, lo):  # offsets between the previous batch and this one: no record there
            self._inconsistent(i, None)
        if hi > lo:
            want_off, want_val = self.ack_off[lo:hi], self.ack_val[lo:hi]
            pos = np.searchsorted(offsets, want_off)
            found = offsets[pos] == want_off
            ok = found & valid[pos] & (values[pos] == want_val)
            for k in np.flatnonzero(~ok).tolist():
                if not found[k]:
                    self._inconsistent(lo + k, None)
                else:
                    p = pos[k]
                    self._inconsistent(lo + k, int(values[p]) if valid[p] else None,
                                       "holds another value" if valid[p] else "holds a record that is not a number",
                                       int(epochs[p]))
        self.ack_i = max(self.ack_i, hi)

    def _inconsistent(self, i: int, found, cause: str | None = None, epoch: int = -1) -> None:
        off = int(self.ack_off[i])
        if cause is None:
            cause = ("negative offset (the client was told none)" if off < 0
                     else "beyond the end of the log" if off > self.last_offset else "no record at this offset")
        self.misplaced.append((int(self.ack_val[i]), off, found, cause, int(self.ack_ses[i]), epoch))

    def _order(self, offsets, values, timestamps_ms) -> None:
        jump, before = jump_backs(values, self.highest)
        self.highest = max(self.highest, int(values.max()))
        self.received += len(values)
        self.first[values[~jump]] = offsets[~jump]  # above everything before: new and distinct
        repeat, rows, firsts = duplicate_cases(values, offsets, jump, self.first)
        for v, off in firsts:
            self.first[v] = off
        self.duplicates += rows
        n_repeat = int(repeat.sum())
        self.repeats += n_repeat
        self.reorders += int(jump.sum()) - n_repeat
        self._runs(jump, repeat, offsets, values, before)
        if timestamps_ms is not None:
            self._series(timestamps_ms, repeat, jump)

    def _runs(self, jump, repeat, offsets, values, before) -> None:
        if not jump.any():
            self._close_run()
            return
        edges = np.diff(np.concatenate(([0], jump.view(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # ends are exclusive
        reps = np.concatenate(([0], np.cumsum(repeat)))
        for s, e in zip(starts.tolist(), ends.tolist()):
            if s == 0 and self.open_run is not None:  # continues the run open at the end of the last batch
                run = self.open_run
                run[1] = int(offsets[e - 1])
                run[4] += e
                run[5] += int(reps[e] - reps[0])
            else:
                self._close_run()
                run = [int(offsets[s]), int(offsets[e - 1]), int(values[s]), int(before[s]), e - s,
                       int(reps[e] - reps[s])]
            self.open_run = run
            if e < len(jump):
                self._close_run()

    def _close_run(self) -> None:
        if self.open_run is not None:
            self.runs.append(tuple(self.open_run))
            self.open_run = None

    def _series(self, timestamps_ms, repeat, jump) -> None:
        secs = timestamps_ms // 1000
        keys, index = np.unique(secs, return_inverse=True)
        counts = [np.bincount(index, minlength=len(keys)), np.bincount(index[repeat], minlength=len(keys)),
                  np.bincount(index[jump], minlength=len(keys))]
        for k, r, d, j in zip(keys.tolist(), *(c.tolist() for c in counts)):
            row = self.seconds.setdefault(k, [0, 0, 0])
            row[0] += r
            row[1] += d
            row[2] += j

    # -- the findings ------------------------------------------------------------------
    def finish(self) -> Findings:
        self._close_run()
        for i in range(self.ack_i, len(self.ack_off)):
            self._inconsistent(i, None)
        self.ack_i = len(self.ack_off)
        o = self.outcomes
        present = self.first >= 0
        sent, acked = o.code > 0, o.code == ACKED
        absent = sent & ~present
        # A committed transaction's value not read is lost_committed (_transactions), not also lost; beyond what
        # a read not known to be complete reached, it is unseen like any value (an open transaction may hide it).
        lost_here = absent & acked & ((self.rank == 0) if o.transactional else True)
        lost, unseen, deleted = lost_cases(lost_here, o.offset, self.highest, self.read)
        known = known_region(len(absent), self.highest, self.read)
        if o.transactional:
            unseen = unseen | ((self.rank == COMMITTED) & absent & ~known)
        rejected_visible = rejected_visible_cases(o.code, present)
        s_val, s_off, s_ses = _send_order(*o.acked_sends())
        quirk = minus_one_batches(s_off, s_ses)
        keep = ~quirk & (s_off != -1)  # nor a send told -1 alone: told no offset (untold_sends)
        backwards = nonmonotonic_cases(s_off[keep], s_ses[keep])
        n_val, n_off = s_val[keep], s_off[keep]
        inconsistent, minus_one, truncated = misplaced_cases(
            self.misplaced, self.first, set(zip(s_ses[quirk].tolist(), s_val[quirk].tolist())), self.first_epoch)
        inconsistent += self.changed
        txn_m, txn_t = self._transactions(present, known)
        runs = [(fo, lo, fv, hb, hb - fv, length, run_kind(length, reps)) for fo, lo, fv, hb, length, reps in self.runs]
        p = self.partition
        m = {
            "sent": int(sent.sum()), "acked": int(acked.sum()), "rejected": int((o.code == REJECTED).sum()),
            "unknown": int((o.code == UNKNOWN).sum()), "received": self.received,
            "unique": self.received - self.repeats, "duplicates": self.repeats, "jump_back_runs": len(runs),
            "max_jump_back": max((r[4] for r in runs), default=0), "lost": int(lost.sum()),
            "unseen": int(unseen.sum()), "deleted_before_read": self.read[0] if self.read else 0,
            "missing": int(missing_cases(o.code, present).sum()),
            "received_unacked": int(received_unacked_cases(o.code, present).sum()), "reorders": self.reorders,
            "unexpected": len(self.unexpected), "inconsistent_offsets": len(inconsistent),
            "truncated_acks": len(truncated), "base_offset_minus_one": len(minus_one),
            "rejected_visible": int(rejected_visible.sum()), "nonmonotonic_sends": len(backwards), **txn_m,
        }
        rv = np.flatnonzero(rejected_visible)

        def told(mask):
            v = np.flatnonzero(mask)
            return {"partition": [p] * len(v), "value": v.tolist(), "offset": o.offset[v].tolist()}

        t: dict[str, dict[str, list]] = {
            "jump_back_runs": _columns("jump_back_runs", p, runs),
            "duplicates": _columns("duplicates", p, self.duplicates),
            "lost": told(lost), "unseen": told(unseen), "deleted_before_read": told(deleted),
            "gaps": _columns("gaps", p, gap_cases(absent, lost, unseen, deleted)),
            "inconsistent_offsets": _columns("inconsistent_offsets", p, inconsistent),
            "truncated_acks": _columns("truncated_acks", p, truncated),
            "base_offset_minus_one": _columns("base_offset_minus_one", p, minus_one),
            "nonmonotonic_sends": {"partition": [p] * len(backwards), "value": n_val[backwards].tolist(),
                                   "offset": n_off[backwards].tolist(),
                                   "previous_value": n_val[backwards - 1].tolist(),
                                   "previous_offset": n_off[backwards - 1].tolist()},
            "rejected_visible": {"partition": [p] * len(rv), "value": rv.tolist(), "offset": self.first[rv].tolist(),
                                 "error": [o.errors.get(v) for v in rv.tolist()]},
            "unexpected": _columns("unexpected", p, self.unexpected),
            "series": _series_columns(self.seconds, o.ack_seconds),
            "partitions": {"partition": [p], **{k: [v] for k, v in m.items()}},
            **txn_t,
            **o.timing.columns(),
        }
        return Findings(p, m, t)

    def _transactions(self, present: np.ndarray, known: np.ndarray) -> tuple[dict, dict]:
        """aborted_reads, zombie_writes_visible, lost_committed, torn_transactions (within this partition)
        and their tables, plus transaction_parts for the driver; `known`: the values a read reached (all of
        them after a complete read), the only ones judged here."""
        p, o = self.partition, self.outcomes
        if not o.transactional:
            return ({"aborted_reads": 0, "lost_committed": 0, "failed_committed": 0, "torn_transactions": 0,
                     "zombie_writes_visible": 0},
                    {name: {} for name in ("aborted_reads", "zombie_writes_visible", "lost_committed",
                                           "failed_committed", "transaction_parts")})
        rank, txn = self.rank, self.txn
        lost = lost_committed_cases(rank, present, known)
        keys, sent, visible = transaction_parts(np.where(known | present, rank, 0), txn, present)
        torn = int(torn_cases(sent, visible).sum())
        zombie = self.zombie_writes
        z_txn = np.array([r[2] for r in zombie], dtype=np.int64)
        failed = sorted(o.failed_committed)
        metrics = {"aborted_reads": len(self.aborted_reads), "lost_committed": len(lost),
                   "failed_committed": len(failed), "torn_transactions": torn, "zombie_writes_visible": len(zombie)}
        tables = {
            "aborted_reads": _columns("aborted_reads", p, self.aborted_reads),
            "zombie_writes_visible": {**_columns("zombie_writes_visible", p, [r + (None,) for r in zombie]),
                                      "session": o.book.sessions(z_txn).tolist() if len(zombie) else []},
            "lost_committed": {"partition": [p] * len(lost), "value": lost.tolist(), "txn": txn[lost].tolist(),
                               "offset": [None if x == NO_OFFSET else x for x in o.offset[lost].tolist()]},
            "failed_committed": {"partition": [p] * len(failed), "value": [f[0] for f in failed],
                                 "txn": [f[1] for f in failed], "error": [f[2] for f in failed]},
            "transaction_parts": {"partition": [p] * len(keys), "txn": keys.tolist(), "sent": sent.tolist(),
                                  "visible": visible.tolist()},
        }
        return metrics, tables


def torn_transactions(parts: pa.Table, book: pa.Table | None) -> tuple[int, pa.Table]:
    """Every partition's transaction_parts -> (transactions partly read, the torn_transactions table)."""
    schema = pa.schema(TABLES["torn_transactions"])
    if parts.num_rows == 0:
        return 0, schema.empty_table()
    summed = parts.group_by("txn").aggregate([("sent", "sum"), ("visible", "sum")])
    sent, visible = summed.column("sent_sum").to_numpy(), summed.column("visible_sum").to_numpy()
    torn = np.flatnonzero(torn_cases(sent, visible))
    txns = summed.column("txn").to_numpy()[torn]
    info = {}
    if book is not None:
        for r in book.select([c for c in ("txn", "session", "outcome", "cause") if c in book.schema.names]).to_pylist():
            info[r["txn"]] = r
    rows = [{"txn": int(t), "session": info.get(int(t), {}).get("session"), "outcome": info.get(int(t), {}).get("outcome"),
             "cause": info.get(int(t), {}).get("cause"), "sent": int(sent[i]), "visible": int(visible[i])}
            for t, i in zip(txns.tolist(), torn.tolist())]
    return len(rows), pa.Table.from_pylist(sorted(rows, key=lambda r: r["txn"]), schema=schema)



# -- the definitions, pure functions over a partition's arrays -----------------------------------
# (the README's Words; each has its own unit test in tests/unit/test_definitions.py, and the checker above
# composes them: streaming ones per batch of the log, the others once the whole partition was seen.)

def jump_backs(values: np.ndarray, highest: int) -> tuple[np.ndarray, np.ndarray]:
    """(jump, before): which records are jump-backs (a value not above the highest read before it, the
    log's earlier batches included: `highest`, NONE when nothing was read), and that highest for each."""
    before = np.empty(len(values), dtype=np.int64)
    if len(values) == 0:
        return np.zeros(0, dtype=bool), before
    before[0] = highest
    np.maximum(np.maximum.accumulate(values)[:-1], highest, out=before[1:])
    jump = values <= before
    jump[before == NONE] = False
    return jump, before


def duplicate_cases(values: np.ndarray, offsets: np.ndarray, jump: np.ndarray,
                    first: np.ndarray) -> tuple[np.ndarray, list[tuple], list[tuple]]:
    """(repeat, rows, firsts) for one batch: a jump-back whose value was read before (first[value] >= 0:
    the offset of its first copy, this batch's records that are not jump-backs included) is a duplicate,
    row (value, offset, first_offset); a jump-back read for the first time is a reorder, and (value,
    offset) in firsts. A record that is not a jump-back is above every earlier value, so new: only
    jump-backs (rare) are looked at one by one. `first` is not changed."""
    repeat = np.zeros(len(values), dtype=bool)
    rows, firsts, seen = [], [], {}
    for i in np.flatnonzero(jump).tolist():
        v = int(values[i])
        at = seen.get(v, int(first[v]))
        if at >= 0:
            repeat[i] = True
            rows.append((v, int(offsets[i]), at))
        else:
            seen[v] = int(offsets[i])
            firsts.append((v, int(offsets[i])))
    return repeat, rows, firsts


def run_kind(length: int, repeats: int) -> str:
    """A jump-back run of `length` records of which `repeats` were duplicates: duplicate, reorder or mixed."""
    return "duplicate" if repeats == length else "reorder" if repeats == 0 else "mixed"


def missing_cases(code: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Values sent, never acknowledged (rejected or unknown), never read."""
    return (code > 0) & (code != ACKED) & ~present


def received_unacked_cases(code: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Values whose outcome is unknown and that were read."""
    return present & (code == UNKNOWN)


def rejected_visible_cases(code: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Values the client was told were rejected and that were read ("rejected" lied)."""
    return present & (code == REJECTED)


def record_transactions(offsets: np.ndarray, values: np.ndarray, rank: np.ndarray, txn: np.ndarray,
                        written: tuple, untold: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each record's transaction (rank, txn): the send of a transaction that did not commit whose acked
    offset and value it has (written: offset-sorted (offset, value, rank, txn), Outcomes.written), else
    its value's (the best send's). But a copy of a committed value away from the offset its committed send was
    told (untold: Outcomes.untold) is its never-acknowledged send's in an aborted or fenced transaction, when it
    has one: that copy was written by no other send the log holds (a restart aborts the open transaction, its
    sends' outcome unknown). Aborted reads and zombie writes are records of rank ABORTED_TXN / FENCED."""
    w_off, w_val, w_rank, w_txn = written
    rank, txn = rank[values].copy(), txn[values].copy()
    if untold is not None:
        u_rank, u_txn, told = untold
        at = told[values]
        away = (rank == COMMITTED) & (at != NO_OFFSET) & (at != offsets) & \
            ((u_rank[values] == ABORTED_TXN) | (u_rank[values] == FENCED))
        rank[away], txn[away] = u_rank[values[away]], u_txn[values[away]]
    if len(w_off):
        lo, hi = np.searchsorted(w_off, offsets, "left"), np.searchsorted(w_off, offsets, "right")
        one = np.flatnonzero(hi - lo == 1)
        hit = one[w_val[lo[one]] == values[one]]
        rank[hit], txn[hit] = w_rank[lo[hit]], w_txn[lo[hit]]
        for i in np.flatnonzero(hi - lo > 1).tolist():  # sends told the same offset (rare): the one with this
            mine = [(int(w_rank[k]), int(w_txn[k])) for k in range(lo[i], hi[i]) if w_val[k] == values[i]]
            if mine:  # value; two such (sent in two sessions): the best
                rank[i], txn[i] = max(mine)
    return rank, txn


def lost_committed_cases(rank: np.ndarray, present: np.ndarray, known: np.ndarray | None = None) -> np.ndarray:
    """Values of committed transactions (their best send's) never read, where the read reached (`known`)."""
    return np.flatnonzero((rank == COMMITTED) & ~present & (True if known is None else known))


def known_region(n: int, highest: int, read: tuple[int, int] | None) -> np.ndarray:
    """The values whose absence is known (lost_cases' rule): all after a complete final read; without one,
    those below a value that was read (an open transaction, or ends still moving, may hide the rest)."""
    if read is not None:
        return np.ones(n, dtype=bool)
    return np.arange(n) < highest


def transaction_parts(rank: np.ndarray, txn: np.ndarray, present: np.ndarray) -> tuple:
    """(txns, sent, visible): per transaction, its values here (a value counts in its best send's
    transaction) and how many of them were read."""
    owned = np.flatnonzero(rank > 0)  # values with a transmitted transactional send
    keys, inverse = np.unique(txn[owned], return_inverse=True)
    sent = np.bincount(inverse, minlength=len(keys))
    visible = np.bincount(inverse, weights=present[owned], minlength=len(keys)).astype(np.int64)
    return keys, sent, visible


def torn_cases(sent: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Transactions partly read: some of their values visible, not all."""
    return (visible > 0) & (visible < sent)


# -- the definitions that need the whole partition, pure ---------------------------------------

def lost_cases(acked_absent: np.ndarray, told: np.ndarray, highest: int,
               read: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lost, unseen, deleted_before_read) masks over values, from the acked values absent from the log.

    After a complete final read (`read` = (log start, end)) an absent acked value is lost wherever it
    sat, unless the client was told an offset below the log start: the broker deleted it before the read.
    Without proof of a complete read, only a value below one that was read is known lost; the rest are
    unseen (lost or late)."""
    none = np.zeros(len(acked_absent), dtype=bool)
    if read is not None:
        deleted = acked_absent & (told >= 0) & (told < read[0])
        return acked_absent & ~deleted, none, deleted
    later = np.arange(len(acked_absent)) < highest  # a later value (by send order) was read
    return acked_absent & later, acked_absent & ~later, none


def _send_order(values: np.ndarray, offsets: np.ndarray, sessions: np.ndarray) -> tuple:
    """Acked sends that were told an offset, in send order (by session, then value)."""
    keep = offsets != NO_OFFSET
    values, offsets, sessions = values[keep], offsets[keep], sessions[keep]
    if len(values) > 1 and not (sessions[0] == sessions.min() == sessions.max() and (np.diff(values) > 0).all()):
        order = np.lexsort((values, sessions))  # (one session fed in value order, the common case, is sorted)
        values, offsets, sessions = values[order], offsets[order], sessions[order]
    return values, offsets, sessions


def minus_one_batches(offsets: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Which sends (in send order) belong to a batch acknowledged with base offset -1: a send told -1 and
    the sends of its session right after it told 0, 1, 2, ... (librdkafka numbers a batch's messages from
    its base offset). A send told -1 alone is no such batch: see untold_sends."""
    if len(offsets) == 0:
        return np.zeros(0, dtype=bool)
    starts = np.ones(len(offsets), dtype=bool)  # where a run of consecutive told offsets starts
    starts[1:] = (np.diff(offsets) != 1) | (np.diff(sessions) != 0)
    run = np.cumsum(starts) - 1
    return (offsets[starts][run] == -1) & (np.bincount(run)[run] > 1)


def untold_sends(values: np.ndarray, offsets: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Which acked sends (in the arrays' order) were told -1 alone, with no send of their session right after
    them told 0: the client had no offset to tell. librdkafka acknowledges a batch whose request failed without
    an answer once a later batch of the partition succeeds (an implicit ack: RD_KAFKA_OFFSET_INVALID, which
    confluent-kafka gives as None and the delivery log keeps as -1), and the Java client's RecordMetadata may
    have no offset. Such a send is checked for loss, never against an offset; a batch told -1, 0, 1, ... is
    base_offset_minus_one. (A one-message batch acknowledged with base offset -1 looks the same and is
    counted here: nothing tells the two apart.)"""
    untold = np.zeros(len(offsets), dtype=bool)
    if not (offsets == -1).any():
        return untold
    at = np.flatnonzero(offsets != NO_OFFSET)
    at = at[np.lexsort((values[at], sessions[at]))]  # send order, as _send_order
    untold[at] = (offsets[at] == -1) & ~minus_one_batches(offsets[at], sessions[at])
    return untold


def nonmonotonic_cases(offsets: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Indexes of sends (in send order) told a lower offset than the send before them in their session."""
    return np.flatnonzero((np.diff(offsets) < 0) & (np.diff(sessions) == 0)) + 1


def changed_offsets(log: pa.Table, other: pa.Table, other_read: str) -> list[tuple]:
    """Offsets of one partition that held different records in two reads (the analysed log and `other`):
    inconsistent_offsets rows (value, offset, found_value, cause, found_at). A record that is not a number
    (null) differs from a number, not from another such record; an offset only one read has is no change
    (read_committed leaves aborted records out)."""
    a = log.select(["offset", "value"])
    b = other.select(["offset", "value"]).rename_columns(["offset", "other"])
    joined = a.join(b, "offset", join_type="inner")
    value, found = joined.column("value"), joined.column("other")
    same = pc.fill_null(pc.equal(value, found), False)
    both_null = pc.and_(pc.is_null(value), pc.is_null(found))
    changed = joined.filter(pc.invert(pc.or_(same, both_null))).sort_by("offset")
    cause = f"another record in the {other_read} read"
    return [(v, o, f, cause, o) for o, v, f in zip(changed.column("offset").to_pylist(),
                                                   changed.column("value").to_pylist(),
                                                   changed.column("other").to_pylist())]


def misplaced_cases(misplaced: list[tuple], first: np.ndarray, minus_one: set,
                    first_epoch: np.ndarray) -> tuple[list, list, list]:
    """Acked sends whose told offset does not hold their value, (value, offset, found_value, cause, session,
    leader epoch at the offset) -> (inconsistent_offsets, base_offset_minus_one, truncated_acks rows), each
    (value, offset, found_value, cause, found_at). minus_one: (session, value) of sends in a batch
    acknowledged with base offset -1; first_epoch: the leader epoch of each value's first copy (-1: not
    known). The offset holding a record of a later epoch than the value's copy is a truncated ack: the log was
    cut back past the acknowledged write and a later leader wrote there. A value absent from the log is not
    here at all: it is lost (one event, one name)."""
    inconsistent, quirk, truncated = [], [], []
    for value, offset, found, cause, session, epoch in misplaced:
        if value >= len(first) or first[value] < 0:
            continue
        copy = int(first_epoch[value])
        if (session, value) in minus_one:
            quirk.append((value, offset, found, cause, int(first[value])))
        elif epoch >= 0 and copy >= 0 and epoch > copy:
            truncated.append((value, offset, found, f"{cause} of leader epoch {epoch} (the value's copy: epoch {copy})",
                              int(first[value])))
        else:
            inconsistent.append((value, offset, found, cause, int(first[value])))
    return inconsistent, quirk, truncated


def _columns(table: str, partition: int, rows: list[tuple]) -> dict[str, list]:
    """Row tuples (every column but the leading partition) -> columns."""
    names = [c for c, _ in TABLES[table]][1:]
    cols = {name: [r[i] for r in rows] for i, name in enumerate(names)}
    return {"partition": [partition] * len(rows), **cols}


def gap_cases(absent: np.ndarray, lost: np.ndarray, unseen: np.ndarray, deleted: np.ndarray) -> list[tuple]:
    """Runs of consecutive absent values: (first, last, values, lost, unseen, kind)."""
    edges = np.diff(np.concatenate(([0], absent.view(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    lost_c, unseen_c, deleted_c = (np.concatenate(([0], np.cumsum(x))) for x in (lost, unseen, deleted))
    out = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        n_lost, n_unseen = int(lost_c[e] - lost_c[s]), int(unseen_c[e] - unseen_c[s])
        kind = ("lost" if n_lost else "unseen" if n_unseen else "deleted" if deleted_c[e] > deleted_c[s]
                else "missing")
        out.append((s, e - 1, e - s, n_lost, n_unseen, kind))
    return out


def _series_columns(seconds: dict[int, list[int]], ack_seconds: dict[int, int]) -> dict[str, list]:
    keys = sorted(set(seconds) | set(ack_seconds))
    zero = [0, 0, 0]
    return {"second": keys, "records": [seconds.get(k, zero)[0] for k in keys],
            "duplicates": [seconds.get(k, zero)[1] for k in keys], "jump_backs": [seconds.get(k, zero)[2] for k in keys],
            "acks": [ack_seconds.get(k, 0) for k in keys]}


# -- Arrow in ----------------------------------------------------------------------------

def outcome_codes(outcome: pa.Array) -> np.ndarray:
    """Outcome strings -> codes; anything else (null, a word that is no Outcome) -> 0."""
    codes = np.zeros(len(outcome), dtype=np.int8)
    for o in Outcome:
        codes[pc.fill_null(pc.equal(outcome, str(o)), False).to_numpy(zero_copy_only=False)] = o.code
    return codes


def _ints(col: pa.Array, fill: int) -> np.ndarray:
    return pc.fill_null(col.cast(pa.int64()), fill).to_numpy(zero_copy_only=False)


def feed_acks(outcomes: Outcomes, batch: pa.RecordBatch | pa.Table) -> None:
    """One batch of delivery-log rows of this partition. Columns beyond the first four are optional
    (run folders written before they existed still load)."""
    if batch.num_rows == 0:
        return
    names = batch.schema.names
    if batch.column("value").null_count:
        raise DeliveryLogError(f"partition {outcomes.partition}: a row without a value")
    codes = outcome_codes(batch.column("outcome"))
    if (codes == 0).any():
        bad = batch.column("outcome")[int(np.flatnonzero(codes == 0)[0])].as_py()
        raise DeliveryLogError(f"partition {outcomes.partition}: unknown outcome {bad!r} "
                               f"(allowed: {', '.join(Outcome)})")
    acked_at = None
    if "sent_at" in names and "latency_ms" in names and batch.column("sent_at").null_count == 0:
        sent = batch.column("sent_at").cast(pa.timestamp("ms")).cast(pa.int64()).to_numpy(zero_copy_only=False)
        latency = pc.fill_null(batch.column("latency_ms").cast(pa.float64()), float("nan"))
        latency = latency.to_numpy(zero_copy_only=False)
        acked_at = sent + np.nan_to_num(latency).astype(np.int64)
        outcomes.timing.feed(sent, latency, codes == ACKED)
    sessions = _ints(batch.column("session"), 0).astype(np.int32) if "session" in names else None
    txns = _ints(batch.column("txn"), -1) if "txn" in names else None
    reported = None  # a latency and an error: the client's delivery report said it failed (a refusal has no latency)
    if "latency_ms" in names and "error" in names:
        reported = pc.and_(pc.is_valid(batch.column("latency_ms")), pc.is_valid(batch.column("error")))
        reported = reported.to_numpy(zero_copy_only=False)
    outcomes.feed(_ints(batch.column("value"), -1), codes, _ints(batch.column("offset"), NO_OFFSET),
                  batch.column("error").to_pylist() if "error" in names else None, acked_at, sessions, txns, reported)


def feed_log(check: PartitionCheck, batch: pa.RecordBatch | pa.Table) -> None:
    """One batch of this partition's records, in offset order."""
    if batch.num_rows == 0:
        return
    value = batch.column("value")
    ts = None
    if "timestamp" in batch.schema.names and batch.column("timestamp").null_count == 0:
        ts = batch.column("timestamp").cast(pa.timestamp("ms")).cast(pa.int64()).to_numpy(zero_copy_only=False)
    valid = pc.is_valid(value).to_numpy(zero_copy_only=False)
    epochs = _ints(batch.column("leader_epoch"), -1).astype(np.int32) if "leader_epoch" in batch.schema.names else None
    check.feed(_ints(batch.column("offset"), NONE), _ints(value, -1), valid, ts, epochs)


def check_partition(partition: int, acks: Iterable, log: Iterable, periods: list = (),
                    transactions: pa.Table | None = None, sends: int | None = None,
                    read: tuple[int, int] | None = None, changed: list[tuple] = ()) -> Findings:
    """Every definition over one partition: acks batches first (the whole delivery log of this
    partition), then log batches. Raises OutOfOrder when the log is not in offset order.
    periods: (fault id, start ms, end ms) of the variant's faults, for latency per fault period;
    transactions: the transactions log (transactional variants);
    sends: rows of the variant's whole delivery log; a value at or beyond it is a DeliveryLogError;
    read: (log start offset, end offset) of a complete final read of this partition, or None when the
    read is not known to have reached the end (then an acked value absent at the tail is unseen);
    changed: offsets that held another record in another read (changed_offsets), inconsistent offsets."""
    outcomes = Outcomes(partition, periods, TransactionBook(transactions), sends)
    for batch in acks:
        feed_acks(outcomes, batch)
    check = PartitionCheck(outcomes.trimmed(), read, changed)
    for batch in log:
        feed_log(check, batch)
    return check.finish()
