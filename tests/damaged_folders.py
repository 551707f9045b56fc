"""The damaged-folder corpus for `kafka-chaos analyze`: each case damages a copy of a run folder that
passes (stored_run.make_analysable_run) and says what analyze must answer.

    Case(name, damage, code, says, names, spark)

damage(folder) damages it; `code` is the exit status; `says` a text the output must hold; `names` the
file the message must name (a path inside the folder; "" for none). spark=False: refused before Spark
starts (tests/unit runs these through CliRunner); True: needs the analysis (tests/spark).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from harness.runfolder import RunFolder
from harness.formats import ACKS_SCHEMA
from tests.stored_run import LOG_SCHEMA, acks_rows, log_rows

PASS, FAIL, USAGE, DAMAGED = 0, 1, 2, 3


@dataclass(frozen=True)
class Case:
    name: str
    damage: Callable[[RunFolder], None]
    code: int
    says: str
    names: str = ""  # inside the run folder
    spark: bool = False
    args: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        return self.name


# -- ways to damage ---------------------------------------------------------------------------------

def remove(rel):
    def damage(f: RunFolder):
        p = f.path / rel
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    return damage


def write(rel, content: str | bytes):
    def damage(f: RunFolder):
        p = f.path / rel
        if p.is_dir():
            shutil.rmtree(p)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return damage


def truncate(rel, keep=0.5):
    def damage(f: RunFolder):
        p = f.path / rel
        p.write_bytes(p.read_bytes()[: int(p.stat().st_size * keep)])
    return damage


def edit_text(rel, old, new):
    def damage(f: RunFolder):
        p = f.path / rel
        p.write_text(p.read_text().replace(old, new, 1))
    return damage


def acks(rows_fn=lambda rows: rows, schema=ACKS_SCHEMA, variant="off", **options):
    """Rewrite a variant's delivery log: rows_fn(rows) -> rows, with another schema if given."""
    def damage(f: RunFolder):
        rows = rows_fn(acks_rows())
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), f.acks_path(variant), **options)
    return damage


def log(rows_fn=lambda rows: rows, schema=LOG_SCHEMA, partition=0, variant="off", **options):
    """Rewrite one partition's file of a variant's log."""
    def damage(f: RunFolder):
        rows = rows_fn(log_rows(partition))
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), f.log_path(variant) / f"part-{partition:05d}.parquet",
                       **options)
    return damage


def retyped(schema: pa.Schema, column: str, dtype: pa.DataType, convert=str) -> tuple[Callable, pa.Schema]:
    """(rows_fn, schema) with one column's type changed and its values converted."""
    new = schema.set(schema.get_field_index(column), pa.field(column, dtype))
    return (lambda rows: [{**r, column: None if r[column] is None else convert(r[column])} for r in rows]), new


def set_row(i, **values):
    return lambda rows: [({**r, **values} if k == i else r) for k, r in enumerate(rows)]


def link(rel, target: Callable[[RunFolder], str]):
    def damage(f: RunFolder):
        p = f.path / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
        os.symlink(target(f), p)
    return damage


def outside(f: RunFolder) -> str:
    """A folder next to the run folder, with one file in it: what a link must not let analyze touch."""
    out = f.path.parent / "outside"
    out.mkdir(exist_ok=True)
    (out / "keep.txt").write_text("keep me")
    return str(out)


def sink(variant):
    """A consumer group's sink, as the group leaves it, with a few processed records."""
    def damage(f: RunFolder):
        from harness.workload import sink as sinks

        path = f.sink_path(variant)
        sinks.create(path)
        db = sqlite3.connect(path)
        db.executemany("INSERT INTO processed (partition, offset, value, member, session, n, processed_at, committed) "
                       "VALUES (0, ?, ?, 'm0', 0, 1, 0.0, 'yes')", [(i, i) for i in range(2000)])
        db.commit()
        db.close()
    return damage


def both(*damages):
    def damage(f: RunFolder):
        for d in damages:
            d(f)
    return damage


def faults_line(n, line):
    """Replace line n (1-based) of faults.jsonl."""
    def damage(f: RunFolder):
        lines = f.faults_path.read_text().splitlines()
        lines[n - 1] = line
        f.faults_path.write_text("\n".join(lines) + "\n")
    return damage


def fault_field(**values):
    def damage(f: RunFolder):
        lines = f.faults_path.read_text().splitlines()
        row = {**json.loads(lines[0]), **values}
        lines[0] = json.dumps(row)
        f.faults_path.write_text("\n".join(lines) + "\n")
    return damage


