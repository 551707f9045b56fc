"""The Spark analysis equals the numpy definitions whatever the file layout, and names damaged files."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.analysis import metrics
from harness.analysis.anomalies import TABLES, check_partition
from harness.engine.folder import analyze_folder
from harness.engine.partitions import analyze_variant
from harness.formats import ACKS_SCHEMA
from harness.runfolder import RunFolder, RunFolderError

LOG = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("value", pa.int64()),
                 ("timestamp", pa.timestamp("ms", tz="UTC"))])


def case(seed: int, partitions: int = 3, n: int = 400):
    """Per partition: delivery outcomes, and a log with retried blocks, a loss and a stray."""
    rng = random.Random(seed)
    logs, acks = {}, {}
    for p in range(partitions):
        outcomes = [rng.choice(["acked"] * 8 + ["unknown", "rejected"]) for _ in range(n)]
        seq = [v for v, o in enumerate(outcomes) if o != "rejected" and rng.random() < 0.97 or o == "acked"]
        for _ in range(3):
            i = rng.randrange(len(seq) - 10)
            seq[i + 10:i + 10] = seq[i:i + rng.randint(1, 8)]
        del seq[rng.randrange(len(seq))]
        seq.insert(rng.randrange(len(seq)), None)
        offsets = list(range(len(seq)))
        logs[p] = (offsets, seq)
        first = {}
        for o, v in zip(offsets, seq):
            first.setdefault(v, o)
        acks[p] = [(v, o, first.get(v) if o == "acked" else None) for v, o in enumerate(outcomes)]
    return logs, acks


def log_table(rows):  # rows: (partition, offset, value)
    p, o, v = zip(*rows)
    return pa.table({"partition": pa.array(p, pa.int32()), "offset": pa.array(o, pa.int64()),
                     "value": pa.array(v, pa.int64()),
                     "timestamp": pa.array([1_790_000_000_000 + 10 * x for x in o], pa.timestamp("ms", tz="UTC"))},
                    schema=LOG)


def acks_table(rows):  # rows: (partition, value, outcome, offset)
    n = len(rows)
    return pa.table({"partition": pa.array([r[0] for r in rows], pa.int32()), "value": [r[1] for r in rows],
                     "outcome": [r[2] for r in rows], "offset": pa.array([r[3] for r in rows], pa.int64()),
                     "error": pa.nulls(n, pa.string()), "sent_at": pa.nulls(n, pa.timestamp("ms", tz="UTC")),
                     "latency_ms": pa.nulls(n, pa.float64()), "session": pa.array([0] * n, pa.int32()),
                     "txn": pa.nulls(n, pa.int64())}, schema=ACKS_SCHEMA)


def expected(logs, acks):
    found = [check_partition(p, [acks_table([(p, v, o, off) for v, o, off in acks[p]])],
                             [log_table([(p, o, v) for o, v in zip(*logs[p])])]) for p in logs]
    return metrics.combine_rows([f.metrics for f in found]), found


def write_layout(tmp_path, logs, acks, layout):
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = [(p, o, v) for p in logs for o, v in zip(*logs[p])]
    ack_rows = [(p, v, o, off) for p in acks for v, o, off in acks[p]]
    log_files = []
    if layout == "file per partition":  # what the final read writes
        for p in logs:
            path = tmp_path / f"part-{p}.parquet"
            pq.write_table(log_table([r for r in rows if r[0] == p]), path)
            log_files.append(str(path))
    elif layout == "partitions split and shuffled":  # pieces of partitions over files, rows out of order
        random.Random(1).shuffle(rows)
        for k in range(4):
            path = tmp_path / f"piece-{k}.parquet"
            pq.write_table(log_table(rows[k::4]), path)
            log_files.append(str(path))
    elif layout == "offset ranges in row groups":  # one partition read in several pieces, in order
        path = tmp_path / "ranges.parquet"
        pq.write_table(log_table(sorted(rows)), path, row_group_size=97)
        log_files.append(str(path))
    elif layout == "offset ranges over files":  # what a split final read writes: one file per offset range
        names = [f"part-{k:05d}" for k in range(3 * len(logs))]
        random.Random(3).shuffle(names)  # file names in no particular offset order
        for p in logs:
            part = sorted(r for r in rows if r[0] == p)
            for k in range(3):
                path = tmp_path / f"{names.pop()}.parquet"
                pq.write_table(log_table(part[k * len(part) // 3:(k + 1) * len(part) // 3]), path)
                log_files.append(str(path))
        log_files.sort()
    random.Random(2).shuffle(ack_rows)  # the delivery log in report order: partitions interleaved
    acks_path = tmp_path / "acks.parquet"
    pq.write_table(acks_table(ack_rows), acks_path, row_group_size=150)
    return log_files, [str(acks_path)]


@pytest.mark.parametrize("layout", ["file per partition", "partitions split and shuffled",
                                    "offset ranges in row groups", "offset ranges over files"])
def test_spark_equals_numpy_whatever_the_layout(spark, tmp_path, layout):
    logs, acks = case(seed=len(layout))
    want, found = expected(logs, acks)
    log_files, acks_files = write_layout(tmp_path, logs, acks, layout)
    got, tables, timing = analyze_variant(spark, log_files, acks_files)
    assert got == want
    if layout == "offset ranges over files":  # read in offset order straight away: no sorting in the task
        from harness.engine.partitions import LOG_COLUMNS
        from harness.engine.rowgroups import read_partition

        for p in logs:
            offsets = [o for b in read_partition(log_files, p, LOG_COLUMNS) for o in b.column("offset").to_pylist()]
            assert offsets == sorted(offsets) == logs[p][0]
    assert want["duplicates"] > 0 and want["unexpected"] == 3 and want["lost"] + want["unseen"] > 0
    for name in TABLES:
        if name == "series":
            continue
        rows = sorted(tuple(r.values()) for f in found for r in f.table(name).to_pylist())
        assert sorted(tuple(r.values()) for r in tables[name].to_pylist()) == rows, name
    assert sum(r["records"] for r in tables["series"].to_pylist()) == want["received"]


def run_folder(tmp_path, logs, acks, variants=("a", "b")):
    folder = RunFolder(tmp_path / "run")
    for v in variants:
        d = folder.variant_dir(v)
        log_files, acks_files = write_layout(d / "parts", logs, acks, "file per partition")
        (d / "log.parquet").mkdir()
        for f in log_files:
            (d / "parts" / f.rsplit("/", 1)[1]).rename(d / "log.parquet" / f.rsplit("/", 1)[1])
        (d / "log.parquet" / "_SUCCESS").write_text("")
        (d / "parts" / "acks.parquet").rename(d / "acks.parquet")
    return folder


def test_folder_analysis_writes_every_table_and_names_missing_and_damaged_files(spark, tmp_path):
    logs, acks = case(seed=7)
    want, _ = expected(logs, acks)
    folder = run_folder(tmp_path, logs, acks)
    out = analyze_folder(spark, folder, ["a", "b"])
    assert {k: out["a"][k] for k in want} == {k: out["b"][k] for k in want} == want
    assert out["a"]["latency_ms"] is None and out["a"]["unavailable_s"] == 0.0  # no send times in this log
    assert all(folder.table_path("a", t).exists() for t in TABLES)

    folder.acks_path("b").unlink()
    with pytest.raises(RunFolderError, match=r"b/acks.parquet is missing; analyse what is complete with --partial"):
        analyze_folder(spark, folder, ["a", "b"])
    partial = analyze_folder(spark, folder, ["a", "b"], partial=True)
    assert {k: partial["a"][k] for k in want} == want and "acks.parquet is missing" in partial["b"]["incomplete"]

    part = next(folder.log_path("a").glob("*.parquet"))
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])  # truncated by a full disk, say
    with pytest.raises(RunFolderError, match=rf"{part.name}: not a readable Parquet file") as e:
        analyze_folder(spark, folder, ["a"])
    assert e.value.damaged


def test_contradictory_delivery_log_is_named_not_a_traceback(spark, tmp_path):
    logs, acks = case(seed=3)
    acks[0].append(acks[0][5])  # value 5 of partition 0 recorded twice
    folder = run_folder(tmp_path, logs, acks, variants=("a",))
    with pytest.raises(RunFolderError, match=r"a/acks.parquet: contradictory delivery log: partition 0: "
                                             r"value 5 recorded more than once") as e:
        analyze_folder(spark, folder, ["a"])
    assert e.value.damaged


def test_a_transactional_folder_on_spark_counts_torn_transactions_across_partitions(spark, tmp_path):
    """Partition 0 holds the planted anomalies of tests/unit/test_transactions_analysis.py; partition 1 one more
    value of committed txn 7, not read: within partition 1 txn 7 is not torn (none of its 1 value read) nor within
    partition 0 (its 1 value read), but across them it is."""
    from tests.unit.test_transactions_analysis import BOOK, READ_COMMITTED, SENDS, acks as acks_rows, log as log_rows

    folder = RunFolder(tmp_path / "run")
    d = folder.variant_dir("t")
    (d / "log.parquet").mkdir(parents=True)
    for p, table in ((0, READ_COMMITTED), (1, log_rows([(5, 1)], partition=1))):  # p1: value 1, sent by nobody
        pq.write_table(table, d / "log.parquet" / f"part-{p}.parquet")
    (d / "log.parquet" / "_SUCCESS").write_text("")
    pq.write_table(pa.concat_tables([acks_rows(SENDS), acks_rows([(0, "acked", 0, 2, 7)], partition=1)]),
                   folder.acks_path("t"))
    with pytest.raises(RunFolderError, match="transactions.parquet is missing"):
        analyze_folder(spark, folder, ["t"])
    pq.write_table(BOOK, folder.transactions_path("t"))
    # Without proof that the read reached partition 1's end, its value 0 (txn 7) is unseen, not lost committed,
    # and txn 7 is judged on what was read of it: not torn.
    m = analyze_folder(spark, folder, ["t"])["t"]
    assert (m["lost_committed"], m["unseen"], m["torn_transactions"]) == (1, 1, 3)
    folder.write_read("t", {"isolation": "read_committed", "complete": True, "reads": 1, "start": [0, 0],
                            "end": [19, 6]})
    m = analyze_folder(spark, folder, ["t"])["t"]
    # Partition 0: aborted reads 2, lost committed 1, torn 3 (txns 1, 2, 5), zombie writes 1 (unit test);
    # partition 1: value 0 of txn 7 lost (committed), and a stray value 1 (unexpected).
    assert (m["aborted_reads"], m["lost_committed"], m["zombie_writes_visible"], m["unexpected"]) == (2, 2, 1, 1)
    assert m["torn_transactions"] == 4  # txns 1, 2, 5 and, across the partitions, 7
    assert [r["txn"] for r in folder.read_table("t", "torn_transactions").to_pylist()] == [1, 2, 5, 7]
    per_partition = {r["partition"]: r["torn_transactions"] for r in folder.read_table("t", "partitions").to_pylist()}
    assert per_partition == {0: 3, 1: 0}
