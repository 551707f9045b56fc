"""A variant's producer, whichever it is, behind one face for the run:

    plain          producer.produce, in this process
    transactional  transactional.TransactionalWorkload (the variant's producer names a transactional.id)
    child          clientproc.ChildProducer (the variant names another confluent-kafka version)
    foreign        foreignproc.ForeignProducer (the variant names another implementation: kafka-python, aiokafka,
                   the Java client; harness/clients.py), transactional too when its producer names a transactional id

    prepare()                              readies what must be ready before the fault timeline starts (a
                                           child's client: a JVM's start takes seconds); nothing for the others
    run(before_flush) -> ProduceResult     sends everything; before_flush heals the faults before the flush
    record() -> dict                       what the summary keeps of it, however run() ended: the delivery
                                           counts, the client that ran, the transactions' outcomes

make_producer() is the one place that tells them apart; the run never branches on the kind. Each serves
its own workload faults (a verb -> (apply, heal) table, faults/channel.WorkloadFaults).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from ..clients import CONFLUENT_KAFKA
from ..faults.channel import WorkloadFaults
from ..logfile import FileLogger
from .clientenv import ensure, running
from .clientproc import ChildProducer
from .foreignenv import ensure as ensure_foreign
from .foreignproc import ForeignProducer
from .deliverylog import DeliveryLog
from .producer import ProduceResult, produce
from .transactional import TransactionalWorkload, TransactionsLog, planned_abort


@dataclass
class Sending:
    """What every producer is given: where to send, what, how fast, and where its outcomes go."""

    client: dict  # the cluster's librdkafka connection settings
    topic: str
    partitions: int
    messages: int
    config: dict  # the variant's producer settings
    acks: Path  # its delivery log
    client_log: Path  # librdkafka's log lines (and a child's output)
    rate: float | None
    flush_timeout: float
    stop: threading.Event
    on_progress: Callable[[int], None]
    logger: FileLogger
    faults: WorkloadFaults | None  # the producer faults it serves (None: none, or not during this run)

    @property
    def offsets_told(self) -> bool:
        """acks=0: the broker tells no offset."""
        return str(self.config.get("acks", self.config.get("request.required.acks", "all"))) != "0"


class VariantProducer(Protocol):
    def prepare(self) -> None: ...

    def run(self, before_flush: Callable[[], None] | None) -> ProduceResult: ...

    def record(self) -> dict: ...


class Plain:
    def __init__(self, s: Sending):
        self.s = s
        self.log = DeliveryLog(s.acks, s.partitions, s.offsets_told)

    def prepare(self) -> None:
        pass

    def run(self, before_flush):
        s = self.s
        return produce(s.client, s.topic, s.partitions, s.messages, s.config, self.log, rate=s.rate,
                       flush_timeout=s.flush_timeout, stop=s.stop, on_progress=s.on_progress, logger=s.logger,
                       before_flush=before_flush, faults=s.faults)

    def record(self) -> dict:
        return {"sent": self.log.sent, **self.log.counts, "client": running()}


class Transactional(Plain):
    def __init__(self, s: Sending, transactions: Path, size: int, abort_ratio: float, seed: int):
        super().__init__(s)
        self.txlog = TransactionsLog(transactions)
        self.size, self.abort_ratio, self.seed = size, abort_ratio, seed

    def run(self, before_flush):
        s = self.s
        return TransactionalWorkload(s.client, s.topic, s.partitions, s.messages, s.config, self.log, self.txlog,
                                     self.size, self.abort_ratio, self.seed, rate=s.rate,
                                     flush_timeout=s.flush_timeout, stop=s.stop, on_progress=s.on_progress,
                                     logger=s.logger, faults=s.faults).run(before_flush=before_flush)

    def record(self) -> dict:
        replaced = {"instances_replaced": dict(self.txlog.replaced)} if self.txlog.replaced else {}
        return {**super().record(), "transactions": self.txlog.counts(), **replaced}


class Child:
    def __init__(self, s: Sending, version: str):
        self.version = version
        self.child = ChildProducer(ensure(version), s.client, s.topic, s.partitions, s.messages, s.config, s.acks,
                                   s.offsets_told, s.client_log, s.rate, s.flush_timeout, s.stop, s.on_progress)

    def prepare(self) -> None:
        pass

    def run(self, before_flush):
        return self.child.run(before_flush)

    def record(self) -> dict:
        """What the child reported of its log (nothing when it died: the run then fails too)."""
        r = self.child.result
        counts = {"sent": r.sent, "acked": r.acked, "rejected": r.rejected, "unknown": r.unknown} if r else {}
        return {**counts, "client": self.child.versions or f"confluent-kafka {self.version}"}


RESTART_TRANSACTIONS = 4096  # restarts a transactional child's plan of aborts allows for


class Foreign:
    def __init__(self, s: Sending, name: str, version: str, txlog: TransactionsLog | None = None, size: int = 0,
                 abort_ratio: float = 0.0, seed: int = 0):
        """txlog: a transactional variant (its transactions of `size` sends, aborted on purpose as the harness's
        own transactional workload plans it)."""
        self.name, self.version, self.txlog = name, version, txlog
        # A restart adds a transaction at most (the one it aborted is sent again): the plan goes that far beyond.
        planned = -(-s.messages // size) + RESTART_TRANSACTIONS if txlog else 0
        aborts = [k for k in range(planned) if planned_abort(seed, k, abort_ratio)] if txlog else None
        self.child = ForeignProducer(ensure_foreign(name, version), s.client["bootstrap.servers"], s.topic,
                                     s.partitions, s.messages, s.config, s.acks, s.offsets_told, s.client_log, s.rate,
                                     s.flush_timeout, s.stop, s.on_progress, txlog, size, aborts, s.faults, planned)

    def prepare(self) -> None:
        self.child.prepare()

    def run(self, before_flush):
        return self.child.run(before_flush)

    def record(self) -> dict:
        """The delivery log's counts (the run wrote it from the child's lines), however the child ended."""
        log = self.child.log
        transactions = {"transactions": self.txlog.counts()} if self.txlog is not None else {}
        return {"sent": log.sent, **log.counts, "client": self.child.versions or f"{self.name} {self.version}",
                **transactions}


def make_producer(s: Sending, library: tuple[str, str] | None, transactional: bool, transactions: Path, size: int,
                  abort_ratio: float, seed: int) -> VariantProducer:
    """The variant's producer: another implementation's or another client version's in a child, a transactional
    one, or the plain one (spec.py refuses transactions with another confluent-kafka version)."""
    if library is not None:
        name, version = library
        if name == CONFLUENT_KAFKA:
            return Child(s, version)
        if transactional:
            return Foreign(s, name, version, TransactionsLog(transactions), size, abort_ratio, seed)
        return Foreign(s, name, version)
    if transactional:
        return Transactional(s, transactions, size, abort_ratio, seed)
    return Plain(s)
