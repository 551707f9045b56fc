"""Kafka's log segments on disk, and what a broker would lose with its page cache.

Kafka acknowledges a write once it is in the page cache of every in-sync replica, and flushes (fsyncs) only
when a segment rolls or `log.flush.*` asks it to; the flushed position of each partition is its recovery
point, written to `recovery-point-offset-checkpoint` in the log folder. A SIGKILL keeps the page cache, so a
plain kill loses nothing; losing power does. `cut_unflushed` makes a stopped broker's log look like the
power went: the active segment of each partition is cut back to a record-batch boundary at its recovery
point (or by the last K batches). Kafka's own recovery then rebuilds the indexes, the producer state and the
leader-epoch cache from what is left, as it would after a crash.

Hand-written because no Python library reads Kafka's segment format, and Kafka's DumpLogSegments is a JVM
start (seconds) per file while the broker is down; only the batch header is needed (magic 2, KIP-98):
  baseOffset int64 · batchLength int32 (bytes after this field) · partitionLeaderEpoch int32 · magic int8 ·
  crc uint32 · attributes int16 · lastOffsetDelta int32 · ... · recordCount int32 at byte 57.
Only the variant's topic is cut: internal topics (__consumer_offsets, __transaction_state) are left alone,
the experiment being about the workload's partitions, and so are earlier variants' topics.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

HEADER = 61  # bytes of a magic-2 batch header, up to and including recordCount
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes batchLength does not count
CHECKPOINT = "recovery-point-offset-checkpoint"
LEADER_EPOCHS = "leader-epoch-checkpoint"  # in each partition's folder: the epochs its log holds, where each starts
PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>\d+)")


@dataclass(frozen=True)
class Batch:
    position: int  # byte where it starts in the segment
    size: int
    base_offset: int
    last_offset: int
    records: int


def batches(data: bytes) -> list[Batch]:
    """The complete record batches of a segment, in order; a torn tail (a batch cut short) is not one."""
    out, pos = [], 0
    while pos + HEADER <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        size = LOG_OVERHEAD + length
        if length < HEADER - LOG_OVERHEAD or pos + size > len(data):
            break
        magic = data[pos + 16]
        if magic != 2:
            raise ValueError(f"record batch at byte {pos} has magic {magic}; only magic 2 (Kafka 0.11+) is read")
        last_delta, = struct.unpack_from(">i", data, pos + 23)
        records, = struct.unpack_from(">i", data, pos + 57)
        out.append(Batch(pos, size, base, base + last_delta, records))
        pos += size
    return out


def recovery_points(text: str) -> dict[tuple[str, int], int]:
    """Kafka's offset checkpoint file: a version line (0), a count line, then "topic partition offset" lines."""
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError("not an offset checkpoint file of version 0")
    out = {}
    for line in lines[2:2 + int(lines[1])]:
        topic, partition, offset = line.rsplit(" ", 2)
        out[(topic, int(partition))] = int(offset)
    return out


def leader_epochs(text: str) -> list[tuple[int, int]]:
    """A partition's leader-epoch-checkpoint: a version line (0), a count line, then "epoch start-offset" lines
    -> [(epoch, the first offset written under it)], in the file's order (ValueError when it is not one)."""
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError("not a leader-epoch checkpoint file of version 0")
    out = []
    for line in lines[2:2 + int(lines[1])]:
        epoch, start = line.split()
        out.append((int(epoch), int(start)))
    return out


def cut_position(found: list[Batch], flushed: int, drop_batches: int | None) -> int:
    """Where to cut a segment: after the last batch wholly below the flushed offset, or before the last
    `drop_batches` batches when that is given."""
    if drop_batches is not None:
        kept = found[:max(0, len(found) - drop_batches)]
    else:
        kept = [b for b in found if b.last_offset < flushed]
    return kept[-1].position + kept[-1].size if kept else 0


def cut_unflushed(log_dir: Path, topic: str, drop_batches: int | None = None) -> list[dict]:
    """Cut the active segment of each of `topic`'s partitions in `log_dir` (the broker must be down);
    one journal entry per partition: topic, partition, the segment, bytes and batches cut, and the offsets
    from/to that went (nothing cut: cut_bytes 0)."""
    checkpoint = log_dir / CHECKPOINT
    try:
        flushed = recovery_points(checkpoint.read_text()) if checkpoint.is_file() else {}
    except ValueError:  # a checkpoint a kill left empty: only a cut back to the recovery point needs it
        if drop_batches is None:
            raise
        flushed = {}
    cuts = []
    for folder in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        m = PARTITION_DIR.fullmatch(folder.name)
        if not m or m["topic"] != topic:
            continue
        segments = sorted(folder.glob("*.log"))
        if not segments:
            continue
        active = segments[-1]
        data = active.read_bytes()
        found = batches(data)
        key = (m["topic"], int(m["partition"]))
        at = cut_position(found, flushed.get(key, 0), drop_batches)
        gone = [b for b in found if b.position >= at]
        entry = {"topic": key[0], "partition": key[1], "segment": active.name, "cut_bytes": len(data) - at,
                 "cut_batches": len(gone), "cut_records": sum(b.records for b in gone),
                 "recovery_point": flushed.get(key, 0 if drop_batches is None else None)}
        if gone:
            entry.update(first_offset=gone[0].base_offset, last_offset=gone[-1].last_offset)
        if at < len(data):
            with open(active, "r+b") as f:
                f.truncate(at)
        cuts.append(entry)
    return cuts
