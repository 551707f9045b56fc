"""An exploration from start to end: its folder (new, or resumed), its one cluster and one Spark session, the
loop, and its page. The CLI checks the input first and draws the progress; nothing here prints.

    folder = start(spec, experiment_text, out, facts)        or  folder = ExplorationFolder.open(path)
    explore(spec, folder, budget_s=1800, max_tries=None, ...)   # returns the Exploration; always writes the page
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from .. import procs, signals
from ..cluster.kept import KeptCluster
from .folder import ExplorationFolder
from .runner import ClusterRunner
from .search import Exploration, Listener


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def start(spec, experiment_text: str, out: Path, seed: int, guided: bool) -> ExplorationFolder:
    return ExplorationFolder.create(out, spec.name, {"seed": seed, "guided": guided, "sessions": []}, experiment_text)


def explore(spec, folder: ExplorationFolder, budget_s: float | None, max_tries: int | None, keep_all: bool = False,
            rate_runs: int = 5, shrink_runs: int = 16, spark_master: str | None = None,
            listener: Listener | None = None, run_listener=None) -> Exploration:
    """Run the exploration in `folder` (continuing its journal) until the budget or the tries are spent.
    An interrupt or an infrastructure failure propagates after the cluster and Spark are stopped and the
    page is written; what was learned is in the journals either way."""
    from ..engine.session import SharedSpark
    from ..report import write_exploration_report

    facts = folder.facts()
    facts["sessions"] = [*facts.get("sessions", []), {"started_at": _now(), "budget_s": budget_s,
                                                      "max_tries": max_tries}]
    folder.write_facts(facts)
    procs.tag_run(folder.path)  # every process started from here on carries the exploration's folder
    spark = SharedSpark(spark_master, folder.spark_log)
    kept = KeptCluster(spec.cluster, folder.path)
    runner = ClusterRunner(spec, folder, kept, spark, spark_master, run_listener)
    exploration = Exploration(spec, runner, folder, facts["seed"], budget_s, max_tries, time.monotonic,
                              guided=facts.get("guided", True), rate_runs=rate_runs, shrink_runs=shrink_runs,
                              keep_all=keep_all, listener=listener or Listener())
    try:
        exploration.execute()
    finally:
        with signals.deferred():  # a second Ctrl-C does not cut the clean-up short
            try:
                kept.close()
            finally:
                spark.stop()
                facts["sessions"][-1]["ended_at"] = _now()
                folder.write_facts(facts)
                write_exploration_report(folder)
    return exploration
