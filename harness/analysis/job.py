"""The analysis as a standalone Spark application, the same as `kafka-chaos analyze`:

    spark-submit harness/analysis/job.py --run reports/<run-id> [--partial]

It rewrites the run's summary.json, anomalies/ and index.html, and prints the summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # spark-submit runs this file by path
    from harness.exits import exit_for_exception
    from harness.preflight import stored_spec
    from harness.report import write_report
    from harness.run import reanalyze
    from harness.runfolder import RunFolder

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, type=Path, help="run folder holding spec.yaml and <variant>/*.parquet")
    ap.add_argument("--master", default=None, help="Spark master (default: local[*], or spark-submit's)")
    ap.add_argument("--partial", action="store_true", help="analyse the complete variants, mark the rest incomplete")
    args = ap.parse_args(argv)
    folder = RunFolder(args.run)
    try:
        summary = reanalyze(folder, stored_spec(folder, args.partial), args.master, args.partial)
        write_report(folder)
    except Exception as e:
        code, message = exit_for_exception(e)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(int(code))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
