"""The workload: one producer of per-partition counters, each send recorded in its delivery log (deliverylog.py).

Partition p receives the values 0, 1, 2, ... in order (message i goes to partition
i % P with value i // P, as ASCII decimal).

Producer restarts (the workload faults on the producer, applied by the produce loop between two
sends when the nemesis asks): the old instance is closed without
flushing (or frozen, for a pause) and a new one created, and the application sends again,
in the new session, every value it handed over and was not told was acknowledged, as an
at-least-once application does. Those are new rows of the same (partition, value).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from confluent_kafka import KafkaError, KafkaException, Producer

from ..faults.channel import PAUSE_PRODUCER, RESTART_PRODUCER, FaultTable
from ..formats import Outcome
from .deliverylog import CHUNK, DeliveryLog, drain, masked_fatal


@dataclass
class ProduceResult:
    sent: int
    acked: int
    rejected: int
    unknown: int
    duration: float
    interrupted: bool
    error: str = ""  # the client's fatal error, when it ended the workload early
    fatal: str = ""  # that error's name as librdkafka reports it (error_cb), e.g. OUT_OF_ORDER_SEQUENCE_NUMBER


def client_conf(config: dict, client: dict, logger: logging.Logger | None,
                on_fatal: Callable[[str], None] | None = None) -> dict:
    """The client's configuration; on_fatal(name) receives a fatal error's name. librdkafka reports a fatal
    error once, through error_cb, with the underlying code (the produce calls after it only say _FATAL):
    that is the name known-bug experiments need (e.g. OUT_OF_ORDER_SEQUENCE_NUMBER, _INCONSISTENT)."""
    conf = {**config, **client}
    if logger is not None:
        conf["logger"] = logger
    if on_fatal is not None:
        def error_cb(err) -> None:
            if err.fatal():
                on_fatal(err.name())
        conf["error_cb"] = error_cb
        if logger is not None:  # librdkafka's own FATAL line too: a run on 2.4.0 logged one that error_cb never saw
            logger.addFilter(_FatalLine(on_fatal))
    return conf


class _FatalLine(logging.Filter):
    """Passes every line on; a librdkafka FATAL line ("FATAL [rdkafka#producer-1] [thrd:...]: Fatal error: Local:
    Inconsistent state: Unable to reconstruct MessageSet ...") names its error: the KafkaError name whose
    description the line gives (_INCONSISTENT), else the description itself."""

    def __init__(self, on_fatal: Callable[[str], None]):
        super().__init__()
        self.on_fatal = on_fatal

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("FATAL ") and "Fatal error: " in text:
            self.on_fatal(fatal_name(text.split("Fatal error: ", 1)[1]))
        return True


def client_error_text(e: BaseException) -> str:
    """A client exception's words, for producer_error."""
    if masked_fatal(e):
        return f"fatal error (confluent-kafka raised it as AttributeError: {e})"
    return e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)


def fatal_name(said: str) -> str:
    """"Local: Inconsistent state: Unable to ..." -> "_INCONSISTENT"; "Broker: Broker received an out of order
    sequence number: ..." -> "OUT_OF_ORDER_SEQUENCE_NUMBER"; a description librdkafka does not know is kept."""
    names = _error_names()
    return next((names[d] for d in sorted(names, key=len, reverse=True) if said.startswith(d)), said.split(": ")[0])


@functools.cache
def _error_names() -> dict[str, str]:
    """librdkafka's error descriptions -> names, from the client's own table."""
    out = {}
    for name in dir(KafkaError):
        code = getattr(KafkaError, name)
        if isinstance(code, int) and not isinstance(code, bool):
            err = KafkaError(code)
            if err.str() and not err.str().startswith("Err-"):  # "Err-1234?": a code it has no words for
                out.setdefault(err.str(), err.name())
    return out


