"""An exploration's folder (`kafka-chaos explore`): <out>/<stamp>-<experiment>-explore-<id>/

    exploration.json      what was asked: experiment, seed, guided or random, when each session started
    experiment.yaml       the experiment (its explore: space) as given, secrets masked
    tries.jsonl           one line per try, appended when the try ends (the journal --resume replays)
    findings.jsonl        one line per finding, appended when its investigation ends
    tries/<run folder>/   each try's run folder; pruned to summary.json, faults.jsonl and spec.yaml unless it
                          showed a finding (or --keep-all)
    findings/<id>/        experiment.yaml (the minimal schedule: `kafka-chaos run` reproduces it), finding.json,
                          evidence.txt, runs/ (the shrink's and the rate's run folders)
    cluster-<id>/         the long-lived cluster's folder (cluster/kept.py: its logs/ holds the broker, proxy and
                          admin logs), a new one for each rebuild
    logs/                 spark.log
    index.html            the exploration page

The journals are append-only JSON lines written whole and flushed to disk, so a harness killed mid-try (even
with -9) leaves every earlier try readable; a last line cut short is the try that was running, dropped.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..runfolder import LOGS, RunFolderError, _new_path, _write_atomic

MARKER = "exploration.json"
TRIES = "tries.jsonl"
FINDINGS = "findings.jsonl"
KEPT_WHEN_PRUNED = ("summary.json", "faults.jsonl", "spec.yaml")
JOURNAL_BYTES = 256 * 1024 * 1024  # a night of tries is a few MiB; more is not a journal this harness wrote


class ExplorationFolder:
    def __init__(self, path: Path | str):
        self.path = Path(path)

    @classmethod
    def create(cls, out: Path, experiment: str, facts: dict, experiment_text: str) -> "ExplorationFolder":
        folder = cls(_new_path(out, f"{experiment}-explore"))
        (folder.path / LOGS).mkdir(parents=True)
        (folder.path / "tries").mkdir()
        (folder.path / "findings").mkdir()
        folder.experiment_path.write_text(experiment_text)
        folder.write_facts({"exploration_id": folder.path.name, "experiment": experiment, **facts})
        return folder

    @classmethod
    def open(cls, path: Path) -> "ExplorationFolder":
        """An existing exploration (for --resume); RunFolderError when `path` is not one."""
        folder = cls(path)
        if not (folder.path / MARKER).is_file():
            raise RunFolderError(f"{path}: not an exploration folder (no {MARKER}; `kafka-chaos explore` makes one)")
        folder.facts()  # readable, or RunFolderError
        return folder

    # -- layout -------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.path.name

    @property
    def experiment_path(self) -> Path:
        return self.path / "experiment.yaml"

    @property
    def logs(self) -> Path:
        return self.path / LOGS

    @property
    def spark_log(self) -> Path:
        return self.logs / "spark.log"

    @property
    def report(self) -> Path:
        return self.path / "index.html"

    def tries_dir(self) -> Path:
        return self.path / "tries"

    def finding_dir(self, finding: str) -> Path:
        return self.path / "findings" / finding

    # -- what was asked ------------------------------------------------------------------------
    def write_facts(self, facts: dict) -> None:
        _write_atomic(self.path / MARKER, json.dumps(facts, indent=2) + "\n")

    def facts(self) -> dict:
        path = self.path / MARKER
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise RunFolderError(f"{path}: unreadable ({e})", damaged=True) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("seed"), int) or not isinstance(doc.get("experiment"),
                                                                                                str):
            raise RunFolderError(f"{path}: not an exploration's facts (seed, experiment)", damaged=True)
        return doc

    # -- the journals ----------------------------------------------------------------------------
    def add_try(self, row: dict) -> None:
        _append(self.path / TRIES, row)

    def add_finding(self, row: dict) -> None:
        _append(self.path / FINDINGS, row)

    def tries(self) -> list[dict]:
        return _read_journal(self.path / TRIES)

    def findings(self) -> list[dict]:
        return _read_journal(self.path / FINDINGS)

    def write_finding(self, ident: str, row: dict, experiment_yaml: str, first: dict) -> None:
        """findings/<id>/: the minimal experiment, the finding's facts and its evidence (the first try's client
        and broker log lines, evidence.py)."""
        from .evidence import evidence_text

        where = self.finding_dir(ident)
        where.mkdir(parents=True, exist_ok=True)
        (where / "experiment.yaml").write_text(experiment_yaml)
        (where / "finding.json").write_text(json.dumps(row, indent=2, sort_keys=True) + "\n")
        (where / "evidence.txt").write_text(evidence_text(row, first, Path(first.get("folder") or self.path)))

    def prune(self, run_folder: Path) -> None:
        """A try that showed nothing new to keep: only its summary, faults and spec stay."""
        run_folder = Path(run_folder)
        if not run_folder.is_dir() or self.tries_dir() not in run_folder.parents:
            return
        for entry in run_folder.iterdir():
            if entry.name in KEPT_WHEN_PRUNED:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _append(path: Path, row: dict) -> None:
    line = json.dumps(row, sort_keys=True) + "\n"
    with open(path, "a") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def _read_journal(path: Path) -> list[dict]:
    """Every whole line; a last line cut short (the harness died writing it) is dropped, a damaged line
    elsewhere is RunFolderError (exit 3)."""
    if not path.exists():
        return []
    if path.stat().st_size > JOURNAL_BYTES:
        raise RunFolderError(f"{path}: over {JOURNAL_BYTES // 2**20} MiB: not a journal this harness wrote",
                             damaged=True)
    lines = path.read_text().split("\n")
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            if number == len(lines):  # no newline after it: cut short by a kill
                break
            raise RunFolderError(f"{path}: line {number} is not JSON", damaged=True) from None
        if not isinstance(row, dict):
            raise RunFolderError(f"{path}: line {number} is not an object", damaged=True)
        rows.append(row)
    return rows
