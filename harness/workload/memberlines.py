"""The lines a consumer group member of another language (the Java client's, workload/java/ChaosMember.java)
writes to its stdout instead of writing the sink itself (Java has no SQLite driver here), and the relay thread
that applies them to the sink (workload/sink.py) under the member's name. One line per sink action, ASCII,
space-separated; the member writes each line whole (one write(2), under PIPE_BUF) and before the offset commit
that follows it, as the Python member (workload/member.py) writes its row before committing:

    e AT EVENT PARTITIONS DETAIL    an event (start, assign, revoke, lost, commit-failed, abort, stop, error): AT the
                                    member's wall clock in epoch ms, PARTITIONS `-` (none) or a JSON list with
                                    no space ([0,2], [] for none), DETAIL the rest of the line (may be empty)
    h FIRST_N COUNT                 the batch in hand: COUNT records, the first its n FIRST_N (Sink.hold)
    p COMMITTED P OFFSET VALUE SESSION N AT
                                    a record processed (Sink.processed): COMMITTED before | after | auto, VALUE
                                    `-` when the record is not a workload value, AT epoch ms

A run of `p` lines read together is written in one transaction (the sink's content is the same). The relay
reads what the pipe holds whenever it is readable and applies every whole line; settle() does the same at once,
so once the member is frozen (SIGSTOP) or dead the sink holds everything it said. When the member dies the relay
still drains the pipe, then ends (end of file). A line the protocol does not have stops the relay with `error`
set: the supervisor fails the run, naming it.
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
EVENTS = ("start", "assign", "revoke", "lost", "commit-failed", "abort", "stop", "error")
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


def parse(line: str) -> Event | Hold | Processed:
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
            if committed not in COMMITTED:
                raise ProtocolError(f"no such commit order: {committed!r}")
            row = (int(p), int(offset), None if value == "-" else int(value), int(session), int(n), _number(at))
            if min(row[0], row[1], row[3], row[4]) < 0:
                raise ProtocolError(f"a negative position: {line!r}")
            return Processed(committed, row)
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


def apply(sink: Sink, said: list) -> None:
    """What lines said, in order, into the sink (a run of processed rows of one commit order: one transaction)."""
    run: list[tuple] = []
    committed = ""
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
        else:
            sink.event(x.event, x.partitions, x.detail, at=x.at)
    if run:
        sink.processed(run, committed)


class Relay:
    """A member's stdout (a binary pipe) into the sink, on a thread of its own (start(); join() waits for the end
    of the pipe). The sink connection is the relay's own (Sink(path, member)), closed when it ends."""

    def __init__(self, pipe, sink: Sink):
        self.pipe, self.sink = pipe, sink
        self.fd = pipe.fileno()
        os.set_blocking(self.fd, False)
        self.error = ""
        self._partial = b""
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
            try:
                said.append(parse(line.decode("ascii", errors="replace")))
            except ProtocolError as e:  # what came before it is kept
                self.error = str(e)
                break
        try:
            apply(self.sink, said)
        except sqlite3.Error as e:  # the sink refused a write (its disk full): nothing more can be kept
            self.error = self.error or f"the sink refused a write ({e})"
        return more and not self.error

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the end of the pipe (the member gone: what it said is in the sink); False if not yet."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