def hand_batch(producer: Producer, topic: str, partition: int, values: list[int], on_delivery: Callable,
               refused: Callable, handed: list[int]) -> KafkaError | None:
    """Hand one partition's values to the client in order, in one produce_batch() call (a fifth faster than
    a produce() per message: bench/producer.py), waiting out a full local queue. `handed` receives each
    value once the client has it (queued, or refused for good).

    The client takes a batch message by message and marks each one it refuses with `_error`. A full
    queue refuses the rest of the batch: that rest is handed again once delivery reports are served.
    Any other refusal (e.g. _FATAL after an idempotent producer's fatal error) is final: each refused
    message is recorded with `refused(partition, value, error)` (rejected: it was never sent) and the
    first such error is returned, for the caller to end the workload as produce() would have. A message
    queued after one refused would break the send order: that is raised as a harness failure."""
    if not hasattr(producer, "produce_batch"):
        return _hand_one_by_one(producer, topic, partition, values, on_delivery, refused, handed)
    done = 0
    batch = [{"value": b"%d" % v} for v in values]
    while batch:
        queued = producer.produce_batch(topic, batch, partition=partition, on_delivery=on_delivery)
        if queued == len(batch):
            handed.extend(values[done:])
            return None
        first = next(k for k, m in enumerate(batch) if "_error" in m)
        error, rest = batch[first]["_error"], batch[first:]
        if queued != first or not all("_error" in m for m in rest):
            raise RuntimeError(f"the client queued a message of {topic}[{partition}] after refusing an earlier one "
                               f"({error.name()}): the send order would break")
        handed.extend(values[done:done + first])
        done += first
        if error.code() != KafkaError._QUEUE_FULL:
            for v, m in zip(values[done:], rest):
                refused(partition, v, m["_error"])
            handed.extend(values[done:])
            return error
        producer.poll(0.01)  # serve delivery reports: that frees the queue
        batch = [{"value": m["value"]} for m in rest]
    return None


