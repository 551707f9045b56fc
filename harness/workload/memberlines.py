"""The lines a consumer group member of another language (the Java client's, workload/java/ChaosMember.java)
writes to its stdout instead of writing the sink itself (Java has no SQLite driver here), and the relay thread
that applies them to the sink (workload/sink.py) under the member's name. One line per sink action, ASCII,
space-separated; the member writes each line whole (one write(2), under PIPE_BUF) and before the offset commit
that follows it, as the Python member (workload/member.py) writes its row before committing:

    e AT EVENT PARTITIONS DETAIL    an event (start, assign, revoke, lost, commit-failed, abort, hung, stop,
                                    error): AT the member's wall clock in epoch ms, PARTITIONS `-` (none) or a
                                    JSON list with no space ([0,2], [] for none), DETAIL the rest of the line (may
                                    be empty)
    h FIRST_N COUNT                 the batch in hand: COUNT records, the first its n FIRST_N (Sink.hold)
    p COMMITTED P OFFSET VALUE SESSION N AT
                                    a record processed (Sink.processed): COMMITTED before | after | auto, VALUE
                                    `-` when the record is not a workload value, AT epoch ms

A run of `p` lines read together is written in one transaction (the sink's content is the same). Two lines are
requests of an idempotent-sink member, which reads the sink back: the relay answers each with one line on the
member's stdin (a pipe), and the member waits for it before it says anything more:

    q P,P,...                       the next offsets the sink stored for these partitions (Sink.stored_offsets),
                                    asked on an assignment; answer `o P=OFFSET ...`, none for a partition that
                                    has no stored offset (`o` alone for none)
    b COUNT                         an atomic batch: the COUNT lines that follow are `p atomic P OFFSET VALUE
                                    SESSION N AT` (its records, in order), applied at once with Sink.apply (the
                                    output, the rows and the next offsets in one transaction); answer `f P=OFFSET
                                    ...`, the partitions it fenced (the stored next offset already past the
                                    batch's first record: left out) and their stored offsets, `f` alone for none.
                                    The relay writes the `fenced` event (as member.py does after Sink.apply).

The member says an atomic batch in one write (over PIPE_BUF it may come in pieces: the relay gathers the lines); a
batch the member did not finish saying (it died) is never applied, as a transaction it never committed. The
relay reads what the pipe holds whenever it is readable and applies every whole line; settle() does the same at
once, so once the member is frozen (SIGSTOP) or dead the sink holds everything it said. An answer is written whole
into the member's stdin (the member reads each before its next request, so the pipe holds at most one: a frozen
member's pipe takes it without blocking); a dead member's (a broken pipe) is dropped. When the member dies the
relay still drains the pipe, then ends (end of file) and closes the member's stdin. A line the protocol does not
have stops the relay with `error` set: the supervisor fails the run, naming it.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import threading
from dataclasses import dataclass

from .sink import Sink

COMMITTED = ("before", "after", "auto")
ATOMIC = "atomic"  # a `p` line of an atomic batch (b COUNT)
EVENTS = ("start", "assign", "revoke", "lost", "commit-failed", "abort", "hung", "stop", "error")
READ = 1 << 16


class ProtocolError(ValueError):
    """A line the protocol does not have."""


@dataclass(frozen=True)
class Event:  # e AT EVENT PARTITIONS DETAIL
    at: float
    event: str
    partitions: list[int] | None
    detail: str


@dataclass(frozen=True)
class Hold:  # h FIRST_N COUNT
    first_n: int
    count: int


@dataclass(frozen=True)
class Processed:  # p COMMITTED P OFFSET VALUE SESSION N AT
    committed: str
    row: tuple  # (partition, offset, value, session, n, processed_at): Sink.processed's


@dataclass(frozen=True)
class Query:  # q P,P,...
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class Begin:  # b COUNT: the header of an atomic batch
    count: int


@dataclass(frozen=True)
class Batch:  # a `b COUNT` and its COUNT `p atomic` lines, gathered (Framer)
    rows: tuple  # Sink.apply's rows


def parse(line: str) -> Event | Hold | Processed | Query | Begin:
    """One member line (without its newline) -> what it says; ProtocolError for anything else."""
    word, _, rest = line.partition(" ")
    try:
        if word == "e":
            at, event, partitions, *detail = rest.split(" ", 3)
            if event not in EVENTS:
                raise ProtocolError(f"no such event: {event!r}")
            parts = None if partitions == "-" else json.loads(partitions)
            if parts is not None and not (isinstance(parts, list) and all(type(p) is int and p >= 0 for p in parts)):
                raise ProtocolError(f"not a list of partitions: {partitions!r}")
            return Event(_number(at), event, parts, detail[0] if detail else "")
        if word == "h":
            first_n, count = rest.split(" ")
            if int(first_n) < 0 or int(count) < 1:
                raise ProtocolError(f"no such batch: {rest!r}")
            return Hold(int(first_n), int(count))
        if word == "p":
            committed, p, offset, value, session, n, at = rest.split(" ")
            if committed not in (*COMMITTED, ATOMIC):
                raise ProtocolError(f"no such commit order: {committed!r}")
            row = (int(p), int(offset), None if value == "-" else int(value), int(session), int(n), _number(at))
            if min(row[0], row[1], row[3], row[4]) < 0:
                raise ProtocolError(f"a negative position: {line!r}")
            return Processed(committed, row)
        if word == "q":
            parts = tuple(int(p) for p in rest.split(","))
            if min(parts) < 0:
                raise ProtocolError(f"a negative partition: {line!r}")
            return Query(parts)
        if word == "b":
            if int(rest) < 1:
                raise ProtocolError(f"no such batch: {line!r}")
            return Begin(int(rest))
    except ProtocolError:
        raise
    except ValueError:  # a missing or extra field, a word where a number goes, bad JSON
        pass
    raise ProtocolError(f"not a member line: {line[:200]!r}")


def _number(text: str) -> float:
    x = float(text)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(text)
    return x


class Framer:
    """Gathers an atomic batch, which may come over several reads: feed() each parsed line in order; it gives back
    what to apply (a whole Batch once its last record came), or None while a batch is being said."""

    def __init__(self):
        self.count = 0
        self.rows: list[tuple] = []

    def feed(self, x, line: str = ""):
        atomic = isinstance(x, Processed) and x.committed == ATOMIC
        if self.count:
            if not atomic:
                raise ProtocolError(f"a batch of {self.count} records broken off after {len(self.rows)} by "
                                    f"{line[:200]!r}")
            self.rows.append(x.row)
            if len(self.rows) < self.count:
                return None
            batch, self.count, self.rows = Batch(tuple(self.rows)), 0, []
            return batch
        if atomic:
            raise ProtocolError(f"an atomic record outside a batch: {line[:200]!r}")
        if isinstance(x, Begin):
            self.count = x.count
            return None
        return x


def frame(lines: list[str]) -> list:
    """Member lines -> what they say, each atomic batch gathered; ProtocolError at the first bad one."""
    framer = Framer()
    gathered = [framer.feed(parse(line), line) for line in lines]
    return [x for x in gathered if x is not None]


def apply(sink: Sink, said: list) -> list[str]:
    """What lines said, in order, into the sink (a run of processed rows of one commit order: one transaction; an
    atomic batch with Sink.apply); the answers to the requests among them, in order (lines without newline)."""
    run: list[tuple] = []
    committed = ""
    answers = []
    for x in said:
        if isinstance(x, Processed) and (not run or x.committed == committed):
            run.append(x.row)
            committed = x.committed
            continue
        if run:
            sink.processed(run, committed)
            run = []
        if isinstance(x, Processed):
            run, committed = [x.row], x.committed
        elif isinstance(x, Hold):
            sink.hold(x.first_n, x.count)
        elif isinstance(x, Query):
            answers.append(_pairs("o", sink.stored_offsets(list(x.partitions))))
        elif isinstance(x, Batch):
            fenced = sink.apply(list(x.rows))
            if fenced:  # another member processed past this batch (member.py's event)
                sink.event("fenced", list(fenced), json.dumps(fenced))
            answers.append(_pairs("f", fenced))
        else:
            sink.event(x.event, x.partitions, x.detail, at=x.at)
    if run:
        sink.processed(run, committed)
    return answers


def _pairs(word: str, offsets: dict[int, int]) -> str:
    return " ".join([word, *(f"{p}={o}" for p, o in sorted(offsets.items()))])


class Relay:
    """A member's stdout (a binary pipe) into the sink, on a thread of its own (start(); join() waits for the end
    of the pipe). The sink connection is the relay's own (Sink(path, member)), closed when it ends. `answers`: the
    member's stdin (a binary pipe) for the answers to its requests, closed when the relay ends; None: a member
    that asks nothing (a request is then a protocol error)."""

    def __init__(self, pipe, sink: Sink, answers=None):
        self.pipe, self.sink, self.answers = pipe, sink, answers
        self.fd = pipe.fileno()
        os.set_blocking(self.fd, False)
        if answers is not None:  # never wait on the member: it reads each answer before its next request
            os.set_blocking(answers.fileno(), False)
        self.error = ""
        self.unanswered = 0  # answers dropped: the member was gone (a broken pipe)
        self._partial = b""
        self._framer = Framer()
        self._ended = False
        self._lock = threading.Lock()  # one reader at a time: the thread, or settle()
        self._thread = threading.Thread(target=self._run, name=f"relay-{sink.member}", daemon=True)

    def start(self) -> "Relay":
        self._thread.start()
        return self

    def _run(self) -> None:
        readable = select.poll()  # not select(): a long series may hold descriptors past FD_SETSIZE
        readable.register(self.fd, select.POLLIN)
        try:
            while True:
                readable.poll(500)
                with self._lock:
                    if not self._pump():
                        break
        finally:
            with self._lock:
                self._ended = True
                self.sink.close()
                self.pipe.close()
                if self.answers is not None:
                    self.answers.close()  # the member's next read: end of file

    def settle(self) -> None:
        """Apply at once what the pipe holds now (the member frozen or dead: everything it said)."""
        with self._lock:
            if not self._ended:
                self._pump()

    def _pump(self) -> bool:
        """Read what the pipe holds and apply its whole lines; False at its end or after a bad line."""
        chunks, more = [], True
        while True:
            try:
                data = os.read(self.fd, READ)
            except BlockingIOError:
                break
            if not data:
                more = False
                break
            chunks.append(data)
        if not chunks:
            return more
        lines = (self._partial + b"".join(chunks)).split(b"\n")
        self._partial = lines.pop()
        said = []
        for line in lines:
            text = line.decode("ascii", errors="replace")
            try:
                x = self._framer.feed(parse(text), text)
                if isinstance(x, (Query, Batch)) and self.answers is None:
                    raise ProtocolError(f"a request of a member that is given no answers: {text[:200]!r}")
            except ProtocolError as e:  # what came before it is kept
                self.error = str(e)
                break
            if x is not None:
                said.append(x)
        try:
            self._answer(apply(self.sink, said))
        except sqlite3.Error as e:  # the sink refused a write (its disk full): nothing more can be kept
            self.error = self.error or f"the sink refused a write ({e})"
        return more and not self.error

    def _answer(self, answers: list[str]) -> None:
        for answer in answers:
            data = (answer + "\n").encode("ascii")
            try:
                written = os.write(self.answers.fileno(), data)
            except BrokenPipeError:  # the member died: what it asked no longer matters
                self.unanswered += 1
                continue
            except BlockingIOError:
                written = 0
            if written < len(data):  # its stdin full: it asks without reading its answers
                self.error = self.error or f"the member does not read its answers (at {answer[:200]!r})"
                return

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the end of the pipe (the member gone: what it said is in the sink); False if not yet."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
