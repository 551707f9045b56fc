"""Analysis speed: the Spark checks against a single-core numpy reference, on one synthetic stored run.

Generates a run folder of N records (default 10 million) over 6 partitions with planted
anomalies (~0.1% duplicates in retried blocks of 1-3000 values, ~0.01% of acked values
lost, some unknown sends half of which were written), laid out as a real run: one
log file per partition in offset order, and one acks.parquet. Then, in this process:

  (a) Spark: engine.partitions.analyze_variant, a task per core (Spark start-up timed separately);
  (b) numpy: anomalies.check_partition over every partition in one process, on one core;

checks that both give the same numbers, and prints both times, the ratio, and the peak
memory of the whole process tree.

    python bench/analysis.py [--records 10000000] [--partitions 6] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
try:
    import psutil  # noqa: E402
except ImportError:
    sys.exit(f"{Path(__file__).name}: needs psutil, which the test extra installs: pip install -e '.[test]'")
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from harness.analysis import metrics  # noqa: E402
from harness.engine.partitions import analyze_variant, check_files  # noqa: E402
from harness.engine.rowgroups import partitions_in  # noqa: E402
from harness.runfolder import parquet_files  # noqa: E402


def generate(folder: Path, records: int, partitions: int, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    (folder / "log.parquet").mkdir(parents=True)
    writer = pq.ParquetWriter(folder / "acks.parquet", pa.schema([
        ("partition", pa.int32()), ("value", pa.int64()), ("outcome", pa.string()), ("offset", pa.int64())]))
    planted = {"duplicates": 0, "lost": 0}
    per = records // partitions
    for p in range(partitions):
        n = int(per / 1.001)  # leave room for the duplicates
        outcome = np.full(n, 1, dtype=np.int8)
        unknown = rng.choice(n, size=max(1, n // 20000), replace=False)
        outcome[unknown] = 3
        keep = np.ones(n, dtype=bool)
        keep[unknown[: len(unknown) // 2]] = False  # half the unknown sends never made it
        acked = np.flatnonzero(outcome == 1)
        lost = rng.choice(acked, size=max(1, n // 10000), replace=False)
        keep[lost] = False
        planted["lost"] += len(lost)
        values = np.flatnonzero(keep)
        # Retried blocks: a block of already written values written again a little later.
        pieces, pos, budget = [], 0, int(n * 0.001)
        while budget > 0:
            size = int(min(budget, rng.integers(1, 3001)))
            start = int(rng.integers(pos, max(pos + 1, len(values) - size - 200)))
            later = min(len(values), start + size + int(rng.integers(0, 200)))
            if later <= pos or start + size > len(values):
                break
            pieces += [values[pos:later], values[start:start + size]]
            pos, budget = later, budget - size
            planted["duplicates"] += size
        pieces.append(values[pos:])
        log_values = np.concatenate(pieces)
        ts = (1_700_000_000_000 + np.arange(len(log_values)) // 20).astype("datetime64[ms]")
        pq.write_table(pa.table({"partition": pa.array(np.full(len(log_values), p, np.int32)),
                                 "offset": np.arange(len(log_values), dtype=np.int64), "value": log_values,
                                 "timestamp": pa.array(ts, pa.timestamp("ms", tz="UTC"))}),
                       folder / "log.parquet" / f"part-{p:05d}.parquet")
        # Each acked value was told the offset of its first copy, as a client hears of its write.
        first = np.full(n, -1, dtype=np.int64)
        uniq, first_index = np.unique(log_values, return_index=True)
        first[uniq] = first_index
        # A lost value was told an offset too: the one its successor now holds (the log moved up).
        gone = first < 0
        first[gone] = np.minimum.accumulate(np.where(gone, np.iinfo(np.int64).max, first)[::-1])[::-1][gone]
        names = np.array(["", "acked", "rejected", "unknown"], dtype=object)
        for lo in range(0, n, 1_000_000):
            hi = min(n, lo + 1_000_000)
            writer.write_table(pa.table({
                "partition": pa.array(np.full(hi - lo, p, np.int32)), "value": np.arange(lo, hi, dtype=np.int64),
                "outcome": pa.array(names[outcome[lo:hi]], pa.string()),
                "offset": pa.array(first[lo:hi], mask=outcome[lo:hi] != 1)}))
    writer.close()
    return planted


def numpy_reference(folder: Path) -> dict[str, int]:
    """Every partition through the same definitions in this process, on one core."""
    logs, acks = parquet_files(folder / "log.parquet"), parquet_files(folder / "acks.parquet")
    found = [check_files(p, logs, acks).metrics for p in sorted(partitions_in(logs + acks))]
    return metrics.combine_rows(found)


class PeakMemory:
    """Samples the RSS of this process and all its children (the Spark JVM, Python workers)."""

    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = psutil.Process()
        while not self._stop.wait(0.2):
            total = 0
            for proc in [me] + me.children(recursive=True):
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--keep", type=Path, default=None, help="generate into this folder and keep it")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="kafka-chaos-bench-"))
    try:
        t = time.perf_counter()
        planted = generate(folder / "bench", args.records, args.partitions)
        print(f"generated {args.records:,} records in {time.perf_counter() - t:.1f}s: {planted}", flush=True)

        t = time.perf_counter()
        reference = numpy_reference(folder / "bench")
        numpy_s = time.perf_counter() - t
        print(f"numpy reference   {numpy_s:8.2f}s", flush=True)

        from harness.engine.session import spark_session, stop_session

        run = folder / "bench"
        files = parquet_files(run / "log.parquet"), parquet_files(run / "acks.parquet")
        with PeakMemory() as mem:
            t = time.perf_counter()
            spark = spark_session()
            startup_s = time.perf_counter() - t
            t = time.perf_counter()
            got, _, _ = analyze_variant(spark, *files)
            spark_s = time.perf_counter() - t
            t = time.perf_counter()  # again, with Python workers already started and imports done
            assert analyze_variant(spark, *files)[0] == got
            warm_s = time.perf_counter() - t
            stop_session(spark)
        print(f"spark start-up    {startup_s:8.2f}s")
        print(f"spark checks      {spark_s:8.2f}s (a task per core)")
        same = all(got[k] == v for k, v in reference.items())
        print(f"agree exactly     {same}")
        if not same:
            print({k: (got.get(k), v) for k, v in reference.items() if got.get(k) != v})
        print(f"metrics           {got}")
        print(f"spark checks warm {warm_s:8.2f}s (second pass, same session)")
        print(f"spark / numpy     {spark_s / numpy_s:.1f}x first pass, {warm_s / numpy_s:.1f}x warm   (goal: within 8x)")
        print(f"peak memory       {mem.peak / 2**30:.1f} GiB (this process and its children)")
        if not same:
            sys.exit(1)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
