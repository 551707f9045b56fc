"""The consumer group's sink: an SQLite database (Python's sqlite3) the members process records into.

Every member process opens the same file (RunFolder.sink_path); SQLite serialises their write
transactions (WAL journal, a busy timeout longer than any planned pause, so a member frozen while
holding the write lock only delays the others). Tables:

    processed  one row per record processed: partition, offset, value (null: not a workload value),
               member, session (the member's assignment epoch), n (the member's processing counter),
               processed_at (epoch ms), committed: before / after / auto (the offset commit relative to the
               processing) or atomic (offsets and output in one transaction: transactional, idempotent-sink)
    records    idempotent-sink's output, upserted by (partition, value)
    offsets    idempotent-sink's positions: the next offset to process per partition, stored with the output
    events     what members and the supervisor saw or did: start, assign, revoke, lost, commit-failed,
               fenced, abort, retry (a transaction call made again after a retriable error), abandon (a stop
               came while it kept failing), stop, killed, paused, resumed, joined, left
    positions  written by the harness when the group has stopped: each partition's final position and end
    in_hand    the batch each member of a commit strategy is processing (its first n and its size): what a
               member kill asks to land mid-batch; not part of the analysis

The commit strategies write each record's row as it is processed (its own transaction, like an application
that writes each effect); idempotent-sink and the transactional output write a batch atomically.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS processed (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, partition INTEGER NOT NULL, offset INTEGER NOT NULL, value INTEGER,
    member TEXT NOT NULL, session INTEGER NOT NULL, n INTEGER NOT NULL, processed_at REAL NOT NULL,
    committed TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    partition INTEGER NOT NULL, value INTEGER NOT NULL, offset INTEGER NOT NULL, member TEXT NOT NULL,
    processed_at REAL NOT NULL, PRIMARY KEY (partition, value));
CREATE TABLE IF NOT EXISTS offsets (partition INTEGER PRIMARY KEY, next_offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    at REAL NOT NULL, member TEXT NOT NULL, event TEXT NOT NULL, partitions TEXT, detail TEXT);
CREATE TABLE IF NOT EXISTS positions (partition INTEGER PRIMARY KEY, position INTEGER, end_offset INTEGER);
CREATE TABLE IF NOT EXISTS in_hand (member TEXT PRIMARY KEY, first_n INTEGER NOT NULL, count INTEGER NOT NULL);
"""
BUSY_TIMEOUT_S = 300.0  # longer than any member pause: a frozen writer delays the others, never fails them
TABLES = ("processed", "records", "offsets", "events", "positions")


def now_ms() -> float:
    return time.time() * 1000.0


