"""What a replica's log holds, as Kafka's own DumpLogSegments tool prints it: its record batches (base and last
offset, the partition leader epoch they were written under, producer id, epoch and base sequence, the
transactional and control flags) and, with --deep-iteration, each record's offset, sequence and payload.

    lines = dump(kafka_home, cwd, ["node-0/kc-a-1b2c3d-0/00000000000000000000.log"])   # one JVM for all files
    segments = parse(lines, first=340, last=345)       # {file: Segment(batches=[Batch(..., records=(...))])}

Kafka's tool and not segments.py's reader, because only the tool decodes every format a broker may have
written (compression, control records, transaction markers) exactly as the broker does; one JVM start (a
few seconds) reads every file asked. Its output (Kafka 3.x and 4.x, kafka/tools/DumpLogSegments.scala) is:

    Dumping node-0/kc-a-1b2c3d-0/00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 4 count: 5 baseSequence: 0 lastSequence: 4 producerId: 0 producerEpoch: 0
        partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty
        position: 0 CreateTime: 1764250000000 size: 110 magic: 2 compresscodec: none crc: 1 isvalid: true
    | offset: 0 CreateTime: 1764250000000 keySize: -1 valueSize: 1 sequence: 0 headerKeys: [] payload: 0
    Found 17 invalid bytes at the end of 00000000000000000000.log

(a batch is one line; a control record says `endTxnMarker: COMMIT coordinatorEpoch: 0` instead of a payload).
`parse` keeps only the batches and records in the offsets asked, so a segment of a million records is read
as a stream, never held.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import procs

TOOL = "kafka-dump-log.sh"
DUMP_TIMEOUT_S = 600  # one JVM reading every segment asked: seconds for a small run, minutes for gigabytes

_FIELD = re.compile(r"(\w+): (\S+)")
_TRAILING = re.compile(r"Found (\d+) invalid bytes at the end of (.+)")
_BATCH_FIELDS = {"baseOffset": "base_offset", "lastOffset": "last_offset", "baseSequence": "base_sequence",
                 "lastSequence": "last_sequence", "producerId": "producer_id", "producerEpoch": "producer_epoch",
                 "partitionLeaderEpoch": "leader_epoch", "position": "position", "size": "size"}


class DumpLogError(ValueError):
    """Output the parser cannot read (str() names the line), or a tool that failed."""


@dataclass(frozen=True)
class Record:
    offset: int
    sequence: int  # the batch's base sequence + the record's offset delta; -1 without a producer id
    payload: str | None  # the value as text; None for a null value or a control record
    marker: str | None = None  # a control record's type: COMMIT or ABORT (an end-transaction marker), ...


@dataclass(frozen=True)
class Batch:
    base_offset: int
    last_offset: int
    leader_epoch: int  # partitionLeaderEpoch: the leader's epoch when the batch was appended
    producer_id: int  # -1: no producer id (not idempotent)
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    transactional: bool
    control: bool
    position: int  # byte where it starts in its segment
    size: int
    records: tuple[Record, ...] = ()


@dataclass
class Segment:
    file: str  # as it was given to the tool
    start: int | None = None  # "Log starting offset": the segment's base offset, from its name
    batches: list[Batch] = field(default_factory=list)  # those that overlap the offsets asked
    trailing_bytes: int = 0  # bytes after the last whole batch (a torn tail, as a crash leaves one)
    last_offset: int | None = None  # the last offset of its last batch, asked for or not


def _int(fields: dict[str, str], key: str, line_no: int, line: str) -> int:
    try:
        return int(fields[key])
    except (KeyError, ValueError):
        raise DumpLogError(f"line {line_no}: no whole number {key} in {line[:200]!r}") from None


def _flag(fields: dict[str, str], key: str, line_no: int, line: str) -> bool:
    if fields.get(key) not in ("true", "false"):
        raise DumpLogError(f"line {line_no}: no true or false {key} in {line[:200]!r}")
    return fields[key] == "true"


def batch_line(line: str, line_no: int = 0) -> Batch:
    """One batch line (`baseOffset: ... isvalid: true`), without its records."""
    fields = dict(_FIELD.findall(line))
    values = {name: _int(fields, key, line_no, line) for key, name in _BATCH_FIELDS.items()}
    return Batch(**values, transactional=_flag(fields, "isTransactional", line_no, line),
                 control=_flag(fields, "isControl", line_no, line))


def record_line(line: str, line_no: int = 0) -> Record:
    """One record line (`| offset: ... payload: ...`): the payload is the rest of the line after ` payload: `
    (the last thing printed), so a payload may hold spaces."""
    head, said, payload = line.partition(" payload: ")
    head = head.split(" key: ", 1)[0]  # a key is printed before the payload, and may hold anything
    fields = dict(_FIELD.findall(head))
    marker = fields.get("endTxnMarker") or fields.get("controlType")
    return Record(offset=_int(fields, "offset", line_no, line), sequence=_int(fields, "sequence", line_no, line),
                  payload=payload if said else None, marker=marker)


def parse(lines: Iterable[str], first: int | None = None, last: int | None = None) -> dict[str, Segment]:
    """The segments of a dump (`--print-data-log --deep-iteration`), by file as the tool names it, with the
    batches that hold an offset in [first, last] (every batch when not given) and, in them, those records.
    DumpLogError naming the line when a batch or record line cannot be read, or a record comes before any
    batch. Lines of no known kind (the tool's notes) are passed over."""
    lo = first if first is not None else -(2**63)
    hi = last if last is not None else 2**63 - 1
    out: dict[str, Segment] = {}
    segment: Segment | None = None
    batch: Batch | None = None  # the current batch, when it is kept
    records: list[Record] = []
    in_batch = False

    def close() -> None:
        nonlocal batch, records
        if batch is not None:
            segment.batches.append(Batch(**{**batch.__dict__, "records": tuple(records)}))
        batch, records = None, []

    for n, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if line.startswith("Dumping "):
            close()
            name = line.removeprefix("Dumping ")
            segment = out[name] = Segment(name)
            in_batch = False
        elif segment is None:
            continue  # before the first file (a JVM's note)
        elif line.startswith("Log starting offset: "):
            segment.start = _int({"s": line.rsplit(" ", 1)[-1]}, "s", n, line)
        elif line.startswith("baseOffset: "):
            close()
            found = batch_line(line, n)
            segment.last_offset = found.last_offset
            in_batch = True
            if found.last_offset >= lo and found.base_offset <= hi:
                batch = found
        elif line.startswith("| ") or line.startswith("|\t"):
            if not in_batch:
                raise DumpLogError(f"line {n}: a record before any batch: {line[:200]!r}")
            if batch is not None:
                record = record_line(line, n)
                if lo <= record.offset <= hi:
                    records.append(record)
        elif m := _TRAILING.match(line):
            segment.trailing_bytes = int(m[1])
    close()
    return out


@contextmanager
def dump(kafka_home: str | Path, cwd: Path, files: list[str],
         timeout: float = DUMP_TIMEOUT_S) -> Iterator[Iterable[str]]:
    """The lines kafka-dump-log.sh prints for `files` (paths relative to `cwd`, so that no comma in a folder's name
    splits the tool's --files list), read as it prints them. The tool runs tied to the harness (procs.LAUNCHER:
    it dies with it) in a session of its own (killed whole after `timeout` seconds). DumpLogError when it cannot
    start, fails or takes too long; its last line of error output then says why."""
    tool = Path(kafka_home) / "bin" / TOOL
    comma = [f for f in files if "," in f]
    if comma:
        raise DumpLogError(f"a segment path holds a comma, which {TOOL} would split: {comma[0]}")
    cmd = [sys.executable, "-S", "-I", procs.LAUNCHER, str(os.getpid()), "--",
           str(tool), "--files", ",".join(files), "--print-data-log", "--deep-iteration"]
    env = {**os.environ, "KAFKA_HEAP_OPTS": os.environ.get("KAFKA_HEAP_OPTS", "-Xmx512m")}
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True,
                                errors="replace", env=env, start_new_session=True)
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            _kill_group(proc)

        timer = threading.Timer(timeout, kill)
        timer.daemon = True
        timer.start()
        try:
            yield proc.stdout
            for _ in proc.stdout:  # the rest, when the caller stopped early
                pass
            proc.wait()  # its end: the timer still kills it when it hangs
        finally:
            timer.cancel()
            if proc.poll() is None:  # the caller failed: the tool goes with it
                _kill_group(proc)
                proc.wait()
            proc.stdout.close()
        if fired.is_set():
            raise DumpLogError(f"{tool} took longer than {timeout:g} s (killed)")
        if proc.returncode != 0:
            err.seek(0)
            said = [x for x in err.read().splitlines() if x.strip()]
            raise DumpLogError(f"{tool} failed (exit status {proc.returncode}): "
                               f"{said[-1][:300] if said else 'no error output'}")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
