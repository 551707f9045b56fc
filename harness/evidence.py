"""`kafka-chaos evidence`: what each replica's log holds at some offsets of one partition of a stored local-Kafka
run, beside what the delivery log says the client was told about the same values.

    view = evidence(RunFolder(run_dir), variant=None, partition=0, offsets="340-345", kafka_home=...)

The data flow: the run's kept broker data (kafka-data/node-N/<topic>-<partition>/, kept when the verdict was fail
or `run --keep-data` asked: run.py) -> the segments that may hold the offsets -> kafka-dump-log.sh, one JVM for
every replica (cluster/dumplog.py) -> each replica's batches and records at those offsets, with its
leader-epoch checkpoint (cluster/segments.py) -> joined (`join`, pure) with the variant's delivery log
(acks.parquet): for each record, what the client was told about its value (acked at which offset, rejected,
unknown, never sent); for each offset, the values the client was told it holds. terminal.print_evidence draws
the view; --json prints it as it is.

Bad input is UsageError (exit 2) naming the option: a folder that is not a run, a run that kept no broker
data, an unknown variant or partition, a malformed range, no KAFKA_HOME.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .cluster.dumplog import TOOL, Batch, DumpLogError, dump, parse
from .cluster.segments import LEADER_EPOCHS, PARTITION_DIR, leader_epochs
from .exits import InfraError, UsageError, one_line
from .formats import Outcome
from .runfolder import RunFolder, RunFolderError, resolve_inside

MAX_OFFSETS = 10_000  # offsets one call shows: a table per offset and replica, not a dump of the log
NOT_KEPT = "this run did not keep its brokers' logs; rerun with --keep-data"
_VALUE = re.compile(r"0|[1-9][0-9]{0,18}")  # a value the workload writes: canonical ASCII decimal


@dataclass
class Replica:
    """One replica's log at the offsets asked."""

    broker: int
    folder: Path
    segments: list[str] = field(default_factory=list)  # the segment files read (names)
    batches: list[Batch] = field(default_factory=list)  # those that hold an offset asked, in log order
    leader_epochs: list[tuple[int, int]] | None = None  # (epoch, start offset) from its checkpoint; None: none
    log_end: int | None = None  # the log's end (last offset + 1), when its last segment was read and holds a batch
    last_segment: str = ""  # the name of its last segment (the active one)
    trailing_bytes: int = 0  # bytes after the last whole batch of a segment (a torn tail)


def parse_offsets(text: str) -> tuple[int, int]:
    """`--offsets`: "A-B" (A <= B) or "A", whole numbers from 0 -> (A, B); UsageError naming the option."""
    m = re.fullmatch(r"\s*(\d{1,19})\s*(?:-\s*(\d{1,19})\s*)?", text)
    if m is None:
        raise UsageError(f"--offsets {text!r}: give a range A-B of offsets (whole numbers from 0, A <= B), or one "
                         "offset")
    first, last = int(m[1]), int(m[2] if m[2] is not None else m[1])
    if first > last:
        raise UsageError(f"--offsets {text!r}: the range starts after it ends ({first} > {last})")
    if last >= 2**63:
        raise UsageError(f"--offsets {text!r}: an offset is at most {2**63 - 1}")
    if last - first + 1 > MAX_OFFSETS:
        raise UsageError(f"--offsets {text!r}: {last - first + 1:,} offsets; at most {MAX_OFFSETS:,} at a time")
    return first, last


def kafka_tool(kafka_home: str | None) -> str:
    """The Kafka distribution whose kafka-dump-log.sh reads the segments; UsageError naming KAFKA_HOME."""
    if not kafka_home:
        raise UsageError(f"KAFKA_HOME is not set: evidence reads the kept segments with a Kafka distribution's "
                         f"bin/{TOOL}; set KAFKA_HOME to one (Kafka 3.x or 4.x)")
    if not (Path(kafka_home) / "bin" / TOOL).is_file():
        raise UsageError(f"KAFKA_HOME={kafka_home}: no bin/{TOOL} there (not a Kafka distribution)")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise UsageError(f"KAFKA_HOME={kafka_home}: its {TOOL} needs Java: put java on PATH or set JAVA_HOME")
    return kafka_home


