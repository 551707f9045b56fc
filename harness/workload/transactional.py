"""The transactional workload: producer.py's counters, sent in transactions, and the transactions log.

A variant whose producer sets transactional.id sends its messages in transactions of
`transaction.size` records (workload settings; librdkafka refuses unknown keys) and aborts a
seeded fraction `abort_ratio` of them on purpose. Every send carries its transaction in the
delivery log (acks.parquet, column txn); every transaction gets one row in the transactions
log (transactions.parquet): txn, session, outcome, error, cause, sends, ended_at.

The outcome is what the application learned:
  committed  commit_transaction() returned;
  aborted    the application never asked to commit it (a planned abort, an open transaction
             abandoned by a producer restart, or one whose instance a successor fenced before it
             asked), or abort_transaction() confirmed the abort after an abortable commit error;
  unknown    it asked to commit and never learned the answer (the commit timed out or failed
             fatally): the final read decides.
The cause says why it ended so: planned, restart, fenced, error, interrupted (null: committed).

A transaction aborted on purpose first waits until its records are written (flush), so that the
log holds them and read_committed must leave them out. Workload faults are applied between two
sends of a transaction; a restart also while a commit waits for its answer (commit_transaction is
called with short timeouts and resumed), which makes that transaction unknown.

What the application sends again (before fresh values, in its next transactions): the values of
every transaction that aborted without being meant to (a restart before it asked to commit, an
abortable commit error), as an at-least-once application does. Not those aborted on purpose, and
not those whose commit is unknown: an application resuming from its committed position would send
them again only if they had aborted, which it learns from what committed; the harness leaves that
to the final read (all visible: committed; none: aborted). A paused instance (a producer pause) keeps the rest of its open transaction:
when it resumes it sends that rest and tries to commit, as a zombie; its successor has taken
over the values the zombie had handed over. A fenced transaction is marked so (cause fenced)
whatever its commit returns, because the protocol says it must not commit once a successor
with the same transactional.id has initialised.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import KafkaException, Producer

from ..faults.channel import PAUSE_PRODUCER, RESTART_PRODUCER, FaultTable
from ..formats import TRANSACTIONS_SCHEMA, Outcome, TxnCause, TxnOutcome
from .deliverylog import CHUNK, DeliveryLog, drain, masked_fatal
from .producer import ProduceResult, client_conf, client_error_text, close_now

BLOCK = 64  # sends between two looks at the workload faults inside a transaction
SOCKET_TIMEOUT_MS = 60_000  # librdkafka's default socket.timeout.ms
STEP = 0.25  # seconds a commit or abort call waits before it is resumed (a restart may come in between)


def planned_abort(seed: int, number: int, ratio: float) -> bool:
    """Transaction `number` is to be aborted on purpose: the seeded plan every transactional workload follows
    (this one, and a foreign client's child: foreignproc.py hands it the plan)."""
    return random.Random(f"{seed}/abort/{number}").random() < ratio


class TransactionsUnavailable(RuntimeError):
    """The producer could not start its transactions: the broker refuses the API (init_transactions failed for
    good), or init_transactions kept timing out until the workload's flush timeout. The run cannot test them."""


@dataclass
class _Txn:
    number: int
    session: int
    indices: list[int]  # message indices, resends first
    fresh_from: int  # indices[fresh_from:] are fresh (first sends)
    on_delivery: Callable
    handed: int = 0
    commit_asked: bool = False
    planned: bool = False  # to be aborted on purpose


@dataclass
class _Zombie:
    session: int
    producer: Producer
    txn: _Txn | None  # None: paused after the last transaction


class TransactionsLog:
    """The transactions log, kept in memory (a row per transaction) and written once at close()."""

    def __init__(self, path: Path):
        self.path = path
        self.rows: list[dict] = []
        self.replaced: Counter[str] = Counter()  # error name -> instances it broke for good (replaced)

    def record(self, txn: _Txn, outcome: str, error: str | None = None, cause: str | None = None) -> None:
        self.add(txn.number, txn.session, outcome, error, cause, txn.handed, datetime.now(timezone.utc))

    def add(self, number: int, session: int, outcome: str, error: str | None, cause: str | None, sends: int,
            ended_at: datetime) -> None:
        self.rows.append({"txn": number, "session": session, "outcome": outcome, "error": error, "cause": cause,
                          "sends": sends, "ended_at": ended_at})

    def counts(self) -> dict[str, int]:
        return {o: sum(1 for r in self.rows if r["outcome"] == o) for o in TxnOutcome}

    def close(self) -> None:
        rows = sorted(self.rows, key=lambda r: r["txn"])
        pq.write_table(pa.Table.from_pylist(rows, schema=TRANSACTIONS_SCHEMA), self.path)
        with open(self.path, "rb+") as f:
            os.fsync(f.fileno())


def _error_name(e: KafkaException) -> str:
    err = e.args[0] if e.args else None
    return err.name() if hasattr(err, "name") else str(e)


def _kafka_error(e: KafkaException):
    return e.args[0] if e.args and hasattr(e.args[0], "retriable") else None


class TransactionalWorkload:
    """One variant's transactional producer application: its instances (sessions), transactions, resends."""

    def __init__(self, client: dict, topic: str, partitions: int, messages: int, config: dict, log: DeliveryLog,
                 txlog: TransactionsLog, size: int, abort_ratio: float, seed: int, rate: float | None = None,
                 flush_timeout: float = 60.0, stop: threading.Event | None = None,
                 on_progress: Callable[[int], None] | None = None, logger: logging.Logger | None = None, faults=None):
        self.fatal: list[str] = []  # fatal errors' names, from librdkafka's FATAL lines (client_conf)
        self.conf = client_conf(config, client, logger, self.fatal.append)
        self.topic, self.partitions, self.messages = topic, partitions, messages
        self.log, self.txlog = log, txlog
        self.size, self.abort_ratio, self.seed = size, abort_ratio, seed
        self.rate, self.flush_timeout = rate, flush_timeout
        self.stop = stop or threading.Event()
        self.on_progress, self.faults = on_progress, faults
        self.count = 0  # fresh message indices handed out to transactions so far
        self.handed = 0  # sends handed to a client, resends included
        self.pending: list[int] = []  # message indices to send again, ascending
        self.next_txn = 0
        self.open: _Txn | None = None
        self.zombie: _Zombie | None = None
        self.producer: Producer | None = None
        self.t0 = time.monotonic()
        self.block = max(1, min(BLOCK, size // 2))  # so that faults are served inside every transaction
        self.served: FaultTable = {RESTART_PRODUCER: (self._restart, None),
                                   PAUSE_PRODUCER: (self._pause, lambda params: self._resume_zombie())}

    # -- instances -------------------------------------------------------------------------
    def _new_instance(self) -> Producer:
        """A producer with the variant's transactional.id, initialised (fencing any earlier instance)."""
        producer = Producer(self.conf)
        # A request the network swallowed (a dropped request on a live connection) is retried by librdkafka only
        # once socket.timeout.ms has passed: the wait outlasts it, or the client's own recovery is never seen
        # (an exploration's try gave up at 60 s, the default of both, and was taken for infrastructure).
        wait = max(self.flush_timeout, float(self.conf.get("socket.timeout.ms", SOCKET_TIMEOUT_MS)) / 1000 + 10)
        deadline = time.monotonic() + wait
        while True:
            try:
                producer.init_transactions(max(1.0, deadline - time.monotonic()))
                return producer
            except KafkaException as e:
                err = _kafka_error(e)
                if err is not None and err.retriable() and not err.fatal() and time.monotonic() < deadline \
                        and not self.stop.is_set():
                    continue
                detail = err.str() if err is not None else str(e)
                if err is not None and err.retriable() and not err.fatal():  # it kept timing out: not a refusal
                    raise TransactionsUnavailable(f"init_transactions did not complete in {wait:.0f} s "
                                                  f"(last: {detail}); a fault that held or dropped its requests "
                                                  "can do this") from None
                raise TransactionsUnavailable(f"the broker refuses transactions: init_transactions failed: {detail}") \
                    from None

    def _replace_instance(self) -> None:
        """The current instance is gone (closed or failed for good): a new session, a new instance."""
        self.log.new_session(self._fresh_handed(), self.count)
        self.producer = self._new_instance()

    def _fresh_handed(self) -> int:
        """The end of the current session's fresh range: the first fresh index the open transaction has
        not handed over, else everything allocated."""
        txn = self.open
        if txn is not None and self._rest_from(txn) < len(txn.indices):
            return txn.indices[self._rest_from(txn)]
        return self.count

    # -- workload faults (served between two sends of an open transaction) -------------------
    def _restart(self, params: dict) -> None:
        txn = self.open
        close_now(self.producer)
        if txn is None:
            pass
        elif txn.planned:  # it was being aborted on purpose: aborted either way, not sent again
            self.txlog.record(txn, TxnOutcome.ABORTED, cause=TxnCause.PLANNED)
        elif txn.commit_asked:  # a crash while the commit waited for its answer: the read decides
            self.txlog.record(txn, TxnOutcome.UNKNOWN, cause=TxnCause.RESTART)
        else:  # never asked to commit: it can never commit
            self.txlog.record(txn, TxnOutcome.ABORTED, cause=TxnCause.RESTART)
            self._send_again(txn.indices)
        self._replace_instance()
        self.open = None

    def _pause(self, params: dict) -> None:
        txn = self.open
        if self.zombie is not None:
            raise RuntimeError(f"{PAUSE_PRODUCER}: the paused producer has not resumed yet (one pause at a time)")
        # A pause: this instance freezes with its open transaction (none after the last one: served while
        # the run finishes); a successor takes over.
        self.zombie = _Zombie(self.log.session, self.producer, txn)
        if txn is not None:
            self._send_again(txn.indices[: self._rest_from(txn)])
        self._replace_instance()
        self.open = None

    @staticmethod
    def _rest_from(txn: _Txn) -> int:
        """Where a paused instance's own rest of its transaction starts: its fresh records not handed over
        (the resends it had not handed yet go to its successor with the rest of what it had handed)."""
        return max(txn.handed, txn.fresh_from)

    def _send_again(self, indices) -> None:
        self.pending = sorted(set(self.pending) | {int(i) for i in indices})

    def _resume_zombie(self) -> None:
        """The paused instance resumes: it sends the rest of its transaction and tries to commit."""
        z, self.zombie = self.zombie, None
        if z is None:
            return
        txn = z.txn
        if txn is None:  # paused with no transaction open: nothing to finish
            close_now(z.producer)
            return
        rest = txn.indices[self._rest_from(txn):]
        outcome, error = TxnOutcome.ABORTED, None
        with self.log.serving(z.session):
            self.log.handed_late(rest)
            for i in rest:
                try:
                    self._hand(z.producer, i, txn.on_delivery)
                except KafkaException as e:  # a fenced client may refuse at once: recorded, nothing sent
                    self.log.refused(i % self.partitions, i // self.partitions, e.args[0], txn.number)
                txn.handed += 1
            try:
                z.producer.commit_transaction(min(self.flush_timeout, 30.0))
                # The broker let a fenced instance commit: the analysis says what it cost.
                outcome = TxnOutcome.COMMITTED
            except KafkaException as e:
                error = _error_name(e)
            close_now(z.producer)
        self.txlog.record(txn, outcome, error, TxnCause.FENCED)

    # -- transactions --------------------------------------------------------------------------
    def _begin(self) -> _Txn | None:
        if not self.pending and self.count >= self.messages:
            return None
        while True:
            try:
                self.producer.begin_transaction()
                break
            except KafkaException:  # the instance failed for good: a new one (nothing was allocated yet)
                close_now(self.producer)
                self._replace_instance()
        again = self.pending[: self.size]
        fresh = min(self.size - len(again), self.messages - self.count)
        del self.pending[: len(again)]
        txn = _Txn(self.next_txn, self.log.session, again + list(range(self.count, self.count + fresh)), len(again),
                   self.log.reports_for(self.next_txn))
        self.next_txn += 1
        self.count += fresh
        self.open = txn
        if again:
            self.log.handed_late(again)
        return txn

    def _hand(self, producer: Producer, i: int, on_delivery) -> None:
        while True:
            try:
                producer.produce(self.topic, b"%d" % (i // self.partitions), partition=i % self.partitions,
                                 on_delivery=on_delivery)
                return
            except BufferError:
                producer.poll(0.01)

    def _fill(self, txn: _Txn) -> bool:
        """Hand over the transaction's records; False when a fault or an error took it away first."""
        while txn.handed < len(txn.indices):
            if txn.handed and self.faults is not None and self.faults.pending:  # mid-transaction, never before
                # its first record: a restart or a pause then leaves records of an open transaction behind
                self.faults.serve(self.served)
                if self.open is not txn:
                    return False
            if self.stop.is_set():
                return False
            self.producer.poll(0)
            self.log.maybe_spill()
            for i in txn.indices[txn.handed: txn.handed + self.block]:
                if txn.handed >= txn.fresh_from:
                    while i // CHUNK >= len(self.log.chunk_times_ms):
                        self.log.mark_chunk()
                try:
                    self._hand(self.producer, i, txn.on_delivery)
                except KafkaException as e:  # refused: the transaction cannot commit; end() finds out
                    self.log.refused(i % self.partitions, i // self.partitions, e.args[0], txn.number)
                txn.handed += 1
                self.handed += 1
            if self.on_progress:
                self.on_progress(self.count)
            if self.rate:
                ahead = self.t0 + self.handed / self.rate - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
        return True

    def _end(self, txn: _Txn) -> None:
        txn.planned = planned_abort(self.seed, txn.number, self.abort_ratio)
        result = self._finish(txn, commit=not txn.planned)
        if result is None:  # a restart came while it waited: _restart() recorded it
            return
        outcome, error, broken = result
        if txn.planned:
            self.txlog.record(txn, TxnOutcome.ABORTED, error, TxnCause.PLANNED)
        else:
            self.txlog.record(txn, outcome, error, None if outcome == TxnOutcome.COMMITTED else TxnCause.ERROR)
            if outcome == TxnOutcome.ABORTED:  # definitely not committed, and not meant to be aborted: send again
                self._send_again(txn.indices)
        self.open = None
        if broken:
            self.txlog.replaced[error or "unknown error"] += 1
            close_now(self.producer)
            self._replace_instance()

    def _finish(self, txn: _Txn, commit: bool) -> tuple[str, str | None, bool] | None:
        """Commit, or flush and abort: (outcome, error, the instance must be replaced), or None when a
        a producer restart took the transaction away while it waited."""
        deadline = time.monotonic() + self.flush_timeout
        if not commit:  # the aborted records are written first: read_committed must then leave them out
            try:
                while self.producer.flush(STEP) and time.monotonic() < deadline:
                    if self._restart_asked(txn):
                        return None
            except (KafkaException, AttributeError) as e:  # failed for good while flushing: never committed
                if isinstance(e, AttributeError) and not masked_fatal(e):
                    raise
                return TxnOutcome.ABORTED, self._fatal_name(e), True
        txn.commit_asked = commit
        call = self.producer.commit_transaction if commit else self.producer.abort_transaction
        while True:
            try:
                call(min(STEP, max(0.05, deadline - time.monotonic())))
                return (TxnOutcome.COMMITTED if commit else TxnOutcome.ABORTED), None, False
            except AttributeError as e:
                if not masked_fatal(e):
                    raise
                return (TxnOutcome.UNKNOWN if commit else TxnOutcome.ABORTED), self._fatal_name(e), True
            except KafkaException as e:
                err = _kafka_error(e)
                if commit and err is not None and err.txn_requires_abort():
                    try:  # the transaction failed before it committed: abort it, and the answer is definite
                        self.producer.abort_transaction(max(1.0, deadline - time.monotonic()))
                        return TxnOutcome.ABORTED, err.name(), False
                    except KafkaException as e2:
                        return TxnOutcome.UNKNOWN, _error_name(e2), True
                if err is not None and err.retriable() and not err.fatal() and time.monotonic() < deadline:
                    if self._restart_asked(txn):
                        return None
                    continue  # resumed: librdkafka carries on with the same commit or abort
                # Never asked to commit: it can never commit (aborted); asked and no answer: unknown.
                return (TxnOutcome.UNKNOWN if commit else TxnOutcome.ABORTED), _error_name(e), True

    def _fatal_name(self, e: BaseException) -> str:
        """The error a call failed with; a fatal one confluent-kafka masked (masked_fatal) by librdkafka's name."""
        if masked_fatal(e):
            return self.fatal[-1] if self.fatal else "_FATAL"
        return _error_name(e)

    def _restart_asked(self, txn: _Txn) -> bool:
        """Apply a producer restart asked for while the transaction ends; True if it took the transaction.
        (A pause waits for the next transaction: a paused instance must not have asked to commit.)"""
        if self.faults is not None and self.faults.pending:
            self.faults.serve({RESTART_PRODUCER: self.served[RESTART_PRODUCER]})
        return self.open is not txn

    # -- the whole workload ----------------------------------------------------------------------
    def run(self, before_flush: Callable[[], None] | None = None) -> ProduceResult:
        error = ""
        try:
            self.producer = self._new_instance()
            while not self.stop.is_set():
                txn = self._begin()
                if txn is None:
                    break
                if self._fill(txn):
                    self._end(txn)
            if self.on_progress:
                self.on_progress(self.count)
            if self.zombie is not None and not self.stop.is_set():  # the workload ended while an instance was
                self._resume_zombie()  # paused: it resumes now (interrupted: the finally drains it)
            if before_flush:
                if self.faults is not None:  # producer faults still due are served while before_flush waits
                    self.faults.idle = lambda: self.faults.serve(self.served)
                before_flush()
                if self.faults is not None:
                    self.faults.idle = None
                if self.zombie is not None and not self.stop.is_set():  # paused meanwhile: it resumes now
                    self._resume_zombie()
        except TransactionsUnavailable:
            raise
        except (KafkaException, AttributeError) as e:
            if isinstance(e, AttributeError) and not masked_fatal(e):
                raise
            error = client_error_text(e)
            if before_flush:
                before_flush()
        finally:
            txn, self.open = self.open, None
            if txn is not None:  # interrupted (or failed) inside a transaction
                outcome = TxnOutcome.UNKNOWN if txn.commit_asked else TxnOutcome.ABORTED
                self.txlog.record(txn, outcome, cause=TxnCause.INTERRUPTED)
            if self.zombie is not None:
                with self.log.serving(self.zombie.session):
                    drain(self.zombie.producer, 2.0)
                if self.zombie.txn is not None:
                    self.txlog.record(self.zombie.txn, TxnOutcome.ABORTED, cause=TxnCause.FENCED)
            if self.producer is not None:
                drain(self.producer, 2.0)
            self.log.close(self.count)
            self.txlog.close()
        counts = self.log.counts
        return ProduceResult(self.log.sent, counts[Outcome.ACKED], counts[Outcome.REJECTED], counts[Outcome.UNKNOWN],
                             time.monotonic() - self.t0, self.stop.is_set(), error)
