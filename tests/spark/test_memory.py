"""The analysis' memory is bounded by the values sent, never by the largest value read: a run whose log
holds one value of 10^12 is analysed within 2 GB of the same run without it (README, acceptance of
issue 13). Measured as the peak resident memory of `kafka-chaos analyze`'s whole process tree (the
harness, Spark's JVM and its Python workers), one fresh process tree each."""

import shutil
import subprocess
import sys
import time

import psutil
import pytest
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tests.stored_run import make_analysable_run

GB = 1 << 30


def peak_rss_of_analyze(run_dir) -> tuple[int, int]:
    """(exit code, peak RSS in bytes of the process and all its children, sampled every 20 ms). Its output
    goes to run_dir/../analyze.out, shown when the exit code is not the one expected."""
    out = open(run_dir.parent / "analyze.out", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "harness", "analyze", str(run_dir), "--spark-master", "local[2]"],
                            stdout=out, stderr=subprocess.STDOUT)
    out.close()
    root, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            break
        total = 0
        for p in tree:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        peak = max(peak, total)
        time.sleep(0.02)
    return proc.wait(timeout=300), peak


@pytest.mark.nightly  # a minute of Spark
def test_a_stray_value_of_10_to_the_12_costs_no_memory(tmp_path):
    (tmp_path / "clean").mkdir()
    clean = make_analysable_run(tmp_path / "clean", partitions=3, per_partition=100_000)
    stray = shutil.copytree(clean.path, tmp_path / "stray" / clean.path.name)
    part = stray / "off" / "log.parquet" / "part-00000.parquet"
    log = pq.read_table(part)
    values = log.column("value").to_numpy().copy()
    values[50_000] = 10**12  # one record in the middle of partition 0 holds a value nobody sent
    pq.write_table(log.set_column(2, "value", pc.cast(values, log.schema.field("value").type)), part)

    code_clean, peak_clean = peak_rss_of_analyze(clean.path)
    code_stray, peak_stray = peak_rss_of_analyze(stray)
    said = {name: (path.parent / "analyze.out").read_text(errors="replace")[-3000:]
            for name, path in (("clean", clean.path), ("stray", stray))}
    assert (code_clean, code_stray) == (0, 1), said  # the stray value is `unexpected`, a fatal anomaly
    print(f"peak RSS: {peak_clean / GB:.2f} GB clean, {peak_stray / GB:.2f} GB with a value of 10^12")
    assert peak_stray - peak_clean < 2 * GB