def _partitions(brokers: dict[int, Path], topic: str) -> dict[int, dict[int, Path]]:
    """{partition: {broker: its folder}} of `topic` in the kept log folders."""
    out: dict[int, dict[int, Path]] = {}
    for broker, node in brokers.items():
        for p in sorted(node.iterdir()):
            m = PARTITION_DIR.fullmatch(p.name)
            if m and m["topic"] == topic and p.is_dir():
                out.setdefault(int(m["partition"]), {})[broker] = p
    return out


def _ranges(numbers) -> str:
    return ", ".join(str(n) for n in sorted(numbers))


def choose(folder: RunFolder, variant: str | None,
           partition: int | None) -> tuple[str, str, int, dict[int, Path], Path]:
    """(variant, its topic, partition, {broker: the partition's folder}, the kept data folder) for the options
    given; UsageError naming the option when one names nothing there, or when the run keeps more than one and
    none is named."""
    if not folder.path.is_dir():
        raise UsageError(f"{folder.path}: no such run folder")
    summary = folder.read_summary()
    if summary is None:
        raise UsageError(f"{folder.path}: not a run folder (no summary.json)")
    topics = {name: v.get("topic") for name, v in (summary.get("variants") or {}).items() if isinstance(v, dict)}
    if variant is not None and variant not in topics:
        raise UsageError(f"--variant {variant}: no such variant in {folder.path.name}; it has: "
                         f"{', '.join(topics) or 'none'}")
    data = folder.kept_data(summary)
    brokers = folder.kept_brokers(data) if data is not None else {}
    if not brokers:
        local = str(summary.get("cluster", "")).startswith("local · kafka")
        raise UsageError(NOT_KEPT if local else f"{NOT_KEPT} (only a local Apache Kafka run, backend local with "
                                                 f"broker kafka, has its brokers' log folders on this machine)")
    held = {name: _partitions(brokers, t) for name, t in topics.items() if isinstance(t, str)}
    if variant is None:
        if len(topics) == 1:
            variant = next(iter(topics))
        else:
            kept = [name for name, parts in held.items() if parts]
            if len(kept) != 1:
                raise UsageError(f"--variant: {folder.path.name} has variants {', '.join(topics)}; name one")
            variant = kept[0]
    parts = held.get(variant) or {}
    if not parts:
        raise UsageError(f"--variant {variant}: no broker kept a log of its topic {topics.get(variant)!r} "
                         f"(kept: {_ranges(brokers)} as node-N/)")
    if partition is None:
        if len(parts) != 1:
            raise UsageError(f"--partition: topic {topics[variant]} has partitions {_ranges(parts)}; name one")
        partition = next(iter(parts))
    if partition not in parts:
        raise UsageError(f"--partition {partition}: no replica holds partition {partition} of topic "
                         f"{topics[variant]}; kept: {_ranges(parts)}")
    return variant, topics[variant], partition, parts[partition], data


def segment_files(partition_dir: Path, first: int, last: int) -> list[Path]:
    """The partition's segment files (<base offset>.log) that may hold an offset in [first, last]: those whose
    base offset is at most `last` and whose successor's is above `first` (the last one always may)."""
    segments = sorted((int(p.stem), p) for p in partition_dir.glob("*.log") if p.stem.isdigit())
    return [p for i, (base, p) in enumerate(segments)
            if base <= last and (i + 1 == len(segments) or segments[i + 1][0] > first)]


