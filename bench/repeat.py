"""What a series costs beyond its workload: `kafka-chaos run EXPERIMENT --repeat N` timed as a user runs it.

Runs the series in a child process (wall time from start to exit), then reads every run's summary.json:
the workload time of a run is the sum of its variants' produce_seconds (the producer's own time, faults
included). Prints, measured in this one series:

    per-run overhead = series wall time / N - mean workload time per run

which is what the cluster, the proxies, Spark and the report add to each run (issue 44 asks for at
most 3 s on 2 cores for the quickstart; issue 25 asked 5 s), and the share of the series spent producing; then
where that time went, from each summary's `seconds` (the run's stages, averaged over the series; a variant's
stages summed over its variants), the series' own cluster stages from aggregate.json's `cluster_seconds` (one
cluster kept for the series: its start, the restores between runs, its stop; a series of an older release,
which started a cluster a run, has none), and what no stage holds (the process start, the reports). A series
that is the first Spark start for this Java and pyspark writes Spark's class cache (engine/classcache.py, ~10 s
once, and that start is slower): the bench says so, since that series' figure is not what the next ones cost.

    python bench/repeat.py [--experiment experiments/quickstart.yaml] [--repeat 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart.yaml"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--keep", type=Path, default=None, help="keep the run folders here")
    args = ap.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="bench-repeat-"))
    cache = class_cache()
    cached = cache is None or cache.exists()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", "run", args.experiment, "--repeat", str(args.repeat),
                           "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    try:
        summaries = [json.loads(p.read_text()) for p in sorted(out.glob("*/summary.json"))]
        aggregates = [json.loads(p.read_text()) for p in sorted(out.glob("*/aggregate.json"))]
        if proc.returncode not in (0, 1) or len(summaries) != args.repeat:
            print(f"the series did not complete (exit {proc.returncode}, {len(summaries)} runs): "
                  f"{proc.stderr.strip()[-500:]}", file=sys.stderr)
            return 3
        workload = [sum(v.get("produce_seconds", 0.0) for v in s["variants"].values()) for s in summaries]
        mean_workload = sum(workload) / len(workload)
        per_run = wall / args.repeat
        overhead = per_run - mean_workload
        print(f"{args.repeat} runs of {Path(args.experiment).name} in {wall:.1f} s: {per_run:.1f} s a run, "
              f"{mean_workload:.1f} s of it producing")
        print(f"per-run overhead: {overhead:.1f} s ({'within' if overhead <= 3 else 'above'} the 3 s target); "
              f"producing is {100 * mean_workload / per_run:.0f}% of the series")
        stages: dict[str, float] = {}
        for s in summaries:
            for name, seconds in s.get("seconds", {}).items():
                stage = name.split(": ", 1)[-1]  # the variants' stages together
                if stage == "cluster up" and aggregates and "cluster_seconds" in aggregates[0]:
                    continue  # the kept cluster's start is the series' own line below (a run waits for no start)
                stages[stage] = stages.get(stage, 0.0) + seconds / len(summaries)
        for name, seconds in (aggregates[0].get("cluster_seconds", {}) if aggregates else {}).items():
            stages[f"series: {name}"] = seconds / len(summaries)  # once for the series (restores: between runs)
        for stage, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
            print(f"  {stage:<28} {seconds:6.2f} s a run")
        print(f"  {'in no stage':<28} {per_run - sum(stages.values()):6.2f} s a run")
        if not cached and cache.exists():
            print(f"note: this series wrote Spark's class cache ({cache}): its first Spark start and its stop took "
                  "~10-15 s more than any later series' will; run the bench again for the usual figure")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


def class_cache() -> Path | None:
    """The class-cache archive the series' Spark start uses or writes (None when the cache is off)."""
    sys.path.insert(0, str(ROOT))
    from harness.engine.classcache import ClassCache

    cache = ClassCache.for_this_machine()
    return cache.path if cache is not None else None


if __name__ == "__main__":
    sys.exit(main())
