"""The exploration's runner: one run of a drawn schedule on the long-lived cluster, reduced to an Outcome.

Each run is an ordinary run folder (Run.execute, as `kafka-chaos run` makes it) on the exploration's one
cluster (cluster/kept.py: healed, checked healthy and rebuilt when it is not, after every run) and its one
Spark session. Its report is not rendered (`kafka-chaos report RUN_DIR` renders it later): a try must cost
little beyond its workload. What the run saw is gathered here: the librdkafka errors its sends got
(acks.parquet), its clients' log lines and the brokers' WARN/ERROR lines written while it ran, which are
also kept in the run folder (logs/brokers-during-run.log) as a finding's evidence.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from .. import signals
from ..cluster.kept import topics_of
from ..exits import exit_for_exception
from ..run import Listener, Run
from ..runfolder import RunFolder
from ..schedule import plan
from ..status import COMPLETE, ERROR
from .evidence import DURING_RUN
from .generate import try_spec
from .search import Outcome
from .signature import broker_events, client_events, error_events


def own_transactional_ids(spec, suffix: str):
    """The try's spec with each transactional.id suffixed by the try's own, as each try has its own topic: tries
    share one cluster, and a transactional.id reused over tries carries its coordinator's state (producer id,
    epoch, a transaction a failed try left open, which the next try's init_transactions would have to abort)
    from one try into the next, which a finding's replay on a fresh cluster does not have. "kc-" makes the
    suffix one the signature ignores (signature._NAME); the run folder's spec.yaml holds the id as used."""
    variants = []
    for v in spec.variants:
        tid = spec.producer_config(v).get("transactional.id")
        if tid is not None:
            v = v.model_copy(update={"producer": {**v.producer, "transactional.id": f"{tid}-kc-{suffix}"}})
        variants.append(v)
    return spec.model_copy(update={"variants": variants})


class ClusterRunner:
    def __init__(self, spec, folder, kept, spark, spark_master: str | None = None,
                 listener: Listener | None = None):
        self.spec, self.folder, self.kept, self.spark = spec, folder, kept, spark
        self.spark_master = spark_master
        self.listener = listener or Listener()

    def __call__(self, faults: list[dict], seed: int, variants: tuple[str, ...] | None, purpose: str) -> Outcome:
        spec = try_spec(self.spec, faults)
        if variants:
            spec = spec.model_copy(update={"variants": [v for v in spec.variants if v.name in variants]})
        schedule = plan(spec, seed)  # the generator planned it already: same spec, same seed, same plan
        where = (self.folder.tries_dir() if purpose.startswith("try")
                 else self.folder.finding_dir(purpose.split()[0]) / "runs")
        run_folder = RunFolder.create(where, spec.name)
        spec = own_transactional_ids(spec, run_folder.run_id[-6:])
        started = time.monotonic()
        status, reason = COMPLETE, ""
        marks = self._broker_log_sizes()
        run = None
        try:  # a cluster that cannot start is this run's error (kept.get is called by the run)
            run = Run(spec, run_folder, seed, self.listener, self.spark_master, schedule, self.spark,
                      cluster=self.kept.get)
            run.execute()
        except signals.Interrupted:
            raise
        except Exception as e:  # the run's summary says it too (status error); the exploration goes on
            status, reason = ERROR, exit_for_exception(e)[1]
        summary = run.summary if run is not None else None
        passed = status == COMPLETE and (summary or {}).get("verdict") == "pass"
        rebuilt = self.kept.restore(topics_of(summary), passed)
        lines = self._broker_lines(marks, run_folder)
        events = frozenset()
        if status == COMPLETE and summary is not None:
            events = frozenset(self._events(spec, run_folder, summary, lines))
        seconds = time.monotonic() - started  # the whole try: the run, the cluster's restore, the events gathered
        workload = sum(v.get("produce_seconds") or 0.0 for v in ((summary or {}).get("variants") or {}).values())
        return Outcome(status, summary, events, seconds, workload, str(run_folder.path), reason, rebuilt)

    # -- what the run saw ----------------------------------------------------------------------------
    def _broker_logs(self) -> list[Path]:
        """The brokers' logs of the kept cluster (cluster/kept.py: <folder>/cluster-<id>/logs/, a new folder
        for each rebuild)."""
        return sorted(self.folder.path.glob("cluster-*/logs/broker-*.log"))

    def _broker_log_sizes(self) -> dict[Path, int]:
        return {p: p.stat().st_size for p in self._broker_logs()}

    def _broker_lines(self, marks: dict[Path, int], run_folder: RunFolder) -> list[str]:
        """What the brokers wrote while the run ran (from each log's size before it; a log begun anew by a
        rebuilt cluster is read whole), also kept in the run folder."""
        lines = []
        for path in self._broker_logs():  # a rebuilt cluster's new logs are not in marks: read whole
            start = marks.get(path, 0)
            try:
                with open(path, "rb") as f:
                    if f.seek(0, 2) < start:
                        start = 0
                    f.seek(start)
                    text = f.read(64 * 2**20).decode("utf-8", "replace")
            except OSError:
                continue
            lines += [f"{path.parent.parent.name}/{path.stem}: {x}" for x in text.splitlines()]
        (run_folder.logs / DURING_RUN).write_text("\n".join(lines) + ("\n" if lines else ""))
        return lines

    def _events(self, spec, run_folder: RunFolder, summary: dict, broker_lines: list[str]) -> set[str]:
        import pyarrow.parquet as pq

        errors: Counter[str] = Counter()
        seen: set[str] = set()
        for v in spec.variants:
            path = run_folder.acks_path(v.name)
            if path.exists():
                column = pq.read_table(path, columns=["error"]).column("error").to_pylist()
                errors.update(e for e in column if e)
        for log in [*(run_folder.client_log(v.name) for v in spec.variants), *run_folder.member_logs()]:
            try:
                seen |= client_events(log.read_text(errors="replace").splitlines())
            except OSError:
                pass
        seen |= error_events(summary, errors)
        seen |= broker_events(x.split(": ", 1)[1] for x in broker_lines)
        return seen