def read_replicas(folder: RunFolder, data: Path, kafka_home: str, parts: dict[int, Path], first: int,
                  last: int) -> dict[int, Replica]:
    """Each replica's batches at [first, last], read by one kafka-dump-log.sh over every replica's segments that
    may hold them (paths relative to the kept `data` folder). InfraError when the tool fails or prints what cannot
    be read."""
    root = data.resolve()
    replicas, files, owner = {}, [], {}
    for broker, pdir in sorted(parts.items()):
        r = replicas[broker] = Replica(broker, pdir)
        checkpoint = pdir / LEADER_EPOCHS
        if checkpoint.is_file():
            try:
                r.leader_epochs = leader_epochs(_bounded(checkpoint, 1 << 20).decode())
            except (ValueError, UnicodeDecodeError):
                r.leader_epochs = None  # a torn checkpoint (a crash while writing it): the log still says
        every = sorted(p.name for p in pdir.glob("*.log") if p.stem.isdigit())
        r.last_segment = every[-1] if every else ""
        for seg in segment_files(pdir, first, last):
            rel = str(resolve_inside(root, seg).resolve().relative_to(root))
            r.segments.append(seg.name)
            files.append(rel)
            owner[rel] = broker
    if not files:
        return replicas
    try:
        with dump(kafka_home, root, files) as lines:
            segments = parse(lines, first, last)
    except DumpLogError as e:
        raise InfraError(f"reading the segments: {e}") from None
    for name, seg in segments.items():
        r = replicas[owner[name]] if name in owner else None
        if r is None:
            raise InfraError(f"{TOOL} named a file it was not asked for: {name[:200]}")
        r.batches += seg.batches
        r.trailing_bytes += seg.trailing_bytes
        if seg.last_offset is not None and Path(name).name == r.last_segment:
            r.log_end = seg.last_offset + 1
    for r in replicas.values():
        r.batches.sort(key=lambda b: b.base_offset)
    return replicas


def _bounded(path: Path, limit: int) -> bytes:
    """A small file's bytes, refused beyond `limit` (a checkpoint is a line an epoch)."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit:,} bytes")
    return data


def delivery_rows(folder: RunFolder, variant: str, partition: int, values: set[int], first: int,
                  last: int) -> list[dict]:
    """The delivery log's rows of `partition` about `values`, or told an offset in [first, last]."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = folder.read_dataset(folder.acks_path(variant), "acks")
    table = table.filter(pc.equal(table["partition"], partition))
    wanted = pc.is_in(table["value"], value_set=pa.array(sorted(values), pa.int64()))
    if "offset" in table.schema.names:
        told = pc.and_(pc.greater_equal(table["offset"], first), pc.less_equal(table["offset"], last))
        wanted = pc.or_(wanted, pc.fill_null(told, False))
    columns = [c for c in ("value", "outcome", "offset", "error", "session", "txn") if c in table.schema.names]
    return table.filter(wanted).select(columns).to_pylist()


def _value(payload: str | None) -> int | None:
    return int(payload) if payload is not None and _VALUE.fullmatch(payload) else None


def join(replicas: dict[int, Replica], acks: list[dict], first: int, last: int) -> list[dict]:
    """Per offset in [first, last]: the values the client was told are there (`acked`), and each replica's record
    there (None: its log holds none) with its batch's leader epoch, producer id and epoch, sequence and flags,
    and `told`: every delivery-log row of its value (outcome, offset, error, session, txn), in log order."""
    by_value: dict[int, list[dict]] = {}
    by_offset: dict[int, list[int]] = {}
    for row in acks:
        by_value.setdefault(row["value"], []).append(row)
        if row.get("outcome") == Outcome.ACKED and row.get("offset") is not None and first <= row["offset"] <= last:
            by_offset.setdefault(row["offset"], []).append(row["value"])
    held: dict[int, dict[int, dict]] = {}  # broker -> offset -> record
    for broker, r in replicas.items():
        records = held[broker] = {}
        for b in r.batches:
            for rec in b.records:
                value = None if b.control else _value(rec.payload)
                records[rec.offset] = {
                    "value": value, "payload": rec.payload if value is None else None, "marker": rec.marker,
                    "leader_epoch": b.leader_epoch, "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
                    "sequence": rec.sequence, "transactional": b.transactional, "control": b.control,
                    "batch": [b.base_offset, b.last_offset],
                    "told": [{k: row.get(k) for k in ("outcome", "offset", "error", "session", "txn")}
                             for row in by_value.get(value, [])] if value is not None else []}
    out = []
    for offset in range(first, last + 1):
        out.append({"offset": offset, "acked": sorted(by_offset.get(offset, [])),
                    "replicas": [{"broker": b, "record": held[b].get(offset)} for b in sorted(replicas)]})
    return out


