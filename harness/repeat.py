"""A series of runs of one experiment: `kafka-chaos run EXPERIMENT --repeat N`.

    series = Series(spec, out, count=5, first_seed=42)
    series.execute(run_one)          # run_one(index, seed) -> (RunFolder, summary, failure)

Each run is an ordinary run folder in <out> (Run.execute, unchanged), with seeds seed, seed+1, ...
(or the same seed every time). After the last run, or when one was interrupted, aggregate.json
goes to a folder of its own, <out>/<stamp>-<experiment>-repeat-<id>/ (runfolder.SeriesFolder),
with the facts of the series: the seeds, how many runs were asked for, whether it completed and,
with --until-fail, the run that failed (its faults.jsonl replays it). The caller (the CLI) draws
progress and renders the reports; nothing here prints.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from . import signals, verdict
from .aggregate import aggregate
from .exits import Exit, exit_for_verdict
from .faults.schedule import ScheduleError, plan
from .runfolder import RunFolder, SeriesFolder
from .spec import ExperimentSpec
from .status import COMPLETE, INCOMPLETE, INTERRUPTED


def seeds(first: int, count: int, same: bool = False) -> list[int]:
    return [first] * count if same else [first + i for i in range(count)]


def check_schedules(spec: ExperimentSpec, experiment: Path, series_seeds: list[int]) -> None:
    """Every seed's plan, before anything starts: a seed whose faults could meet on one broker is bad input."""
    for seed in dict.fromkeys(series_seeds):
        try:
            plan(spec, seed)
        except ScheduleError as e:
            raise ScheduleError(f"{experiment}: seed {seed}: {e}") from None


def exit_code(summaries: list[dict], interrupted: int | None = None) -> Exit:
    """Interrupted: 130/143; else the series verdict's (verdict.series_verdict): 1 when any run failed,
    3 when any run errored or could not be judged, 0 when every run passed."""
    if interrupted is not None:
        return Exit(interrupted)
    return exit_for_verdict(verdict.series_verdict([s.get("verdict") for s in summaries]))


RunOne = Callable[[int, int], "tuple[RunFolder, dict | None, BaseException | None]"]


class Series:
    def __init__(self, spec: ExperimentSpec, out: Path, count: int, first_seed: int, same_seed: bool = False,
                 until_fail: bool = False, replay: Path | None = None):
        self.spec, self.out, self.count = spec, out, count
        self.seeds = seeds(first_seed, count, same_seed)
        self.same_seed, self.until_fail, self.replay = same_seed, until_fail, replay
        self.folder = SeriesFolder.create(out, spec.name)
        self.summaries: list[dict] = []
        self.failed_run: RunFolder | None = None  # with until_fail: the run that failed
        self.interrupted: int | None = None
        self.started_at = _now()
        self.aggregate: dict | None = None

    def execute(self, run_one: RunOne) -> dict:
        """Run the series; always leaves aggregate.json (of what ran). An interrupt stops the series
        (recorded in self.interrupted); any other failure of a run is in its summary and the series goes on."""
        try:
            for index, seed in enumerate(self.seeds):
                folder, summary, failure = run_one(index, seed)
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
        except signals.Interrupted as e:  # between two runs
            self.interrupted = e.code
        with signals.deferred():
            self.aggregate = self._write()
        return self.aggregate

    @property
    def exit_code(self) -> Exit:
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
        else:
            status = COMPLETE if ran == self.count else INCOMPLETE
        out = {"status": status, "complete": status != INTERRUPTED and (ran == self.count or
                                                                        self.failed_run is not None),
               "requested": self.count, "seeds": self.seeds[:ran], "same_seed": self.same_seed,
               "until_fail": self.until_fail, "started_at": self.started_at, "ended_at": _now()}
        if self.replay is not None:
            out["replayed_from"] = str(self.replay)
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
