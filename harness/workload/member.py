"""One member of the consumer group, as its own process (so a fault can kill or freeze it):

    python -m harness.workload.member        (settings as JSON in $KAFKA_CHAOS_MEMBER)

started by workload/consumers.py through procs.spawn (tied to the harness: it dies with it, even on
kill -9). It subscribes to the topic in the group and processes every record into the sink
(workload/sink.py), committing as its strategy says:

    commit-after     process the batch into the sink (a row per record, as each is done), then commit its
                     offsets (at-least-once)
    commit-before    commit the batch's offsets, then process it; a failed commit drops the batch (at-most-once)
    auto-commit      librdkafka stores each offset when it hands the record over and commits every
                     auto.commit.interval.ms in the background (either way can go wrong)
    transactional    consume-transform-produce: the batch's output records and its offsets in one Kafka
                     transaction (the output topic, read back with read_committed, is the sink's record); a
                     call that fails retriably is made again, one that asks for it aborts (Member._txn)
    idempotent-sink  no Kafka commit: output upserted by value, and the next offsets stored, in one SQLite
                     transaction; on assignment the member seeks to the offsets the sink stored

A batch is one poll of up to `batch` records; processing a record takes `processing_ms` (slept).
SIGTERM stops it gracefully after the batch in hand (the strategy's commit, then close: leaving the
group). Exit codes: 0 stopped, 2 the broker does not support the group protocol, 4 a fatal client error.
A loop turn that takes longer than STALL (every client call in it has a timeout well under it) writes every
thread's Python stack to the member's log, so a member found hung says where it was. A client call given a
timeout that has not returned GRACE seconds past it, in the member's running time, is the client hanging, not
the member: a watchdog thread says so in the sink (a `hung` event naming the call; the supervisor then reports
the member's kill as the client's hang, not as the run's error). librdkafka 2.16.0's send_offsets_to_transaction
did, forever, after its group coordinator was dropped by a re-bootstrap (librdkafka #5456, #5511).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from .sink import Sink, now_ms

UNSUPPORTED = 2
FATAL = 4
TIMEOUT = 30.0  # seconds for a client call given a timeout (init_transactions, committed, the stop's flush)
STALL = 75.0  # seconds a loop turn may take before the member's stacks go to its log
TXN_TIMEOUT_MS = 20000  # the member producer's transaction.timeout.ms: the bound of a call given -1
GRACE = 30.0  # seconds past its timeout a client call may take before it is said to hang
TICK = 1.0  # seconds between the watchdog's looks
# Errors that say the broker lacks the group protocol asked for (KIP-848's ConsumerGroupHeartbeat).
_UNSUPPORTED = {KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION}


def consumer_config(client: dict, group: str, member: str, strategy: str, protocol: str, config: dict) -> dict:
    """A member's librdkafka settings: the experiment's `consumer.config` over the strategy's own."""
    conf = {**client, "group.id": group, "client.id": member, "auto.offset.reset": "earliest",
            "enable.auto.commit": strategy == "auto-commit", "isolation.level": "read_committed"}
    if protocol != "classic":  # the default; a client older than KIP-848 (librdkafka < 2.4) has no such setting
        conf["group.protocol"] = protocol
    if protocol == "classic":  # KIP-848 moves the session to the broker (group.consumer.session.timeout.ms)
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1500})
    return {**conf, **config}


def overdue(name: str, timeout: float, waited: float) -> str:
    """What to say of client call `name`, given `timeout` seconds, that has waited `waited` seconds of the
    member's running time: '' while it may still return."""
    if waited <= timeout + GRACE:
        return ""
    return f"{name} has not returned after {waited:.0f} s (its timeout {timeout:g} s)"


class Watch:
    """The watchdog's view of the client call in progress. Its time is the watchdog's own ticks, counted only
    while the member runs: a member frozen (SIGSTOP, by a fault) is not its client taking time, and a tick
    late on a loaded machine only delays the claim."""

    def __init__(self):
        self.call: tuple | None = None  # (name, when it began, timeout): a new tuple per call
        self.waited = 0.0
        self.told: tuple | None = None

    def tick(self, calling: tuple | None, seconds: float) -> str:
        """One tick of `seconds` with `calling` in progress (None: none); what to say of it, once per call."""
        if calling is not self.call:
            self.call, self.waited = calling, 0.0
        elif calling is not None:
            self.waited += seconds
        if calling is None or calling is self.told:
            return ""
        said = overdue(calling[0], calling[2], self.waited)
        if said:
            self.told = calling
        return said


class Abandoned(Exception):
    """A stop came while a transaction call kept failing with retriable errors: the member stops without it."""