# The anomaly tables whose rows name an offset the client was told (or the log holds), most telling first.
AFFECTED = ("lost", "truncated_acks", "inconsistent_offsets", "base_offset_minus_one", "rejected_visible",
            "duplicates", "unexpected")


def first_affected(folder: RunFolder, variant: str) -> tuple[str, int, int] | None:
    """(table, partition, offset) of the lowest offset in the first of AFFECTED that has a row, or None."""
    for table in AFFECTED:
        found = folder.read_table(variant, table)
        if found is None or "offset" not in found.schema.names or "partition" not in found.schema.names:
            continue
        rows = [r for r in found.select(["partition", "offset"]).to_pylist() if r["offset"] is not None]
        if rows:
            first = min(rows, key=lambda r: (r["offset"], r["partition"]))
            return table, first["partition"], first["offset"]
    return None


def commands(folder: RunFolder, summary: dict) -> list[str]:
    """For each failed variant of a run that kept its brokers' logs: the evidence command at its first affected
    offset (two on each side), with what is there, e.g. "lost: kafka-chaos evidence RUN --variant v ...".
    None when the run kept nothing. A hint, for the terminal and the report: a table that cannot be read here
    is left out (the report's own business), the verdict stands."""
    if not isinstance(summary.get("broker_data"), dict):
        return []
    try:
        return _commands(folder, summary)
    except Exception:
        return []


def _commands(folder: RunFolder, summary: dict) -> list[str]:
    out = []
    for name, v in (summary.get("variants") or {}).items():
        if not isinstance(v, dict) or v.get("verdict") != "fail":
            continue
        found = first_affected(folder, name)
        if found is not None:
            table, p, o = found
            out.append(f"{name}: first {table} at partition {p} offset {o}: kafka-chaos evidence {folder.path} "
                       f"--variant {name} --partition {p} --offsets {max(0, o - 2)}-{o + 2}")
    return out


# A Kafka broker's log line: "[2026-11-27 15:58:21,124] WARN ..." (log4j, the machine's local time).
_KAFKA_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (WARN|ERROR|FATAL) ")
AROUND = (1.0, 2.0)  # seconds of the brokers' logs shown before a fault took effect and after it healed
LINES = 40  # lines shown at most, a variant


def fault_lines(folder: RunFolder, summary: dict) -> dict[str, dict]:
    """For each failed variant with an affected offset, the fault nearest in time to the send of its first
    affected value, and the WARN and ERROR lines the run's brokers logged from AROUND[0] s before that fault
    took effect to AROUND[1] s after it healed (at most LINES): what the report shows beside the evidence
    command. Only a run folder's own brokers' logs are read (logs/broker-N.log, a local Kafka's); a hint like
    commands(): a variant whose tables, faults or logs cannot be read is left out, the verdict stands."""
    logs = [log for log in (sorted(folder.logs.glob("broker-*.log")) if folder.logs.is_dir() else [])
            if _inside(folder, log)]
    if not logs:
        return {}
    try:
        faults = folder.read_faults()
    except RunFolderError:
        return {}
    out = {}
    for name, v in (summary.get("variants") or {}).items():
        if not isinstance(v, dict) or v.get("verdict") != "fail":
            continue
        try:
            found = first_affected(folder, name)
            mine = [f for f in faults if f.get("variant") == name and f.get("applied_at")]
            if found is None or not mine:
                continue
            sent = _sent_at(folder, name, *found)
            fault = min(mine, key=lambda f: abs(_stamp(f["applied_at"]) - sent)) if sent is not None else mine[0]
            start = _stamp(fault["applied_at"]) - AROUND[0]
            end = _stamp(fault.get("healed_at") or fault["applied_at"]) + AROUND[1]
            table, p, o = found
            out[name] = {"first": f"{table} at partition {p} offset {o}",
                         "fault": f"{fault.get('kind')} #{fault.get('id')}, took effect {fault['applied_at']}"
                                  + (f", healed {fault['healed_at']}" if fault.get("healed_at") else ""),
                         "nearest": sent is not None, "lines": _lines_between(logs, start, end),
                         "window": f"from {AROUND[0]:g} s before it took effect to {AROUND[1]:g} s after it healed"}
        except Exception:  # noqa: BLE001 (a hint: never the reason a report fails to render)
            continue
    return out


