"""How close to its plan the fault schedule lands on this machine: what the tests no longer assert.

The real-cluster tests check that faults.jsonl tells the truth about each fault (tests/journal.py); how late faults
land depends on the machine's load, so it is measured here instead. Runs one experiment through the CLI (default:
the shipped broker-failover on 3 local KRaft nodes from $KAFKA_HOME, else the quickstart on the embedded broker),
then prints, per fault kind, measured in this one run:

    faults, late_s p50 / p95 / max, held short by more than the tolerance, marked late or short (deviation)

and the load average before and after, so a number is read with the load it was measured under.

    python bench/timeliness.py [--experiment FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from harness.nemesis import TOLERANCE  # noqa: E402


def experiment(path: str | None, work: Path) -> Path:
    if path:
        return Path(path)
    if not os.environ.get("KAFKA_HOME"):
        return ROOT / "experiments" / "quickstart.yaml"
    doc = yaml.safe_load((ROOT / "experiments" / "broker-failover.yaml").read_text())
    doc["cluster"] = {"backend": "local", "broker": "kafka", "brokers": 3}
    out = work / "broker-failover-local.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", help="experiment file (default: broker-failover on $KAFKA_HOME, else quickstart)")
    ap.add_argument("--keep", help="keep the run folder under this directory")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kc-timeliness-"))
    try:
        exp = experiment(args.experiment, work)
        load_before = os.getloadavg()
        r = subprocess.run([sys.executable, "-m", "harness", "run", str(exp), "--out", str(work / "reports")],
                           cwd=ROOT, capture_output=True, text=True)
        load_after = os.getloadavg()
        [run_dir] = [p for p in (work / "reports").iterdir() if (p / "faults.jsonl").exists()]
        faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
        print(f"{exp.name}: exit {r.returncode}, {len(faults)} faults; load average {load_before[0]:.1f} before, "
              f"{load_after[0]:.1f} after (1 min)")
        print(f"{'kind':<20} {'faults':>6} {'late p50':>9} {'p95':>7} {'max':>7} {'short':>6} {'marked':>7}")
        for kind in sorted({f["kind"] for f in faults}):
            mine = [f for f in faults if f["kind"] == kind and "late_s" in f]
            late = [f["late_s"] for f in mine]
            short = sum(1 for f in mine if "held_s" in f and f["planned_duration"] - f["held_s"] > TOLERANCE)
            marked = sum(1 for f in mine if "deviation" in f)
            if late:
                print(f"{kind:<20} {len(mine):>6} {statistics.median(late):>8.3f}s {quantile(late, 0.95):>6.3f}s "
                      f"{max(late):>6.3f}s {short:>6} {marked:>7}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
