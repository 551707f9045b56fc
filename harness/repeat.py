"""A series of runs of one experiment: `kafka-chaos run EXPERIMENT --repeat N`.

    series = Series(spec, out, count=5, first_seed=42)
    series.execute(run_one)          # run_one(index, seed, schedule) -> (RunFolder, summary, failure)

Each run is an ordinary run folder in <out> (Run.execute, unchanged), with seeds seed, seed+1, ...
(or the same seed every time). Each run's fault schedule is planned when that run starts, never ahead
(planning 10,000 seeds before the first run took minutes); a seed whose plan is refused (its faults
would meet on one broker) stops the series there, as bad input (exit 2, `refused`). The seeds are checked
to stay 64-bit integers before anything starts (check_seeds). After the last run, or when one was interrupted, aggregate.json
goes to a folder of its own, <out>/<stamp>-<experiment>-repeat-<id>/ (runfolder.SeriesFolder),
with the facts of the series: the seeds, how many runs were asked for, whether it completed and,
with --until-fail, the run that failed (its faults.jsonl replays it). The caller (the CLI) draws
progress and renders the reports; nothing here prints.

The runs share one cluster (cluster/kept.py: the caller's KeptCluster, set as `cluster`), restored between
runs and rebuilt when it is not healthy: aggregate.json lists each rebuild (`rebuilds`: after which run, why)
and the seconds the series spent on its clusters (`cluster_seconds`: up, restoring, down). A cluster that can
be neither restored nor rebuilt (an external one) stops the series (`stopped`, exit 3).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from . import signals, verdict
from .aggregate import aggregate
from .exits import Exit, UsageError, exit_for_verdict
from .schedule import PlannedFault, ScheduleError, plan
from .runfolder import RunFolder, SeriesFolder
from .spec import ExperimentSpec
from .status import COMPLETE, INCOMPLETE, INTERRUPTED


SEED_RANGE = (-(2**63), 2**63 - 1)  # a seed is a 64-bit integer (spec.py, --seed, spec.yaml as analyze reads it)


def seeds(first: int, count: int, same: bool = False) -> list[int]:
    return [first] * count if same else [first + i for i in range(count)]


def check_seeds(first: int, count: int, same: bool, named: str) -> None:
    """The series' last seed (first + count - 1) must stay a 64-bit integer: UsageError naming `named`
    (--seed, or the experiment's seed field) and the range, before anything starts."""
    last = first if same else first + count - 1
    lo, hi = SEED_RANGE
    if not lo <= last <= hi:
        raise UsageError(f"{named} {first} with --repeat {count}: the series' seeds would run to {last}, beyond the "
                         f"allowed range {lo}..{hi} (a 64-bit integer); give a smaller seed or --same-seed")


def exit_code(summaries: list[dict], interrupted: int | None = None) -> Exit:
    """Interrupted: 130/143; else the series verdict's (verdict.series_verdict): 1 when any run failed,
    3 when any run errored or could not be judged, 0 when every run passed."""
    if interrupted is not None:
        return Exit(interrupted)
    return exit_for_verdict(verdict.series_verdict([s.get("verdict") for s in summaries]))


RunOne = Callable[[int, int, "list[PlannedFault]"], "tuple[RunFolder, dict | None, BaseException | None]"]


class Series:
    def __init__(self, spec: ExperimentSpec, out: Path, count: int, first_seed: int, same_seed: bool = False,
                 until_fail: bool = False, replay: Path | None = None, schedule: list[PlannedFault] | None = None,
                 experiment: Path | None = None):
        """schedule: the replayed one (every run applies it), or the first seed's plan if already made (the
        preflight makes it); experiment: the file a refused plan is named by."""
        self.spec, self.out, self.count = spec, out, count
        self._planned = (first_seed, schedule) if schedule is not None else None  # (seed, schedule): the last plan
        self.experiment = experiment or Path(spec.name)
        self.refused: ScheduleError | None = None  # a seed's plan refused: the series stopped before that run
        self.seeds = seeds(first_seed, count, same_seed)
        self.same_seed, self.until_fail, self.replay = same_seed, until_fail, replay
        self.folder = SeriesFolder.create(out, spec.name)
        self.summaries: list[dict] = []
        self.failed_run: RunFolder | None = None  # with until_fail: the run that failed
        self.interrupted: int | None = None
        self.started_at = _now()
        self.aggregate: dict | None = None
        self.cluster = None  # the series' KeptCluster (cluster/kept.py), for its rebuilds and seconds
        self.stopped: str | None = None  # why the series could not go on (run_one sets it): exit 3

    def execute(self, run_one: RunOne) -> dict:
        """Run the series; always leaves aggregate.json (of what ran). An interrupt stops the series
        (recorded in self.interrupted); any other failure of a run is in its summary and the series goes on."""
        try:
            for index, seed in enumerate(self.seeds):
                try:
                    schedule = self.schedule(seed)
                except ScheduleError as e:
                    self.refused = e
                    break
                folder, summary, failure = run_one(index, seed, schedule)
                if summary is not None:
                    self.summaries.append(summary)
                # A signal may also have landed where it was recorded, not raised (rendering the report).
                code = signals.interrupt_code(failure) if failure is not None else signals.received()
                if code is not None:
                    self.interrupted = code
                    break
                if self.until_fail and summary is not None and summary.get("verdict") == verdict.FAIL:
                    self.failed_run = folder
                    break
                if self.stopped is not None:
                    break
        except signals.Interrupted as e:  # between two runs
            self.interrupted = e.code
        with signals.deferred():
            self.aggregate = self._write()
        return self.aggregate

    def schedule(self, seed: int) -> list[PlannedFault]:
        """The run's fault schedule, planned now (a replayed one, or the same seed's again, is reused)."""
        if self.replay is not None and self._planned is not None:
            return self._planned[1]
        if self._planned is None or self._planned[0] != seed:
            try:
                self._planned = (seed, plan(self.spec, seed))
            except ScheduleError as e:
                raise ScheduleError(f"{self.experiment}: seed {seed}: {e}") from None
        return self._planned[1]

    @property
    def exit_code(self) -> Exit:
        if self.refused is not None and self.interrupted is None:
            return Exit.USAGE
        if self.stopped is not None and self.interrupted is None:
            return Exit.INFRA
        return exit_code(self.summaries, self.interrupted)

    def _write(self) -> dict:
        doc = aggregate(self.summaries)
        doc = {"series_id": self.folder.series_id, "experiment": self.spec.name, **doc,
               **self.facts(len(self.summaries))}
        self.folder.write_aggregate(doc)
        return doc

    def facts(self, ran: int) -> dict:
        if self.interrupted is not None:
            status = INTERRUPTED
        elif self.failed_run is not None:
            status = "stopped at the first failure"
        elif self.refused is not None or self.stopped is not None:
            status = INCOMPLETE
        else:
            status = COMPLETE if ran == self.count else INCOMPLETE
        out = {"status": status, "complete": status != INTERRUPTED and (ran == self.count or
                                                                        self.failed_run is not None),
               "requested": self.count, "seeds": self.seeds[:ran], "same_seed": self.same_seed,
               "until_fail": self.until_fail, "started_at": self.started_at, "ended_at": _now()}
        if self.replay is not None:
            out["replayed_from"] = str(self.replay)
        if self.refused is not None:
            out["refused"] = str(self.refused)
        if self.stopped is not None:
            out["stopped"] = self.stopped
        if self.cluster is not None:
            out["rebuilds"] = list(self.cluster.rebuilds)
            out["cluster_seconds"] = dict(self.cluster.seconds)
        if self.failed_run is not None:
            out["failed_run"] = self.failed_run.run_id
            out["failed_faults"] = str(self.failed_run.faults_path)
        return out


def reaggregate(folder: SeriesFolder) -> dict:
    """aggregate.json computed again from its runs' summaries (when every run folder is still beside it),
    keeping the series' facts: what `kafka-chaos report SERIES_DIR` does before rendering."""
    doc = folder.read_aggregate()
    summaries = folder.run_summaries(doc)
    if summaries and len(summaries) == len(doc.get("runs", [])):
        doc = {**doc, **aggregate(summaries), "experiment": doc.get("experiment")}
        folder.write_aggregate(doc)
    return doc


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
