"""The long soak's memory and the final read's throughput, measured in one run.

1. Runs `kafka-chaos run experiments/soak.yaml` (24M records per variant at 20,000 msg/s) as a child
   process and samples, every --every seconds, the resident memory (RSS) of its whole process tree:
   the harness, Spark's JVM and Python workers, the broker, the proxy. Prints the peak of the sum and
   of each kind of process, the run's exit status and counts, and the soak's own final read rate
   (records in log.parquet / time from the end of the workload to the read's _SUCCESS).
2. Then, as bench/read.py does, on one Tansu broker behind its proxy: --records records over
   --partitions partitions, read --repeat times alternately by a bare confluent-kafka consumer loop
   and by the harness's Spark data source (split into offset ranges of --split records) into a
   no-op sink; prints both rates and their ratio (goal >= 0.9).

    python bench/soak.py [--experiment experiments/soak.yaml] [--records 3000000] [--partitions 6]
                         [--split 1000000] [--repeat 3] [--skip-soak | --skip-read]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

try:
    import psutil  # noqa: E402
except ImportError:
    sys.exit(f"{Path(__file__).name}: needs psutil, which the test extra installs: pip install -e '.[test]'")

GIB = 1 << 30


def kind_of(p: psutil.Process) -> str:
    try:
        line = " ".join(p.cmdline())
    except psutil.Error:
        return "other"
    if "java" in p.name() or "java" in line.split(" ")[0]:
        return "spark jvm"
    if "pyspark.daemon" in line or "pyspark/worker" in line or "pyspark.worker" in line:
        return "spark python workers"
    if "tansu" in line:
        return "broker"
    if "harness.proxy" in line or "toxiproxy" in line:
        return "proxy"
    return "harness" if "harness" in line or "kafka-chaos" in line else "other"


class TreeMemory:
    """Samples the RSS of a process and all its descendants on a thread; keeps the peaks."""

    def __init__(self, pid: int, every: float):
        self.root, self.every = psutil.Process(pid), every
        self.peak_total, self.peak_at = 0, 0.0
        self.peak_by_kind: dict[str, int] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every)

    def sample(self) -> None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        total, by_kind = 0, {}
        for p in procs:
            try:
                rss = p.memory_info().rss
            except psutil.Error:
                continue
            total += rss
            k = kind_of(p)
            by_kind[k] = by_kind.get(k, 0) + rss
        self.samples += 1
        if total > self.peak_total:
            self.peak_total, self.peak_at = total, time.monotonic() - self._t0
        for k, rss in by_kind.items():
            self.peak_by_kind[k] = max(self.peak_by_kind.get(k, 0), rss)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def read_window(variant_dir: Path) -> tuple[float, float] | None:
    """(start, end) of a variant's final read in epoch seconds, from the delivery log's close (the workload's
    end; healing and the wait until readable are in it too, usually well under a second) to the _SUCCESS
    Spark writes last."""
    done, acks = variant_dir / "log.parquet" / "_SUCCESS", variant_dir / "acks.parquet"
    if not done.exists() or not acks.exists():
        return None
    return acks.stat().st_mtime, done.stat().st_mtime


def soak(experiment: Path, every: float) -> str:
    out = Path(tempfile.mkdtemp(prefix="kafka-chaos-soak-"))
    cmd = [sys.executable, "-m", "harness", "run", str(experiment), "--out", str(out)]
    print(f"soak: {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    memory = TreeMemory(child.pid, every)
    tail: list[str] = []
    for line in child.stdout:
        tail = (tail + [line.rstrip()])[-40:]
    code = child.wait()
    memory.stop()
    elapsed = time.monotonic() - t0
    runs = [p for p in out.iterdir() if (p / "summary.json").exists()]
    if not runs:
        print("\n".join(tail))
        raise SystemExit(f"soak: no run folder in {out} (exit {code})")
    run = runs[0]
    summary = json.loads((run / "summary.json").read_text())
    print(f"\nsoak: exit {code}, status {summary.get('status')}, verdict {summary.get('verdict')}, "
          f"{elapsed / 60:.1f} min in all; run folder {run}")
    for name, v in summary.get("variants", {}).items():
        window = read_window(run / name)
        files = len(list((run / name / "log.parquet").glob("*.parquet")))
        rate = ""
        if window:
            records = v.get("received", 0) + v.get("unexpected", 0)
            rate = f", final read {records:,} records in {window[1] - window[0]:.0f} s " \
                   f"({records / max(window[1] - window[0], 1e-9):,.0f} records/s, {files} files)"
        print(f"  {name}: sent {v.get('sent', 0):,}, acked {v.get('acked', 0):,}, duplicates "
              f"{v.get('duplicates', 0):,}, lost {v.get('lost', 0):,}, produce {v.get('produce_seconds')} s, "
              f"unavailable {v.get('unavailable_s')} s, latency {v.get('latency_ms')}{rate}")
    print(f"\nsoak peak memory (RSS of the whole process tree, {memory.samples} samples every {every:g} s): "
          f"{memory.peak_total / GIB:.2f} GiB at {memory.peak_at / 60:.1f} min")
    for k, rss in sorted(memory.peak_by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  peak {k:<22} {rss / GIB:6.2f} GiB")
    return f"soak: exit {code}, verdict {summary.get('verdict')}, peak memory of the process tree " \
           f"{memory.peak_total / GIB:.2f} GiB"


def read_comparison(records: int, partitions: int, split: int, repeat: int) -> str:
    from read import compare

    from harness.engine.session import spark_session, stop_session
    from harness.cluster.local import LocalTansuCluster
    from harness.spec import LocalClusterSpec
    from harness.engine.readback import read_topic
    from harness.workload.deliverylog import DeliveryLog
    from harness.workload.producer import produce
    from harness.cluster.topic import create_topic

    def spark_read(spark, bootstrap: str, topic: str) -> float:
        df = read_topic(spark, {"bootstrap.servers": bootstrap}, topic, partitions, split=split)
        t = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        return records / (time.perf_counter() - t)

    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalTansuCluster(LocalClusterSpec(), Path(tmp))
        spark = spark_session()
        try:
            cluster.up()
            topic = "bench-soak-read"
            create_topic(cluster.client, topic, partitions, 1)
            r = produce(cluster.client, topic, partitions, records, {"linger.ms": 20},
                        DeliveryLog(Path(tmp) / "acks.parquet", partitions))
            assert r.acked == records, r
            print(f"\nread: {records:,} records, {partitions} partitions, split {split:,}, through the proxy, "
                  f"medians of {repeat} ({os.cpu_count()} cores)")
            medians = compare(lambda: spark_read(spark, cluster.bootstrap, topic), cluster.bootstrap, topic,
                              partitions, records, repeat)
        finally:
            stop_session(spark)
            cluster.down()
    bare, spark_rate = medians["bare, same settings"], medians["spark"]
    return f"read: spark data source {spark_rate:,.0f} records/s, bare consumer loop with the same settings " \
           f"{bare:,.0f} records/s, ratio {spark_rate / bare:.2f}x (goal >= 0.9)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", type=Path, default=ROOT / "experiments" / "soak.yaml")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between memory samples")
    ap.add_argument("--records", type=int, default=3_000_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--split", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-soak", action="store_true")
    ap.add_argument("--skip-read", action="store_true")
    args = ap.parse_args()
    lines = []
    if not args.skip_read:
        lines.append(read_comparison(args.records, args.partitions, args.split, args.repeat))
    if not args.skip_soak:
        lines.append(soak(args.experiment.resolve(), args.every))
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