class Member:
    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.name = cfg["member"]
        self.topic = cfg["topic"]
        self.strategy = cfg["strategy"]
        self.stopping = False
        self.session = 0  # a new one at every assignment change and every seek the member makes itself
        self.n = 0
        self.sink = Sink(cfg["sink"], self.name)
        conf = {**consumer_config(cfg["client"], cfg["group"], self.name, self.strategy, cfg["protocol"],
                                  cfg.get("config") or {}), "error_cb": self._error}
        # The members seek themselves (idempotent-sink) or need to know how the group assigns.
        self.incremental = cfg["protocol"] == "consumer" or "cooperative" in str(
            conf.get("partition.assignment.strategy", ""))
        self.error: KafkaError | None = None
        self.consumer = Consumer(conf)
        self.producer = None
        if self.strategy == "transactional":
            self.producer = Producer({**cfg["client"], "transactional.id": cfg["transactional_id"],
                                      "transaction.timeout.ms": TXN_TIMEOUT_MS, "client.id": self.name})
        self.calling: tuple[str, float, float] | None = None  # the client call in progress (Watch)
        self.done = threading.Event()
        threading.Thread(target=self._watch, name="watchdog", daemon=True).start()
        if self.producer is not None:
            self._call("init_transactions", TIMEOUT, self.producer.init_transactions, TIMEOUT)

    def _call(self, name: str, timeout: float, call, *args):
        """call(*args), a client call given `timeout` seconds, watched (_watch)."""
        self.calling = (name, time.monotonic(), timeout)
        try:
            return call(*args)
        finally:
            self.calling = None

    def _watch(self) -> None:
        """Says in the sink (its own connection), and with every thread's stack in the log, that a client call is
        overdue (Watch). confluent-kafka lets go of the GIL while librdkafka blocks, so this runs."""
        watch, sink = Watch(), None
        while not self.done.wait(TICK):
            said = watch.tick(self.calling, TICK)
            if said:
                sink = sink or Sink(self.cfg["sink"], self.name)
                sink.event("hung", detail=said)
                print(f"member {self.name}: the client hangs: {said}", file=sys.stderr, flush=True)
                faulthandler.dump_traceback(sys.stderr)

    # -- librdkafka's callbacks (inside poll/consume) ---------------------------------------------
    def _error(self, err: KafkaError) -> None:
        if err.code() in _UNSUPPORTED or err.fatal():
            self.error = err

    def _assigned(self, consumer, partitions) -> None:
        self.session += 1
        if self.strategy == "idempotent-sink":  # seek to what the sink stored with the output
            stored = self.sink.stored_offsets([p.partition for p in partitions])
            for p in partitions:
                p.offset = stored.get(p.partition, OFFSET_BEGINNING)
            (consumer.incremental_assign if self.incremental else consumer.assign)(partitions)
        self.sink.event("assign", [p.partition for p in partitions], self._detail(partitions))

    def _revoked(self, consumer, partitions, event: str = "revoke") -> None:
        self.session += 1
        if self.strategy == "idempotent-sink":
            if self.incremental:
                consumer.incremental_unassign(partitions)
            else:
                consumer.unassign()
        self.sink.event(event, [p.partition for p in partitions])

    def _lost(self, consumer, partitions) -> None:
        self._revoked(consumer, partitions, "lost")

    @staticmethod
    def _detail(partitions) -> str:
        offsets = {p.partition: p.offset for p in partitions if p.offset >= 0}
        return json.dumps(offsets) if offsets else ""

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> int:
        self.sink.event("start", detail=f"pid {os.getpid()}")
        print(f"member {self.name}: confluent-kafka {confluent_kafka.version()[0]}, librdkafka "
              f"{confluent_kafka.libversion()[0]}", file=sys.stderr, flush=True)
        self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._lost)
        handle = getattr(self, f"_batch_{self.strategy.replace('-', '_')}")
        try:
            while not self.stopping:
                faulthandler.dump_traceback_later(STALL)  # cancels the last turn's
                batch = self.consumer.consume(self.cfg["batch"], 0.2)
                if self.error is not None:
                    return self._failed(self.error)
                records = []
                for m in batch:
                    if m.error():
                        if m.error().code() in _UNSUPPORTED or m.error().fatal():
                            return self._failed(m.error())
                        continue  # informational (partition EOF and the like)
                    records.append(m)
                if records:
                    handle(records)
        except KafkaException as e:
            return self._failed(e.args[0])
        except Abandoned as e:
            self.sink.event("abandon", detail=f"{e}: the open transaction left to the coordinator")
        else:
            if self.producer is not None:
                self.producer.flush(TIMEOUT)
        finally:
            faulthandler.cancel_dump_traceback_later()
            self.done.set()
        self.sink.event("stop")
        self.consumer.close()  # leaves the group (auto-commit commits what it stored)
        return 0

    def _failed(self, err: KafkaError) -> int:
        unsupported = err.code() in _UNSUPPORTED
        self.sink.event("error", detail=f"{err.name()}: {err.str()}")
        print(f"member {self.name}: {'unsupported' if unsupported else 'fatal'}: {err.name()}: {err.str()}",
              file=sys.stderr, flush=True)
        return UNSUPPORTED if unsupported else FATAL

    def _process(self, records, committed: str | None = None) -> list[tuple]:
        """The application's work: (partition, offset, value, session, n, processed_at) per record. With
        `committed`, each record's row goes into the sink as soon as it is processed (its own transaction, as
        an application writes each effect), so a kill mid-batch leaves the records before it processed."""
        rows, pause = [], self.cfg["processing_ms"] / 1000.0
        if committed:
            self.sink.hold(self.n, len(records))
        for m in records:
            if pause:
                time.sleep(pause)
            raw = m.value()
            value = int(raw) if raw is not None and raw.isdigit() else None
            row = (m.partition(), m.offset(), value, self.session, self.n, now_ms())
            self.n += 1
            if committed:
                self.sink.processed([row], committed)
            rows.append(row)
        return rows

    def _next_offsets(self, records) -> list[TopicPartition]:
        last: dict[int, int] = {}
        for m in records:
            last[m.partition()] = max(last.get(m.partition(), -1), m.offset())
        return [TopicPartition(self.topic, p, o + 1) for p, o in sorted(last.items())]

    def _commit(self, records) -> bool:
        try:
            self.consumer.commit(offsets=self._next_offsets(records), asynchronous=False)
            return True
        except KafkaException as e:  # a rebalance took the partitions (a zombie's commit), a broker away
            self.sink.event("commit-failed", sorted({m.partition() for m in records}), e.args[0].name())
            return False

    def _batch_commit_after(self, records) -> None:
        self._process(records, "after")
        self._commit(records)

    def _batch_commit_before(self, records) -> None:
        if self._commit(records):
            self._process(records, "before")

    def _batch_auto_commit(self, records) -> None:
        self._process(records, "auto")

    def _batch_idempotent_sink(self, records) -> None:
        fenced = self.sink.apply(self._process(records))
        if fenced:  # another member processed past this batch: go where the sink says
            self.sink.event("fenced", list(fenced), json.dumps(fenced))
            self.session += 1
            for partition, offset in fenced.items():
                try:
                    self.consumer.seek(TopicPartition(self.topic, partition, offset))
                except KafkaException:
                    pass  # no longer assigned: the next assignment seeks from the sink

    def _batch_transactional(self, records) -> None:
        rows = self._process(records)
        p = self.producer
        try:
            p.begin_transaction()
            for (partition, offset, value, session, n, at) in rows:
                p.produce(self.cfg["output"], partition=partition,
                          key=f"{self.name}:{session}:{n}:{at:.3f}".encode(),
                          value=f"{partition}:{offset}:{'' if value is None else value}".encode())
            self._txn(p.send_offsets_to_transaction, self._next_offsets(records),
                      self.consumer.consumer_group_metadata())
            self._txn(p.commit_transaction)
        except KafkaException as e:
            err = e.args[0]
            if not err.txn_requires_abort():
                raise
            self.sink.event("abort", sorted({m.partition() for m in records}), f"{err.name()}: {err.str()}")
            self._txn(p.abort_transaction)
            self._rewind(records)

    def _txn(self, call, *args) -> None:
        """A transaction call, with -1 (the transaction's remaining time, as librdkafka's documentation
        recommends: other timeouts risk desynchronizing its state), made again while its error is retriable
        (a timeout is: the call goes on in the background and may be made again). A stop ends the retrying
        (Abandoned): the open transaction is left to the coordinator, which aborts it when it times out or
        when the next member with the same transactional id starts."""
        while True:
            try:
                return self._call(call.__name__, TXN_TIMEOUT_MS / 1000, call, *args, -1)
            except KafkaException as e:
                err = e.args[0]
                if not err.retriable() or err.txn_requires_abort() or err.fatal():
                    raise
                self.sink.event("retry", detail=f"{call.__name__}: {err.name()}: {err.str()}")
                if self.stopping:
                    raise Abandoned(call.__name__) from e

    def _rewind(self, records) -> None:
        """After an abort: back to the group's committed offsets, as a restarted application would be."""
        self.session += 1
        parts = [TopicPartition(self.topic, p) for p in sorted({m.partition() for m in records})]
        try:
            for tp in self._call("committed", TIMEOUT, self.consumer.committed, parts, TIMEOUT):
                tp.offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                self.consumer.seek(tp)
        except KafkaException:
            pass  # no longer assigned: the next owner starts from the committed offsets


def main() -> int:
    cfg = json.loads(os.environ["KAFKA_CHAOS_MEMBER"])
    member = Member(cfg)
    signal.signal(signal.SIGTERM, lambda *_: setattr(member, "stopping", True))
    return member.run()


if __name__ == "__main__":
    sys.exit(main())
