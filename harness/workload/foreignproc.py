"""The producer of a foreign client implementation (harness/clients.py: kafka-python, aiokafka, the Java client)
in a child process, and the one line protocol every such child speaks. The **run** writes the delivery log from
the child's lines, so acks.parquet, every metric, the report and JUnit are the same whatever the client; the
child only sends and tells what became of each send.

    run -> child   {json}               the task, first line: topic, partitions, messages, rate, chunk (sends per
                                        chunk), flush_timeout (s), hang_grace (s: a Python child's call that
                                        waits without a timeout, still waiting this long past all the client's
                                        own timeouts together, hangs: cut short, the workload ends with it as
                                        its error), bootstrap (the cluster's address), settings
                                        (the variant's producer settings, in the implementation's own names,
                                        passed to it as they are), transactions (null, or for a transactional
                                        variant {"size": S, "aborts": [K, ...], "planned": T}: transactions of
                                        S sends; those listed are aborted on purpose, the others committed:
                                        transactional.py's seeded plan, for transactions 0 .. T-1)
                   go                   the fault timeline starts: send
                   restart              (a producer restart, any time after `go`) close the producer now without
                                        flushing, start a new instance and hand again, in index order, every
                                        message handed and not acknowledged; then go on (a transactional child:
                                        the open transaction is aborted, and its messages are sent again in the
                                        next transactions, named by `b` lines)
                   pause                (a producer pause) leave the instance as it is, its reports held, and go
                                        on with a new one as after a restart (line p); a transactional child's
                                        paused instance keeps its open transaction: the new one sends again what
                                        it had handed of it, the rest of its fresh messages stays its own
                   resume               the paused instance completes what it holds, and its reports are told
                                        (lines z); a transactional one first hands the rest of its transaction
                                        and asks to commit it, as a zombie (and aborts it when the commit failed
                                        with an error the client can abort, as an application does); nothing
                                        but `z -` when none is paused
                   flush                the faults are healed: flush and finish
    child -> run   client NAME VERSION  the implementation and version it runs (checked)
                   ready                its producer is built (and started): it waits for `go`
                   chunk MS             the next `chunk` sends are handed from now (wall clock, ms): their sent_at
                   sent N               progress: messages 0..N-1 are handed (message i: partition i % P, value i // P)
                   a P V OFFSET LAT     (P, V) acknowledged at OFFSET, LAT ms after it was handed
                   B N                  then N acknowledgements in binary, 24 bytes each: three little-endian
                                        int64s, message index, offset (-2**63: none told), latency in ns (the
                                        Java child's: it reports a million sends a second, which the run takes
                                        as arrays, with no number to format or parse per send)
                   e P V NAME LAT       (P, V) failed with error NAME (its exception class's simple name)
                   r P V NAME           (P, V) refused by the client's send() before transmitting anything
                   t K OUTCOME CAUSE ERROR SENDS MS
                                        transaction K ended (MS: wall clock, ms) after SENDS sends were handed in
                                        it: OUTCOME committed | aborted | unknown (the commit was asked, never
                                        answered), CAUSE planned | error | interrupted | restart | fenced (`-`:
                                        committed; a paused instance's transaction is fenced either way), ERROR
                                        the exception's simple name (`-`: none); a row of the transactions log
                   b K LO HI I...       transaction K begins (a transactional child, before any report of it): it
                                        holds the messages I... (sent again: a restart took them from their
                                        transaction), then the fresh messages LO .. HI-1
                   s K N F              a transactional session K starts: the last one handed fresh messages up
                                        to N, this one hands fresh ones from F (those between are sent again,
                                        named by b lines); nothing is handed again unless a b line says so
                   p K N [F]            as `s K N [F]`, after a pause: the last session is paused, its reports
                                        held (a transactional one's open transaction with them)
                   z J ... z -          the lines between are the paused session J's reports, told as it resumed
                                        (`z -` alone: none was paused)
                   late LO HI           (between `z J` and `z -`) the paused session handed the fresh messages
                                        LO .. HI-1 as it resumed: the rest of its transaction, told fenced by
                                        its `t` line (committed if the broker let it commit)
                   s K N                session K (the producer instance after K restarts) starts, N messages
                                        handed so far: every line before it is of earlier sessions, every line
                                        after it of this one (the old instance is closed, its callbacks done;
                                        a later one is dropped: its send stays unknown there); it hands again
                                        the messages not acknowledged so far, then fresh ones
                   handed               every message is handed; it waits for `flush` (the end of its stdin: stop)
                   result {json}        handed (how many), interrupted, error (the words of what ended it early),
                                        fatal (that error's name), duration (s)

A transactional child (the Java client's, kafka-python's, aiokafka's) begins each transaction with its `b` line, and
after its last message commits it, or flushes (so its records are written and read_committed must leave them out)
and aborts it as planned; a commit that fails is aborted when the client can (aborted, cause error), else unknown,
and an error the client cannot recover from ends the workload (result `fatal`); only a restart's aborted
transaction, and what a paused instance had handed of its own, are sent again (transactional.py's rules). Every
send's row in the delivery log carries its transaction, as the b lines say (a paused session's, as they said
when it paused).

Outcomes keep the delivery log's rules (outcomes.py): `a` is acked; `e` is rejected only when the error's name is
in the implementation's table of errors that prove nothing was written (clients.py), else unknown; `r` is
rejected; a message handed and never reported is unknown (DeliveryLog.close), so `sent == acked + rejected +
unknown` holds however the child ends. A stop (Ctrl-C, a failure of the run) reaches the child as SIGTERM: it
stops handing, gives its client a short close to report, and still answers with its result; a child that dies
without one leaves its log closed from what it said (handed: the most it said it had) and fails the run.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import procs
from ..exits import InfraError
from ..faults.channel import PAUSE_PRODUCER, RESTART_PRODUCER, FaultTable, WorkloadFaults
from datetime import datetime, timezone

from ..formats import Outcome, TxnCause, TxnOutcome
from .clientproc import STOP_TIMEOUT, _close, _say, ask_to_finish
from .deliverylog import CHUNK, DeliveryLog
from .foreignenv import ForeignEnv
from .producer import ProduceResult
from .transactional import TransactionsLog


class ProtocolError(ValueError):
    """A line the protocol does not have."""


@dataclass(frozen=True)
class Told:  # a P V OFFSET LAT
    partition: int
    value: int
    offset: int | None
    latency_ms: float


@dataclass(frozen=True, eq=False)
class ToldMany:  # B N, then N (index, offset, ns) triples
    indices: np.ndarray  # int64 message indices
    offsets: np.ndarray  # int64; NO_OFFSET (deliverylog.py): none told
    latencies_ms: np.ndarray  # float64, one per send


FRAME = np.dtype("<i8")
HANG_GRACE = 30.0  # the task's hang_grace; as long as a consumer group member's watchdog gives (member.py)


@dataclass(frozen=True)
class Begun:  # b K LO HI I...
    number: int
    lo: int
    hi: int
    again: list[int]


@dataclass(frozen=True)
class Ended:  # t K OUTCOME CAUSE ERROR SENDS MS
    number: int
    outcome: str
    cause: str | None
    error: str | None
    sends: int
    at_ms: int


@dataclass(frozen=True)
class Failed:  # e P V NAME LAT, r P V NAME
    partition: int
    value: int
    error: str
    latency_ms: float | None
    refused: bool


def parse(line: str, partitions: int):
    """One child line (but a `B` frame: read_event) -> ("client", name, version) | ("chunk", ms) | ("sent", n) |
    ("session", k, n[, f]) | ("paused", k, n[, f]) | ("zombie", j) | ("resumed",) | ("late", lo, hi) | Told | Failed |
    Begun | Ended |
    ("handed",) | ("result", dict). ProtocolError for anything else (a
    partition out of range, a negative value, ...)."""
    word, _, rest = line.rstrip("\n").partition(" ")
    parts = rest.split(" ")
    try:
        if word in ("a", "e", "r"):
            p, v = int(parts[0]), int(parts[1])
            if not 0 <= p < partitions or v < 0:
                raise ProtocolError(f"no such send: partition {p}, value {v}")
            if word == "a" and len(parts) == 4:
                offset = None if parts[2] == "-" else int(parts[2])
                return Told(p, v, offset, float(parts[3]))
            if word == "e" and len(parts) == 4 and parts[2]:
                return Failed(p, v, parts[2], float(parts[3]), refused=False)
            if word == "r" and len(parts) == 3 and parts[2]:
                return Failed(p, v, parts[2], None, refused=True)
        elif word == "t" and len(parts) == 6:
            number, sends, at_ms = int(parts[0]), int(parts[4]), int(parts[5])
            cause, error = (None if x == "-" else x for x in parts[2:4])
            committed = parts[1] == TxnOutcome.COMMITTED
            if parts[1] in TxnOutcome.__members__.values() and number >= 0 and sends >= 0 and error != "" \
                    and (cause is None) == (committed and cause != TxnCause.FENCED) \
                    and (cause is None or cause in TxnCause.__members__.values()):
                return Ended(number, parts[1], cause, error, sends, at_ms)
        elif word == "sent" and len(parts) == 1:
            return ("sent", int(parts[0]))
        elif word == "s" and len(parts) in (2, 3) and int(parts[0]) > 0 and all(int(x) >= 0 for x in parts[1:]):
            return ("session", *(int(x) for x in parts))
        elif word == "p" and len(parts) in (2, 3) and int(parts[0]) > 0 and all(int(x) >= 0 for x in parts[1:]):
            return ("paused", *(int(x) for x in parts))
        elif word == "late" and len(parts) == 2 and 0 <= int(parts[0]) < int(parts[1]):
            return ("late", int(parts[0]), int(parts[1]))
        elif word == "z" and len(parts) == 1 and (parts[0] == "-" or int(parts[0]) >= 0):
            return ("resumed",) if parts[0] == "-" else ("zombie", int(parts[0]))
        elif word == "b" and len(parts) >= 3:
            number, lo, hi, *again = (int(x) for x in parts)
            if number >= 0 and 0 <= lo <= hi and all(i >= 0 for i in again) and (hi > lo or again):
                return Begun(number, lo, hi, again)
        elif word == "chunk" and len(parts) == 1:
            return ("chunk", int(parts[0]))
        elif word in ("handed", "ready") and not rest:
            return (word,)
        elif word == "client" and len(parts) == 2:
            return ("client", parts[0], parts[1])
        elif word == "result":
            result = json.loads(rest)
            handed = result.get("handed") if isinstance(result, dict) else None
            if type(handed) is int and handed >= 0:
                return ("result", result)
    except ValueError:
        pass
    raise ProtocolError(f"not a line of the protocol: {line.strip()[:200]!r}")


def read_event(stream, partitions: int, messages: int):
    """The child's next line (bytes, from `stream`), or `B` frame, as its event; None at the end of its output.
    ProtocolError for what the protocol does not have (a frame cut short, an index beyond the workload's)."""
    line = stream.readline()
    if not line:
        return None
    if not line.startswith(b"B "):
        return parse(line.decode("utf-8", "replace"), partitions)
    count = line[2:].strip()
    if not count.isdigit() or int(count) == 0:
        raise ProtocolError(f"not a line of the protocol: {line.strip()[:200]!r}")
    size = int(count) * 3 * FRAME.itemsize
    frame = stream.read(size)
    if len(frame) != size:
        raise ProtocolError(f"a frame of {int(count)} acknowledgements cut short ({len(frame)} of {size} bytes)")
    index, offset, nanos = np.frombuffer(frame, FRAME).reshape(-1, 3).T
    if index.min() < 0 or index.max() >= messages:
        raise ProtocolError(f"a report of a send the workload does not have: message {index.max()}")
    return ToldMany(index.astype(np.int64), offset.astype(np.int64), np.maximum(nanos, 0) / 1e6)


class Reports:
    """The child's lines applied to the delivery log (and a transactional child's to the transactions log
    `txlog`, its transactions of `size` messages), as they come. `handed` is the most the child said it had
    handed; the log is closed with it (every send handed and never reported: unknown). A send reported twice, or
    one beyond the workload's messages, is a ProtocolError: the log would no longer add up; so is a transaction
    ended twice or beyond the workload's."""

    def __init__(self, log: DeliveryLog, implementation, partitions: int, offsets_told: bool, messages: int,
                 txlog: TransactionsLog | None = None, size: int = 0):
        self.log, self.impl, self.partitions, self.offsets_told = log, implementation, partitions, offsets_told
        self.txlog, self.size = txlog, size
        # A transactional child's transactions (its b lines): message index -> its transaction now (-1: none
        # yet), transaction -> the session that began it, those ended.
        self.txn_of = np.full(messages, -1, np.int64) if txlog is not None else None
        self.began: dict[int, int] = {}
        self.ended: set[int] = set()
        self.reported = np.zeros(messages, np.uint8)
        # A paused session (a producer pause): (its number, what it had reported when paused, a transactional
        # child's transactions of the messages then); while its reports are told (between z lines), the log serves
        # it (_serving) and `reported` and `txn_of` are its own (the messages its successor sent again are in the
        # successor's transactions).
        self.paused: tuple[int, np.ndarray, np.ndarray | None] | None = None
        self._serving = None
        self.handed = 0
        self.result: dict | None = None
        self.client: tuple[str, str] | None = None

    def apply(self, event) -> None:
        log = self.log
        if isinstance(event, Told):
            self._saw(event)
            log.told(event.partition, event.value, event.offset if self.offsets_told else None,
                     event.latency_ms / 1000.0, self._txn(event.partition, event.value))
        elif isinstance(event, ToldMany):
            self._saw_many(event.indices)
            txns = self.txn_of[event.indices] if self.txlog is not None else None
            if txns is not None and txns.min() < 0:
                raise ProtocolError(f"a report of message {event.indices[np.argmin(txns)]}, in no transaction begun")
            log.told_many(event.indices, event.offsets if self.offsets_told else None, event.latencies_ms / 1000.0,
                          txns)
        elif isinstance(event, Failed):
            self._saw(event)
            rejected = event.refused or self.impl.rejected(event.error)
            log.failed(event.partition, event.value, event.error,
                       -1.0 if event.latency_ms is None else event.latency_ms / 1000.0, rejected,
                       self._txn(event.partition, event.value))
        elif isinstance(event, Begun):
            self._begun(event)
        elif isinstance(event, Ended):
            if self.txlog is None or event.number in self.ended or event.number not in self.began:
                raise ProtocolError(f"transaction {event.number}: not one of the workload's, or ended twice")
            self.ended.add(event.number)
            self.txlog.add(event.number, self.began.get(event.number, 0), event.outcome, event.error, event.cause,
                           event.sends, datetime.fromtimestamp(event.at_ms / 1000, timezone.utc))
        elif event[0] == "chunk":
            log.mark_chunk(event[1])
            log.maybe_spill()
        elif event[0] == "sent":
            self.handed = max(self.handed, event[1])
        elif event[0] == "session":
            self._restarted(*event[1:])
        elif event[0] == "paused":
            if self.paused is not None:
                raise ProtocolError(f"session {event[1]} after a pause: one is paused already")
            # what the paused session has yet to report, and the transactions it handed them in
            self.paused = (self.log.session, self.reported.copy(), None if self.txn_of is None else self.txn_of.copy())
            self._restarted(*event[1:])
        elif event[0] == "zombie":
            if self.paused is None or self.paused[0] != event[1] or self._serving is not None:
                raise ProtocolError(f"session {event[1]}'s reports: it is not the paused one")
            self._serving = self.log.serving(event[1])
            self._serving.__enter__()
            self._swap_paused()
        elif event[0] == "late":
            if self._serving is None or self.txn_of is None or event[2] > len(self.reported) \
                    or (self.txn_of[event[1]: event[2]] < 0).any():
                raise ProtocolError(f"messages {event[1]}..{event[2] - 1} handed late: not by a paused "
                                    "transactional session, or in no transaction begun")
            self.log.handed_late(range(event[1], event[2]))
        elif event[0] == "resumed":
            if self._serving is not None:  # the paused session's reports are over: back to the current one
                self._serving.__exit__(None, None, None)
                self._serving = None
                self._swap_paused()
                self.paused = None
        elif event[0] == "result":
            self.result = event[1]
            self.handed = max(self.handed, event[1]["handed"])
        elif event[0] == "client":
            self.client = (event[1], event[2])
        # ("ready",), ("handed",): the producer answers them

    def _swap_paused(self) -> None:
        """The paused session's view of what was reported (and in which transactions) for the current one's."""
        number, reported, txn_of = self.paused
        self.paused = (number, self.reported, self.txn_of)
        self.reported, self.txn_of = reported, (self.txn_of if txn_of is None else txn_of)

    def _restarted(self, session: int, handed: int, fresh_from: int | None = None) -> None:
        """A new instance starts: it hands again what no session was told was acknowledged (as the harness's own
        produce loop does), each of those to be reported once more, in this session. A transactional one
        (fresh_from given) hands fresh messages from there, and again only what its b lines name."""
        if session != self.log.session + 1 or handed < self.handed or handed > len(self.reported) \
                or (fresh_from is not None) != (self.txlog is not None) \
                or fresh_from is not None and not handed <= fresh_from <= len(self.reported):
            raise ProtocolError(f"session {session} after {handed} messages: the log is at session "
                                f"{self.log.session}, {self.handed} messages handed")
        if fresh_from is not None:
            self.log.new_session(handed, fresh_from)
            self.handed = fresh_from
            return
        self.handed = handed
        self.log.new_session(handed)
        again = self.log.unacked(handed)
        self.log.handed_late(again)
        self.reported[again] = 0

    def _begun(self, event: Begun) -> None:
        """Transaction K holds what its b line names: the messages sent again are to be reported once more, in
        this session."""
        again = np.asarray(event.again, dtype=np.int64)
        if self.txlog is None or event.number != len(self.began) or event.hi > len(self.reported) \
                or len(again) and (again.max() >= self.handed or np.unique(again).size != again.size):
            raise ProtocolError(f"transaction {event.number} of messages {event.lo}..{event.hi - 1} and "
                                f"{len(again)} sent again: not the next one, or not messages handed before")
        self.began[event.number] = self.log.session
        self.txn_of[event.lo: event.hi] = event.number
        if len(again):
            self.txn_of[again] = event.number
            self.log.handed_late(again)
            self.reported[again] = 0

    def _txn(self, partition: int, value: int) -> int | None:
        if self.txlog is None:
            return None
        txn = int(self.txn_of[value * self.partitions + partition])
        if txn < 0:
            raise ProtocolError(f"a report of partition {partition}, value {value}, in no transaction begun")
        return txn

    def _saw(self, event) -> None:
        index = event.value * self.partitions + event.partition
        if index >= len(self.reported):
            raise ProtocolError(f"a report of a send the workload does not have: partition {event.partition}, "
                                f"value {event.value}")
        if self.reported[index]:
            raise ProtocolError(f"partition {event.partition}, value {event.value} reported twice")
        self.reported[index] = 1
        self.handed = max(self.handed, index + 1)

    def _saw_many(self, indices: np.ndarray) -> None:
        lo = int(indices.min())
        span = self.reported[lo: int(indices.max()) + 1]  # a view: the frame's sends are near one another
        before, seen = np.count_nonzero(span), span[indices - lo]
        span[indices - lo] = 1
        if seen.any() or np.count_nonzero(span) - before != len(indices):  # told before, or twice in the frame
            ordered = np.sort(indices)
            twice = int(indices[np.flatnonzero(seen)[0]]) if seen.any() else \
                int(ordered[np.flatnonzero(np.diff(ordered) == 0)[0]])
            raise ProtocolError(f"partition {twice % self.partitions}, value {twice // self.partitions} reported twice")
        self.handed = max(self.handed, int(indices.max()) + 1)

    def close(self) -> None:
        if self._serving is not None:  # the child ended while telling a paused session's reports
            self._serving.__exit__(None, None, None)
            self._serving = None
        self.log.close(self.handed)


class ForeignProducer:
    """The variant's producer in a child of implementation `env.name` at `env.version`. prepare() starts the child
    and returns once its client is built (a JVM's or an interpreter's start takes seconds: the
    fault timeline starts after them); run() lets it send. `result` and `versions` stay readable however it ends.
    txlog (a transactional variant): the transactions log, written from the child's `t` lines, of transactions of
    `size` messages, those numbered in `aborts` aborted on purpose: a plan of `planned` transactions (restarts make
    more than the messages fill)."""

    def __init__(self, env: ForeignEnv, bootstrap: str, topic: str, partitions: int, messages: int, settings: dict,
                 acks: Path, offsets_told: bool, client_log: Path, rate: float | None, flush_timeout: float,
                 stop: threading.Event, on_progress: Callable[[int], None] | None = None,
                 txlog: TransactionsLog | None = None, size: int = 0, aborts: list[int] | None = None,
                 faults: WorkloadFaults | None = None, planned: int = 0):
        self.env, self.client_log, self.stop, self.on_progress = env, client_log, stop, on_progress
        self.faults = faults  # the producer faults it serves (restarts), between two of the child's lines
        self.served: FaultTable = {RESTART_PRODUCER: (self._restart, None),
                                   PAUSE_PRODUCER: (self._pause, self._resume)}
        self._handed_early = False
        transactions = {"size": size, "aborts": list(aborts or []), "planned": planned or -(-messages // size)} \
            if txlog is not None else None
        self.task = {"topic": topic, "partitions": partitions, "messages": messages, "rate": rate, "chunk": CHUNK,
                     "flush_timeout": flush_timeout, "hang_grace": HANG_GRACE, "bootstrap": bootstrap,
                     "settings": settings,
                     "transactions": transactions}
        self.log = DeliveryLog(acks, partitions, offsets_told)
        self.txlog = txlog
        self.reports = Reports(self.log, env.implementation, partitions, offsets_told, messages, txlog, size)
        self.result: ProduceResult | None = None
        self.versions = ""
        self._wrong = ""
        self.before_flush: Callable[[], None] | None = None
        self.proc = None
        self.ready = False
        self._t0 = 0.0
        self._ended = threading.Event()
        self._relay: threading.Thread | None = None

    def prepare(self) -> None:
        """Start the child and wait until it says `ready` (or ends: run() then fails)."""
        if self.proc is not None:
            return
        self._t0 = time.monotonic()
        try:
            self.proc = procs.spawn(list(self.env.command), self.client_log, env=self.env.environ(), talk=True)
        except BaseException:
            self.reports.close()
            if self.txlog is not None:
                self.txlog.close()
            raise
        self._relay = threading.Thread(target=self._relay_stop, args=(self.proc, self._ended),
                                       name="foreign-child-stop", daemon=True)
        self._relay.start()
        try:
            _say(self.proc, json.dumps(self.task))
            self._listen(self.proc, until_ready=True)
        except BaseException:
            self._stop_child()
            self._finish()
            raise

    def run(self, before_flush: Callable[[], None] | None = None) -> ProduceResult:
        """As produce(): before_flush runs once the child has handed everything (the run heals the faults).
        InfraError when the child ends without a result, says something else than the protocol, or runs
        another implementation or version than asked."""
        self.before_flush = before_flush
        self.prepare()
        proc = self.proc
        try:
            try:
                if self.ready:
                    _say(proc, "go")
                    self._listen(proc)
            except BaseException:  # interrupted, or a fault could not be healed: the child still finishes
                self._stop_child()
                raise
        finally:
            self._finish()
        if self._wrong or self.reports.result is None:
            why = self._wrong or f"it ended (exit status {proc.returncode}) without its result"
            raise InfraError(f"the producer child process of {self.env.name} {self.env.version}: {why}; "
                             f"see {self.client_log}")
        return self.result

    def _stop_child(self) -> None:
        """SIGTERM, then what it still says (its result), for at most STOP_TIMEOUT."""
        ask_to_finish(self.proc, lambda: self._listen(self.proc, serve=False))

    def _finish(self) -> None:
        """The child gone, the log closed from what it said, the result made (once)."""
        if self.result is not None:
            return
        proc = self.proc
        self._ended.set()
        _close(proc.stdin)
        procs.stop(proc, timeout=STOP_TIMEOUT)
        self._relay.join()
        _close(proc.stdout)
        self.reports.close()  # the logs are closed however it ends
        if self.txlog is not None:
            self.txlog.close()
        said = self.reports.result or {}
        counts = self.log.counts
        self.result = ProduceResult(self.log.sent, counts[Outcome.ACKED], counts[Outcome.REJECTED],
                                    counts[Outcome.UNKNOWN], said.get("duration", time.monotonic() - self._t0),
                                    bool(said.get("interrupted")) or self.stop.is_set(),
                                    str(said.get("error", "")), str(said.get("fatal", "")))

    def _handed(self, proc, faults: WorkloadFaults | None) -> None:
        """Everything is handed: the faults are healed (those still due served meanwhile), then `flush`."""
        if faults is not None:
            faults.idle = lambda: faults.serve(self.served)
        try:
            if self.before_flush is not None:
                self.before_flush()
        finally:
            if faults is not None:
                faults.idle = None
        _say(proc, "flush")

    def _restart(self, params: dict) -> None:
        """A restart: the child is told, and the fault is done when its new session starts."""
        _say(self.proc, "restart")
        if not self._listen(self.proc, until="session"):
            raise RuntimeError("the producer child ended before it restarted its producer")

    def _pause(self, params: dict) -> None:
        """A pause: the child leaves its instance as it is and goes on with a new one; done at its `p` line."""
        _say(self.proc, "pause")
        if not self._listen(self.proc, until="paused"):
            raise RuntimeError("the producer child ended before it paused its producer")

    def _resume(self, params: dict) -> None:
        """The paused instance resumes; done once the child has told its reports (`z -`)."""
        _say(self.proc, "resume")
        if not self._listen(self.proc, until="resumed"):
            raise RuntimeError("the producer child ended before its paused producer resumed")

    def _listen(self, proc, serve: bool = True, until_ready: bool = False, until: str = "") -> bool:
        """The child's lines, each applied to the log, to their end (until_ready: to its `ready`; until: to the
        first event of that kind, True if it came); serve=False: no answer to `handed` (the run is stopping).
        A producer fault asked for is served between two lines (the child says one every chunk; the Java
        child, sending fast, every 20 ms)."""
        partitions = self.task["partitions"]
        apply = self.reports.apply
        faults = self.faults if serve else None
        try:
            stream, messages = proc.stdout.buffer, self.task["messages"]  # bytes: a `B` frame is binary
            while (event := read_event(stream, partitions, messages)) is not None:
                apply(event)
                if faults is not None and faults.pending and self.ready and not until:
                    faults.serve(self.served)
                    if self._handed_early:  # said while the restart was being served
                        self._handed_early = False
                        self._handed(proc, faults)
                if isinstance(event, (Told, ToldMany, Failed, Begun, Ended)):
                    continue
                if event[0] == until:
                    return True
                if event[0] == "client":
                    self.versions = f"{event[1]} {event[2]}"
                    if event[1] != self.env.name or event[2] != self.env.version:
                        self._wrong = (f"asked for {self.env.name} {self.env.version}, the child runs "
                                       f"{event[1]} {event[2]}")
                        return
                elif event[0] == "ready":
                    self.ready = True
                    if until_ready:
                        return
                elif not serve:
                    continue
                elif event[0] == "sent" and self.on_progress is not None:
                    self.on_progress(event[1])
                elif event[0] == "handed":
                    if until:  # inside a restart's service: the nemesis waits for it, before_flush for the nemesis
                        self._handed_early = True
                    else:
                        self._handed(proc, faults)
        except ProtocolError as e:
            self._wrong = str(e)
        except (OSError, ValueError):  # the child went away mid-line
            pass
        return False

    def _relay_stop(self, proc, ended: threading.Event) -> None:
        while not ended.wait(0.1):
            if self.stop.is_set():
                proc.send_signal(signal.SIGTERM)
                return