def _inside(folder: RunFolder, path: Path) -> bool:
    """A log the folder holds itself: a link leading out of it (a folder from elsewhere) is never opened."""
    try:
        folder.inside(path)
        return True
    except RunFolderError:
        return False


def _stamp(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def _sent_at(folder: RunFolder, variant: str, table: str, partition: int, offset: int) -> float | None:
    """When the value at the first affected offset was handed to the client (epoch seconds), None when the table
    names no value or the delivery log has none."""
    import pyarrow.compute as pc

    rows = folder.read_table(variant, table)
    if rows is None or "value" not in rows.schema.names:
        return None
    at = rows.filter(pc.and_(pc.equal(rows["partition"], partition), pc.equal(rows["offset"], offset)))
    values = [x for x in at["value"].to_pylist() if x is not None]
    if not values:
        return None
    acks = folder.read_dataset(folder.acks_path(variant), "acks")
    sent = acks.filter(pc.and_(pc.equal(acks["partition"], partition), pc.equal(acks["value"], values[0])))
    stamps = [t for t in sent["sent_at"].to_pylist() if t is not None]
    return min(stamps).timestamp() if stamps else None


def _lines_between(logs: list[Path], start: float, end: float) -> list[str]:
    """The WARN/ERROR/FATAL lines of the brokers' logs stamped within [start, end] (epoch seconds), in time
    order, each prefixed with its file's name; at most LINES."""
    from datetime import datetime

    found = []
    for log in logs:
        with open(log, errors="replace") as f:
            for line in f:
                m = _KAFKA_LINE.match(line)
                if m is None:
                    continue
                t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()  # local time, as log4j
                if start <= t <= end:
                    found.append((t, f"{log.stem}: {line.rstrip()[:400]}"))
    return [text for _, text in sorted(found)[:LINES]]


def evidence(folder: RunFolder, variant: str | None, partition: int | None, offsets: str,
             kafka_home: str | None) -> dict:
    """The view `kafka-chaos evidence` prints (module docstring): UsageError on bad input, InfraError when the
    tool fails, RunFolderError on a damaged folder."""
    first, last = parse_offsets(offsets)
    variant, topic, partition, parts, data = choose(folder, variant, partition)
    home = kafka_tool(kafka_home)
    try:
        replicas = read_replicas(folder, data, home, parts, first, last)
    except OSError as e:
        raise RunFolderError(f"{data}: unreadable ({one_line(e)})", damaged=True) from None
    values = {v for r in replicas.values() for b in r.batches if not b.control for rec in b.records
              if (v := _value(rec.payload)) is not None}
    acks = delivery_rows(folder, variant, partition, values, first, last)
    return {
        "run": folder.path.name, "variant": variant, "topic": topic, "partition": partition, "offsets": [first, last],
        "replicas": [{"broker": r.broker, "folder": str(r.folder), "segments": r.segments,
                      "leader_epochs": [list(e) for e in r.leader_epochs] if r.leader_epochs is not None else None,
                      "log_end": r.log_end, "trailing_bytes": r.trailing_bytes} for r in replicas.values()],
        "at": join(replicas, acks, first, last),
    }
