"""What an exploration's try costs beyond its workload, and what guidance buys: `kafka-chaos explore` timed as
a user runs it.

    python bench/explore.py [--experiment experiments/explore/embedded.yaml] [--tries 20] [--keep DIR]

runs one exploration in a child process and reads its tries.jsonl: each try's wall seconds (drawing, the
run of every variant on the long-lived cluster, the cluster's heal and health check, the events gathered)
minus its workload seconds (the variants' produce_seconds) is its overhead. The first try also starts the
cluster and waits for Spark: it is shown on its own line and left out of the mean. Issue 44 asks for at most
3 s a try on the embedded default (20,000 records at 20,000/s, both variants), at most 10 s on local Kafka.

    python bench/explore.py --compare [--budget 10m] [--seeds 1,2]

runs, for each seed, a guided exploration and a purely random one (--random: every try drawn fresh) on the
same budget, one after the other, and prints distinct events and findings at each minute for each, and at
the end. Findings are what matters; events say whether an exploration still learns. A difference measured
on two seeds is an anecdote, and the table says how many seeds it is over.
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


def explore(experiment: str, out: Path, extra: list[str]) -> tuple[int, float, Path | None]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", "explore", experiment, "--out", str(out), *extra],
                          cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    folders = sorted(out.glob("*-explore-*/tries.jsonl"))
    if proc.returncode not in (0, 1) or not folders:
        print(f"the exploration did not complete (exit {proc.returncode}): {proc.stderr.strip()[-600:]}",
              file=sys.stderr)
        return proc.returncode, wall, None
    return proc.returncode, wall, folders[-1].parent


def tries_of(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "tries.jsonl").read_text().splitlines() if x.strip()]


def cost(args) -> int:
    out = args.keep or Path(tempfile.mkdtemp(prefix="bench-explore-"))
    try:
        code, wall, folder = explore(args.experiment, out, ["--tries", str(args.tries), "--seed", str(args.seed)])
        if folder is None:
            return 3
        tries = tries_of(folder)
        ran = [t for t in tries if t["status"] == "complete"]
        print(f"{len(tries)} tries of {Path(args.experiment).name} in {wall:.1f} s wall (exit {code}; "
              f"{len(tries) - len(ran)} could not run)")
        if not ran:
            return 3
        first, rest = ran[0], ran[1:]
        print(f"  first try: {first['seconds']:.1f} s, {first['workload_seconds']:.1f} s of it producing "
              "(it also starts the cluster and waits for Spark)")
        if rest:
            over = [t["seconds"] - t["workload_seconds"] for t in rest]
            mean = sum(over) / len(over)
            print(f"  tries 2-{len(tries)}: {sum(t['seconds'] for t in rest) / len(rest):.1f} s a try, "
                  f"{sum(t['workload_seconds'] for t in rest) / len(rest):.1f} s of it producing")
            print(f"  overhead beyond the workload: mean {mean:.2f} s a try, max {max(over):.2f} s, "
                  f"min {min(over):.2f} s over {len(over)} tries")
        investigations = wall - sum(t["seconds"] for t in tries)
        print(f"  outside tries (process start, Spark start, findings' shrink and rate runs, page): "
              f"{investigations:.1f} s")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


def curve(tries: list[dict], step: float) -> list[tuple[float, int, int]]:
    """(seconds, distinct events, findings) at each step of the exploration's time."""
    points, events, findings, k = [], set(), set(), 1
    for t in tries:
        end = t["at_s"] + t["seconds"]
        while end > k * step:
            points.append((k * step, len(events), len(findings)))
            k += 1
        events |= set(t.get("events", []))
        if t.get("signature"):
            findings.add(tuple(t["signature"]))
    points.append((k * step, len(events), len(findings)))
    return points


def compare(args) -> int:
    out = args.keep or Path(tempfile.mkdtemp(prefix="bench-explore-compare-"))
    try:
        results = {}
        for seed in args.seeds.split(","):
            for mode, extra in (("guided", []), ("random", ["--random"])):
                code, wall, folder = explore(args.experiment, out / f"{mode}-{seed}",
                                             ["--budget", args.budget, "--seed", seed, *extra])
                if folder is None:
                    return 3
                results[(mode, seed)] = tries_of(folder)
        step = 60.0
        print(f"distinct events / findings (distinct signatures) by minute, {Path(args.experiment).name}, "
              f"budget {args.budget}, over {len(args.seeds.split(','))} seed(s):")
        for (mode, seed), tries in results.items():
            points = curve(tries, step)
            line = " ".join(f"{e}/{f}" for _, e, f in points)
            print(f"  {mode:>6} seed {seed}: {len(tries)} tries; {line}")
        for mode in ("guided", "random"):
            ends = [curve(t, step)[-1] for (m, _), t in results.items() if m == mode]
            print(f"  {mode}: at the end {sum(e for _, e, _ in ends) / len(ends):.1f} events and "
                  f"{sum(f for _, _, f in ends) / len(ends):.1f} findings on average")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", default=str(ROOT / "experiments" / "explore" / "embedded.yaml"))
    ap.add_argument("--tries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compare", action="store_true", help="guided against purely random exploration")
    ap.add_argument("--budget", default="10m", help="with --compare: each exploration's budget")
    ap.add_argument("--seeds", default="1,2", help="with --compare: the explorations' seeds")
    ap.add_argument("--keep", type=Path, default=None, help="keep the exploration folders here")
    args = ap.parse_args()
    return compare(args) if args.compare else cost(args)


if __name__ == "__main__":
    sys.exit(main())
