"""Spark checks against the pure-Python reference on random logs with planted anomalies."""

import random
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.analysis import checks
from tests.reference import reference

OUTCOMES = ["acked", "acked", "acked", "rejected", "unknown"]


@st.composite
def runs(draw):
    """A run: delivery outcomes, and a log built from them with planted anomalies."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    log_rows, ack_rows = [], []
    for p in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 40))
        outcomes = [rng.choice(OUTCOMES) for _ in range(n)]
        ack_rows += [(p, v, o) for v, o in enumerate(outcomes)]
        seq = [v for v, o in enumerate(outcomes) if o == "acked" or rng.random() < 0.5]
        for _ in range(draw(st.integers(0, 4))):  # plant an anomaly
            if not seq:
                break
            i = rng.randrange(len(seq))
            what = rng.choice(["dup-block", "dup-block", "reorder", "lose", "foreign"])
            if what == "dup-block":  # a retried batch written again after later records
                j = min(len(seq), i + rng.randint(1, 6))
                at = rng.randint(j, len(seq))
                seq[at:at] = seq[i:j]
            elif what == "reorder" and i + 1 < len(seq):
                seq[i], seq[i + 1] = seq[i + 1], seq[i]
            elif what == "lose":
                del seq[i]
            elif what == "foreign":
                seq.insert(i, n + rng.randint(0, 5))
        log_rows += [(p, off, v) for off, v in enumerate(seq)]
    return log_rows, ack_rows, rng.random() < 0.5


def frames(spark, tmp_path, log_rows, ack_rows, one_file_per_partition):
    acks = spark.createDataFrame([(p, v, o, None) for p, v, o in ack_rows],
                                 "partition int, value long, outcome string, offset long")
    if one_file_per_partition:  # the layout the final read writes: the no-shuffle path
        folder = tmp_path / f"log-{uuid.uuid4().hex}"
        folder.mkdir()
        for p in sorted({r[0] for r in log_rows}):
            rows = [r for r in log_rows if r[0] == p]
            pq.write_table(pa.table({"partition": pa.array([r[0] for r in rows], pa.int32()),
                                     "offset": [r[1] for r in rows], "value": [r[2] for r in rows]}),
                           folder / f"part-{p}.parquet")
        if any(folder.iterdir()):
            return spark.read.parquet(str(folder)), acks
    shuffled = list(log_rows)
    random.shuffle(shuffled)  # any order, split anyhow: the sorting fallback
    return spark.createDataFrame(shuffled, "partition int, offset long, value long"), acks


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs())
def test_spark_checks_equal_the_reference(spark, tmp_path, case):
    log_rows, ack_rows, files = case
    log, acks = frames(spark, tmp_path, log_rows, ack_rows, files)
    want = reference(log_rows, ack_rows)
    f = checks.analyze(log, acks)
    try:
        got = checks.summarize(f)
        for metric, value in want["metrics"].items():
            assert got[metric] == value, metric
        assert {tuple(r) for r in checks.jump_back_runs(f).collect()} == want["runs"]
        assert {tuple(r) for r in checks.duplicates(f).collect()} == want["duplicates"]
        assert {tuple(r) for r in checks.lost(f).collect()} == want["lost"]
        assert {tuple(r) for r in checks.gaps(f).collect()} == want["gaps"]
    finally:
        f.unpersist()