def create(path: Path) -> None:
    """A new, empty sink (the supervisor, before any member starts)."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
    db.close()


class Sink:
    """One process's connection; every write is its own transaction (BEGIN IMMEDIATE ... COMMIT)."""

    def __init__(self, path: Path | str, member: str):
        self.member = member
        # The supervisor writes from its threads one at a time (under its lock); a member from one thread.
        self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA synchronous=NORMAL")  # a killed process loses nothing it committed (WAL)

    def close(self) -> None:
        self.db.close()

    def event(self, event: str, partitions=None, detail: str = "", member: str | None = None,
              at: float | None = None) -> None:
        """at: when it happened, epoch ms (a relayed member's own clock, workload/memberlines.py); default now."""
        self.db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                        (now_ms() if at is None else at, member or self.member, event,
                         json.dumps(sorted(partitions)) if partitions is not None else None, detail or None))

    def holdings(self) -> dict[str, set[int]]:
        """member -> the partitions it holds now, from its assign, revoke and lost events (an eager
        assignment is revoked whole before the next, a cooperative one changes by increments)."""
        held: dict[str, set[int]] = {}
        for member, event, partitions in self.db.execute(
                "SELECT member, event, partitions FROM events WHERE event IN ('assign', 'revoke', 'lost') "
                "ORDER BY rowid"):
            parts = set(json.loads(partitions or "[]"))
            mine = held.setdefault(member, set())
            mine |= parts if event == "assign" else set()
            mine -= parts if event != "assign" else set()
        return held

    def hold(self, first_n: int, count: int) -> None:
        """This member starts processing a batch of `count` records, the first of which will be its n `first_n`."""
        self.db.execute("INSERT OR REPLACE INTO in_hand VALUES (?, ?, ?)", (self.member, first_n, count))

    def mid_batch(self, member: str) -> bool:
        """Whether `member` has processed part of its batch in hand: at least one record of it, and not the last
        (so its commit, before or after the processing, is still on one side of the records in hand)."""
        held = self.db.execute("SELECT first_n, count FROM in_hand WHERE member = ?", (member,)).fetchone()
        if held is None:
            return False
        last = self.db.execute("SELECT n FROM processed WHERE member = ? ORDER BY seq DESC LIMIT 1",
                               (member,)).fetchone()
        return last is not None and held[0] <= last[0] < held[0] + held[1] - 1

    def processed(self, rows: list[tuple], committed: str) -> None:
        """rows: (partition, offset, value, session, n, processed_at), written in one transaction."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany(
                "INSERT INTO processed (partition, offset, value, member, session, n, processed_at, committed) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(p, o, v, self.member, s, n, t, committed) for p, o, v, s, n, t in rows])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def stored_offsets(self, partitions: list[int]) -> dict[int, int]:
        """idempotent-sink: the next offset stored for each partition that has one."""
        marks = ",".join("?" * len(partitions))
        return dict(self.db.execute(f"SELECT partition, next_offset FROM offsets WHERE partition IN ({marks})",
                                    partitions).fetchall()) if partitions else {}

    def apply(self, rows: list[tuple]) -> dict[int, int]:
        """idempotent-sink: output (upserted by value), journal and next offsets of a batch in one transaction.

        The stored offset fences: a partition whose stored next offset is past the batch's first record
        (another member processed it meanwhile: this one is a zombie of an older assignment) is left out.
        Returns {partition: stored next offset} for those, so the caller seeks there."""
        by_partition: dict[int, list[tuple]] = {}
        for row in rows:
            by_partition.setdefault(row[0], []).append(row)
        fenced = {}
        self.db.execute("BEGIN IMMEDIATE")
        try:
            stored = self.stored_offsets(list(by_partition))
            for partition, part in by_partition.items():
                if partition in stored and part[0][1] < stored[partition]:
                    fenced[partition] = stored[partition]
                    continue
                self.db.executemany(
                    "INSERT INTO records VALUES (?, ?, ?, ?, ?) ON CONFLICT (partition, value) DO UPDATE SET "
                    "offset = excluded.offset, member = excluded.member, processed_at = excluded.processed_at",
                    [(p, v, o, self.member, t) for p, o, v, s, n, t in part if v is not None])
                self.db.executemany(
                    "INSERT INTO processed (partition, offset, value, member, session, n, processed_at, committed) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'atomic')",
                    [(p, o, v, self.member, s, n, t) for p, o, v, s, n, t in part])
                self.db.execute("INSERT INTO offsets VALUES (?, ?) ON CONFLICT (partition) DO UPDATE SET "
                                "next_offset = excluded.next_offset", (partition, part[-1][1] + 1))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return fenced

    def write_positions(self, positions: dict[int, tuple[int | None, int]]) -> None:
        """The harness, once the group stopped: {partition: (final position or None, end offset)}."""
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("DELETE FROM positions")
        self.db.executemany("INSERT INTO positions VALUES (?, ?, ?)",
                            [(p, pos, end) for p, (pos, end) in sorted(positions.items())])
        self.db.execute("COMMIT")

    def add_processed(self, rows: list[tuple]) -> None:
        """The harness: rows (partition, offset, value, member, session, n, processed_at) of a transactional
        group's output as read back with read_committed, in one transaction."""
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(
            "INSERT INTO processed (partition, offset, value, member, session, n, processed_at, committed) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'atomic')", rows)
        self.db.execute("COMMIT")