def _hand_one_by_one(producer: Producer, topic: str, partition: int, values: list[int], on_delivery: Callable,
                     refused: Callable, handed: list[int]) -> KafkaError | None:
    """hand_batch for clients without produce_batch (confluent-kafka before 2.12, run by the client axis):
    one produce() per message, the same outcomes (a full queue waited out, any other refusal final)."""
    for i, v in enumerate(values):
        while True:
            try:
                producer.produce(topic, b"%d" % v, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:  # the local queue is full: serving delivery reports frees it
                producer.poll(0.01)
            except KafkaException as e:
                error = e.args[0]
                for w in values[i:]:
                    refused(partition, w, error)
                handed.extend(values[i:])
                return error
        handed.append(v)
    return None


def hand_over(producer: Producer, topic: str, partitions: int, indices, log: "DeliveryLog",
              handed: list[list[int]] | None = None) -> None:
    """Hand messages by index (ascending), each partition's in one batch. `handed[p]` receives partition
    p's values once the client has them. A final refusal is raised as produce() would raise it, once
    every message is handed or recorded as refused."""
    handed = handed if handed is not None else [[] for _ in range(partitions)]
    indices = np.asarray(indices, dtype=np.int64)
    errors = [hand_batch(producer, topic, p, (indices[indices % partitions == p] // partitions).tolist(),
                         log.on_delivery_to[p], log.refused, handed[p]) for p in range(partitions)]
    error = next((e for e in errors if e is not None), None)
    if error is not None:
        raise KafkaException(error)


def close_now(producer: Producer, timeout: float = 2.0) -> None:
    """Tear an instance down without flushing, as a crash would: what is queued or in flight is purged
    (its reports say so: unknown), the reports are served, and the instance is dropped."""
    drain(producer, timeout)


def produce(
    client: dict,
    topic: str,
    partitions: int,
    messages: int,
    config: dict,
    log: DeliveryLog,
    rate: float | None = None,
    flush_timeout: float = 60.0,
    stop: threading.Event | None = None,
    on_progress: Callable[[int], None] | None = None,
    logger: logging.Logger | None = None,
    before_flush: Callable[[], None] | None = None,
    faults=None,
) -> ProduceResult:
    """Send `messages` counters round-robin over the partitions, at `rate` msg/s if given.

    Every report goes to `log`, which is closed (fsynced, with sent == acked + rejected
    + unknown) however this ends, an exception or Ctrl-C included; log.sent and
    log.counts then hold what was recorded.

    `before_flush` runs once every message is handed to the client and before the
    final flush: the run heals all faults there, so the flush can complete. `faults`
    (faults/channel.WorkloadFaults) is served between chunks, by the table `served`: a restart
    and a pause.
    """
    stop = stop or threading.Event()
    fatal: list[str] = []
    conf = client_conf(config, client, logger, fatal.append)
    producer = Producer(conf)
    zombie: tuple[int, Producer] | None = None  # (session, instance) frozen by a pause
    t0 = time.monotonic()
    count = 0  # messages handed to the client
    error = ""

    def replace(paused: bool) -> None:
        """A new instance takes over what was not acknowledged; the old one is closed (restart) or frozen as
        it is, no call reaching it until it resumes (pause)."""
        nonlocal producer, zombie
        if not paused:
            close_now(producer)
        elif zombie is not None:
            raise RuntimeError(f"{PAUSE_PRODUCER}: the paused producer has not resumed yet (one pause at a time)")
        else:
            zombie = (log.session, producer)
        log.new_session(count)
        producer = Producer(conf)
        again = log.unacked(count)
        log.handed_late(again)
        hand_over(producer, topic, partitions, again, log)

    def resume(params: dict) -> None:
        nonlocal zombie
        if zombie is not None:
            resume_plain(log, *zombie, flush_timeout)
            zombie = None

    served: FaultTable = {RESTART_PRODUCER: (lambda params: replace(paused=False), None),
                          PAUSE_PRODUCER: (lambda params: replace(paused=True), resume)}

    try:
        try:
            while count < messages:
                if count:  # between chunks: serve delivery reports, spill, report, pace, apply workload faults
                    producer.poll(0)
                    log.maybe_spill()
                    if on_progress:
                        on_progress(count)
                    if stop.is_set():
                        break
                    if rate:
                        ahead = t0 + count / rate - time.monotonic()
                        if ahead > 0:
                            time.sleep(ahead)
                    if faults is not None and faults.pending:
                        faults.serve(served)
                log.mark_chunk()
                end = min(messages, count + CHUNK)
                handed: list[list[int]] = [[] for _ in range(partitions)]
                try:
                    hand_over(producer, topic, partitions, range(count, end), log, handed)
                finally:
                    if sum(map(len, handed)) == end - count:
                        count = end
                    else:  # cut short inside the chunk: what the client has is not a prefix of it
                        log.handed_late(sorted(v * partitions + p for p, vs in enumerate(handed) for v in vs))
            if on_progress:
                on_progress(count)
            if zombie is not None and not stop.is_set():  # the workload ended while a producer was paused:
                resume({})  # it resumes now (interrupted: the finally drains it)
            if faults is not None:  # the faults still due as the loop ended are served while before_flush waits
                faults.idle = lambda: faults.serve(served)
            if before_flush:
                before_flush()
            if faults is not None:
                faults.idle = None
            if zombie is not None and not stop.is_set():  # paused while the nemesis finished: it resumes now
                resume({})
            left = producer.flush(0.0 if stop.is_set() else flush_timeout)
            if left:
                # Still queued or in flight: purge so each gets its report (never silence).
                drain(producer, 5.0)
        except (KafkaException, AttributeError) as e:
            # The client failed for good (e.g. an idempotent producer's OUT_OF_ORDER_SEQUENCE_NUMBER after
            # an unclean leader election): what was sent is kept and analysed, the error is reported.
            if isinstance(e, AttributeError) and not masked_fatal(e):
                raise
            error = client_error_text(e)
            if before_flush:
                before_flush()
            drain(producer, 2.0)  # serves error_cb too: the fatal error's own name
    except BaseException:
        # Interrupted or failed: collect what reports can still come, quickly; the rest become unknown.
        drain(producer, 2.0)
        raise
    finally:
        if zombie is not None:
            with log.serving(zombie[0]):
                drain(zombie[1], 2.0)
        try:
            producer.poll(0)
        except KafkaException:
            pass
        except AttributeError as e:
            if not masked_fatal(e):
                raise
        log.close(count)
    return ProduceResult(log.sent, log.counts[Outcome.ACKED], log.counts[Outcome.REJECTED], log.counts[Outcome.UNKNOWN],
                         time.monotonic() - t0, stop.is_set(), error, fatal[0] if fatal else "")


def resume_plain(log: DeliveryLog, session: int, producer: Producer, timeout: float) -> None:
    """A paused (plain) producer resumes: what it had queued or in flight completes, in its own session."""
    with log.serving(session):
        if producer.flush(timeout):
            drain(producer, 2.0)
