"""The analysis as a standalone Spark application, the same as `kafka-chaos analyze`:

    spark-submit harness/job.py --run reports/<run-id> [--partial]

It rewrites the run's summary.json, anomalies/ and index.html, prints the summary, and exits as
`kafka-chaos analyze` does: 0 pass (with --partial, also when variants are incomplete), 1 fail, 2 a
missing file, 3 damaged data or a verdict neither pass nor fail. The status is decided from the
verdict before the report is rendered: a rendering failure is a warning, never another status.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # spark-submit runs this file by path
    from harness.exits import exit_for_exception, exit_for_verdict
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
    except Exception as e:
        code, message = exit_for_exception(e)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(int(code))
    code = exit_for_verdict(summary["verdict"], args.partial)
    print(json.dumps(summary, indent=2))
    try:
        write_report(folder)
    except Exception as e:
        print(f"warning: the report could not be rendered ({type(e).__name__}: {e}); the verdict stands; "
              f"retry with: kafka-chaos report {folder.path}", file=sys.stderr)
    sys.exit(int(code))


if __name__ == "__main__":
    main()