def summary_field(where: tuple, value):
    """Set one field of summary.json (where: the keys leading to it)."""
    def damage(f: RunFolder):
        path = f.path / "summary.json"
        doc = json.loads(path.read_text())
        at = doc
        for key in where[:-1]:
            at = at[key]
        at[where[-1]] = value
        path.write_text(json.dumps(doc))
    return damage


MANY_KEYS = "{" + ", ".join(f'"k{i}": 0' for i in range(150_000)) + "}"  # 2 MB: a line the harness never writes

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcde", "bcdef"))
FOREIGN = pa.table({"name": ["a", "b"], "size": [1, 2]})
ACKS, LOG0 = "off/acks.parquet", "off/log.parquet/part-00000.parquet"

CASES = [
    # -- missing: exit 2, nothing rewritten (--partial analyses the rest)
    Case("spec-missing", remove("spec.yaml"), USAGE, "is missing: it holds the expectations", "spec.yaml"),
    Case("acks-missing", remove(ACKS), USAGE, "is missing; analyse what is complete with --partial", ACKS),
    Case("log-missing", remove("off/log.parquet"), USAGE, "is missing (the final read did not happen)",
         "off/log.parquet"),
    Case("log-half-written", remove("off/log.parquet/_SUCCESS"), USAGE, "no _SUCCESS: the final read did not finish",
         "off/log.parquet"),
    Case("variant-folder-missing", remove("on"), USAGE, "is missing", "on/acks.parquet"),
    Case("variant-folder-a-file", write("on", "not a folder"), USAGE, "is missing", "on/acks.parquet"),
    # -- spec.yaml damaged: exit 3
    Case("spec-not-yaml", write("spec.yaml", "name: [unclosed\n"), DAMAGED, "unreadable", "spec.yaml"),
    Case("spec-a-list", write("spec.yaml", "- a\n- b\n"), DAMAGED, "not an experiment", "spec.yaml"),
    Case("spec-empty", write("spec.yaml", ""), DAMAGED, "not an experiment", "spec.yaml"),
    Case("spec-duplicate-key", edit_text("spec.yaml", "seed: 3\n", "seed: 3\nseed: 4\n"), DAMAGED,
         "key 'seed' given twice", "spec.yaml"),
    Case("spec-unknown-field", edit_text("spec.yaml", "seed: 3\n", "seed: 3\nbogus: 1\n"), DAMAGED,
         "bogus: unknown field", "spec.yaml"),
    Case("spec-variant-name-a-path", edit_text("spec.yaml", "name: 'off'", "name: ../../off"), DAMAGED,
         "variants.0.name", "spec.yaml"),
    Case("spec-not-utf8", write("spec.yaml", b"name: \xff\xfe\n"), DAMAGED, "unreadable", "spec.yaml"),
    Case("spec-billion-laughs", write("spec.yaml", LAUGHS), DAMAGED, "more than 100,000 values", "spec.yaml"),
    Case("spec-rule-not-a-number", edit_text("spec.yaml", "duplicates: == 0", "duplicates: lots"), DAMAGED,
         "expectations.on.duplicates", "spec.yaml"),
    # -- summary.json and faults.jsonl damaged: exit 3
    Case("summary-not-json", write("summary.json", "{not json"), DAMAGED, "unreadable", "summary.json"),
    Case("summary-truncated", truncate("summary.json"), DAMAGED, "unreadable", "summary.json"),
    Case("summary-a-list", write("summary.json", "[1, 2]"), DAMAGED, "not a kafka-chaos summary", "summary.json"),
    Case("summary-variant-a-string", write("summary.json", '{"variants": {"off": "x"}}'), DAMAGED,
         'variants.off: "x" is not an object', "summary.json"),
    Case("summary-expectations-a-string", summary_field(("variants", "on", "expectations"), "x"), DAMAGED,
         'summary.json: variants.on.expectations: "x" is not a list (a list of checks', "summary.json"),
    Case("summary-seed-not-a-seed", summary_field(("seed",), "not-a-seed"), DAMAGED,
         'summary.json: seed: "not-a-seed" is not a whole number (a 64-bit integer, or absent)', "summary.json"),
    Case("spec-beyond-its-bound", lambda f: os.truncate(f.path / "spec.yaml", (1 << 20) + 1), DAMAGED,
         "1,048,577 bytes (at most 1 MiB: an experiment file)", "spec.yaml"),
    Case("read-not-json", write("off/read.json", "{nope"), DAMAGED, "unreadable", "off/read.json"),
    Case("read-complete-a-word", write("off/read.json", '{"complete": "yes", "start": [0], "end": [1]}'), DAMAGED,
         "complete: not true or false", "off/read.json"),
    Case("read-start-beyond-end", write("off/read.json", '{"complete": true, "start": [0, 9, 0], "end": [20, 5, 20]}'),
         DAMAGED, "a partition's start is beyond its end", "off/read.json"),
    Case("read-wrong-partitions", write("off/read.json", '{"complete": true, "start": [0], "end": [20]}'), DAMAGED,
         "start and end must list every partition (3)", "off/read.json"),
    Case("faults-not-json", faults_line(2, "{nope"), DAMAGED, ":2: not a JSON object line", "faults.jsonl"),
    Case("faults-a-list-line", faults_line(1, "[1, 2]"), DAMAGED, ":1: not a JSON object line", "faults.jsonl"),
    Case("faults-id-a-word", fault_field(id="x"), DAMAGED, ':1: id: "x" is not a whole number', "faults.jsonl"),
    Case("faults-time-garbage", fault_field(applied_at="yesterday"), DAMAGED, ":1: applied_at", "faults.jsonl"),
    Case("faults-nan-duration", faults_line(1, '{"id": 0, "variant": "off", "planned_duration": NaN}'), DAMAGED,
         "NaN is not a number JSON allows", "faults.jsonl"),
    Case("faults-repeated-key", faults_line(1, '{"id": 0, "id": 1}'), DAMAGED, "key 'id' given twice",
         "faults.jsonl"),
    Case("faults-duration-of-1e308", fault_field(planned_duration=1e308), DAMAGED,
         ":1: planned_duration: 1e+308 is out of range (a finite number, 0 to 86,400)", "faults.jsonl"),
    Case("faults-negative-start", fault_field(planned_at=-5), DAMAGED,
         ":1: planned_at: -5 is out of range (a finite number, 0 to 86,400)", "faults.jsonl"),
    Case("faults-target-a-number", fault_field(target=5), DAMAGED, ":1: target: 5 is not a target", "faults.jsonl"),
    Case("faults-a-million-lines", write("faults.jsonl", '{"id": 0}\n' * 10**6), DAMAGED,
         "faults.jsonl: 1,000,000 lines (at most 200,000: a line per fault and variant", "faults.jsonl"),
    Case("faults-line-of-150000-keys", faults_line(1, MANY_KEYS), DAMAGED,
         "faults.jsonl:1: 1,988,890 bytes (a line is at most 64 KiB", "faults.jsonl"),
    # -- the delivery log damaged: exit 3, before Spark
    Case("acks-zero-bytes", write(ACKS, b""), DAMAGED, "not a readable Parquet file", ACKS),
    Case("acks-truncated", truncate(ACKS), DAMAGED, "not a readable Parquet file", ACKS),
    Case("acks-a-text-file", write(ACKS, "partition,value\n0,1\n"), DAMAGED, "not a readable Parquet file", ACKS),
    Case("acks-foreign-parquet", lambda f: pq.write_table(FOREIGN, f.acks_path("off")), DAMAGED,
         "no column 'partition'", ACKS),
    Case("acks-value-a-string", acks(*retyped(ACKS_SCHEMA, "value", pa.string())), DAMAGED,
         "column 'value' is string, expected integer", ACKS),
    Case("acks-outcome-a-number", acks(*retyped(ACKS_SCHEMA, "outcome", pa.int64(), convert=len)), DAMAGED,
         "column 'outcome' is int64, expected string", ACKS),
    Case("acks-sent-at-a-number", acks(*retyped(ACKS_SCHEMA, "sent_at", pa.int64(), convert=lambda t: 1)), DAMAGED,
         "column 'sent_at' is int64, expected timestamp", ACKS),
    Case("acks-latency-a-string", acks(*retyped(ACKS_SCHEMA, "latency_ms", pa.string())), DAMAGED,
         "column 'latency_ms' is string, expected number", ACKS),
    Case("acks-null-value", acks(set_row(5, value=None)), DAMAGED, "column 'value' has 1 null(s)", ACKS),
    Case("acks-null-outcome", acks(set_row(5, outcome=None)), DAMAGED, "column 'outcome' has 1 null(s)", ACKS),
    Case("acks-null-partition", acks(set_row(5, partition=None)), DAMAGED, "column 'partition' has 1 null(s)", ACKS),
    Case("acks-value-of-10-to-the-12", acks(set_row(59, value=10**12)), DAMAGED,
         "value 1,000,000,000,000 but only 60 sends recorded", ACKS),
    Case("acks-huge-value-without-statistics", acks(set_row(59, value=10**12), write_statistics=False), DAMAGED,
         "value 1,000,000,000,000 but only 60 sends recorded", ACKS),
    Case("acks-negative-value", acks(set_row(0, value=-3)), DAMAGED, "negative value -3", ACKS),
    Case("acks-partition-beyond-the-topic", acks(set_row(0, partition=7)), DAMAGED,
         "partition 7 is not one of the topic's (0..2)", ACKS),
    Case("acks-negative-partition", acks(set_row(0, partition=-1)), DAMAGED, "partition -1 is not one", ACKS),
    Case("acks-empty-folder", both(remove(ACKS), lambda f: f.acks_path("off").mkdir()), DAMAGED,
         "holds no Parquet file", ACKS),
    Case("acks-error-column-of-nulls", acks(*retyped(ACKS_SCHEMA, "error", pa.null(), convert=lambda x: None)),
         DAMAGED, "column 'error' is null, expected string", ACKS),
    # -- the log damaged: exit 3, before Spark
    Case("log-part-zero-bytes", write(LOG0, b""), DAMAGED, "not a readable Parquet file", LOG0),
    Case("log-part-truncated", truncate(LOG0), DAMAGED, "not a readable Parquet file", LOG0),
    Case("log-part-a-text-file", write(LOG0, "hello"), DAMAGED, "not a readable Parquet file", LOG0),
    Case("log-foreign-parquet", lambda f: pq.write_table(FOREIGN, f.path / LOG0), DAMAGED,
         "no column 'partition'", LOG0),
    Case("log-foreign-parquet-of-other-widths", lambda f: pq.write_table(pa.table(
        {"partition": pa.array([0], pa.int64()), "offset": [99], "value": [5]}), f.path / "off/log.parquet/x.parquet"),
         DAMAGED, "column 'partition' is int64 where part-00000.parquet beside it has int32", "off/log.parquet/x.parquet"),
    Case("sink-deleted", edit_text("spec.yaml", "seed: 3", "seed: 3\nconsumer: {members: 2}"), USAGE,
         "is missing (the variant ran a consumer group)", "off/sink.sqlite"),
    Case("sink-truncated", both(edit_text("spec.yaml", "seed: 3", "seed: 3\nconsumer: {members: 2}"), sink("off"),
                                sink("on"), truncate("off/sink.sqlite", keep=0.3)), DAMAGED, "unreadable SQLite",
         "off/sink.sqlite"),
    Case("sink-not-a-database", both(edit_text("spec.yaml", "seed: 3", "seed: 3\nconsumer: {members: 2}"),
                                     write("off/sink.sqlite", "not sqlite")), DAMAGED, "unreadable SQLite",
         "off/sink.sqlite"),
    Case("uncommitted-log-part-truncated", lambda f: (
        shutil.copytree(f.log_path("off"), f.uncommitted_log_path("off")),
        truncate("off/log_read_uncommitted.parquet/part-00000.parquet")(f)), DAMAGED, "not a readable Parquet file",
         "off/log_read_uncommitted.parquet/part-00000.parquet"),
    Case("uncommitted-log-unfinished", lambda f: (
        shutil.copytree(f.log_path("off"), f.uncommitted_log_path("off")),
        remove("off/log_read_uncommitted.parquet/_SUCCESS")(f)), DAMAGED, "the read_uncommitted read did not finish",
         "off/log_read_uncommitted.parquet"),
    Case("acks-linked-to-itself", link(ACKS, lambda f: str(f.path / ACKS)), DAMAGED,
         "a symbolic link leading out of the run folder", ACKS),
    Case("log-offset-a-string", log(*retyped(LOG_SCHEMA, "offset", pa.string())), DAMAGED,
         "column 'offset' is string, expected integer", LOG0),
    Case("log-timestamp-a-string", log(*retyped(LOG_SCHEMA, "timestamp", pa.string())), DAMAGED,
         "column 'timestamp' is string, expected timestamp", LOG0),
    Case("log-without-value-column", log(lambda rows: [{k: v for k, v in r.items() if k != "value"} for r in rows],
                                         schema=LOG_SCHEMA.remove(2)), DAMAGED, "no column 'value'", LOG0),
    Case("log-null-offset", log(set_row(3, offset=None)), DAMAGED, "column 'offset' has 1 null(s)", LOG0),
    Case("log-null-partition", log(set_row(3, partition=None)), DAMAGED, "column 'partition' has 1 null(s)", LOG0),
    Case("log-negative-offset", log(set_row(0, offset=-5)), DAMAGED, "negative offset -5", LOG0),
    Case("log-partition-of-10-to-the-9", log(set_row(0, partition=10**9)), DAMAGED,
         "partition 1000000000 is not one of the topic's", LOG0),
    # -- links leading out of the folder: exit 3, nothing written or deleted through them
    Case("acks-linked-outside", link(ACKS, lambda f: "/etc/hostname"), DAMAGED,
         "a symbolic link leading out of the run folder", ACKS),
    Case("anomalies-linked-outside", link("off/anomalies", outside), DAMAGED, "a symbolic link leading out",
         "off/anomalies"),
    Case("variant-linked-outside", link("on", outside), DAMAGED, "a symbolic link leading out", "on"),
    Case("log-part-dangling-link", link("off/log.parquet/part-00009.parquet", lambda f: "/nonexistent/x"), DAMAGED,
         "a symbolic link leading out", "off/log.parquet/part-00009.parquet"),
    Case("summary-linked-outside", link("summary.json", lambda f: outside(f) + "/keep.txt"), DAMAGED,
         "a symbolic link leading out", "summary.json"),
    Case("spec-linked-outside", link("spec.yaml", lambda f: outside(f) + "/keep.txt"), DAMAGED,
         "leads out of the folder", "spec.yaml"),

    # -- found by the analysis itself (Spark tier)
    Case("acks-duplicate-row", acks(lambda rows: rows + [rows[7]]), DAMAGED,
         "contradictory delivery log: partition 1: value 2 recorded more than once", ACKS, spark=True),
    Case("acks-two-outcomes-for-one-value", acks(lambda rows: rows[:-1] + [{**rows[0], "outcome": "rejected",
                                                                           "offset": None}]), DAMAGED,
         "contradictory delivery log: partition 0: value 0 recorded more than once", ACKS, spark=True),
    Case("acks-unknown-outcome", acks(set_row(4, outcome="maybe")), DAMAGED, "unknown outcome 'maybe'", ACKS,
         spark=True),
    Case("log-offset-twice", log(lambda rows: rows[:-1] + [{**rows[-1], "offset": 3}]), DAMAGED,
         "partition 0: an offset appears more than once", LOG0, spark=True),
    # -- harmless or judged: the documented verdict, no traceback
    Case("stale-crc-sidecars", lambda f: [(p.parent / f".{p.name}.crc").write_bytes(b"stale")
                                          for p in f.log_path("off").glob("*.parquet")], PASS, "pass", spark=True),
    Case("acks-extra-column", acks(lambda rows: [{**r, "note": "x"} for r in rows],
                                   schema=ACKS_SCHEMA.append(pa.field("note", pa.string()))), PASS, "pass", spark=True),
    Case("acks-without-statistics", acks(write_statistics=False), PASS, "pass", spark=True),
    Case("log-out-of-order", log(lambda rows: rows[::-1]), PASS, "pass", spark=True),
    Case("log-tail-removed", log(lambda rows: rows[:-3]), FAIL, "lost == 0 (fatal) (actual 3)", spark=True),
    Case("log-middle-removed", log(lambda rows: rows[:5] + rows[9:]), FAIL, "lost == 0 (fatal) (actual 4)",
         spark=True),
    Case("log-start-deleted-before-the-read", lambda f: (log(lambda rows: rows[3:])(f), write(
        "off/read.json", '{"complete": true, "reads": 1, "start": [3, 0, 0], "end": [20, 20, 20]}')(f)), FAIL,
         "deleted_before_read == 0 (fatal) (actual 3)", spark=True),
    Case("log-stray-value-of-10-to-the-12", log(set_row(19, value=10**12)), FAIL, "unexpected", spark=True),
    Case("log-record-not-the-workloads", log(set_row(19, value=None)), FAIL, "unexpected", spark=True),
    Case("acks-missing-with-partial", remove("on/acks.parquet"), PASS, "incomplete", spark=True,
         args=("--partial",)),
    Case("log-half-written-with-partial", remove("on/log.parquet/_SUCCESS"), PASS, "incomplete", spark=True,
         args=("--partial",)),
    Case("spec-missing-with-partial", remove("spec.yaml"), PASS, "pass", spark=True, args=("--partial",)),
]
