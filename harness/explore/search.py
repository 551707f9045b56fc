"""The exploration loop: draw a schedule, run it, keep what was learned.

    exploration = Exploration(spec, runner, folder, seed=7, budget_s=1800, clock=time.monotonic)
    exploration.execute()     # until the budget or --tries is spent; an interrupt propagates, the journal stays

As Jepsen's generator, nemesis and checker, each try draws a schedule (generate.py), runs every variant under
it (the runner) and is judged as a run is; as a greybox fuzzer, a try that showed an event never seen before
joins the corpus, and later tries are fresh draws or mutations of corpus entries. A try's signature
(signature.py) names what went wrong; tries with the same signature are one finding. A new finding is
investigated at once: its schedule is shrunk (shrink.py's ddmin, the finding's variants only, each subset
run once, at most `shrink_runs`) and the minimal schedule is run `rate_runs` more times for its rate (Wilson
95 % interval), then written as an ordinary experiment that `kafka-chaos run` reproduces. The budget decides
when no new try starts; an investigation begun before it ends is finished (at most shrink_runs + rate_runs
runs of the finding's variants): a finding without its minimal schedule and rate would be half a finding.

A mark a known bug of the space explains (explore.known: an upstream bug already written up) is journaled with
its reference and is no finding; the rest of the try's marks are its signature. The first try of each known bug
keeps its folder, as evidence that it still shows.

A try that could not run (status error: the cluster, Spark or the harness failed) is infrastructure, never
a finding; three in a row end the exploration (InfraError). Everything here is pure but for the runner and
the folder, both passed in: the tests give a fake runner with a planted bug.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Callable, Protocol

import yaml

from ..aggregate import share_interval
from ..exits import InfraError
from ..shrink import shrink
from ..status import COMPLETE, ERROR
from .corpus import Corpus
from .generate import experiment_doc, next_schedule
from .signature import explained, not_as_planned, signature

INFRA_IN_A_ROW = 3  # tries in a row that could not run: the exploration stops (exit 3)


@dataclass(frozen=True)
class Outcome:
    """What a runner reports of one run of a schedule."""

    status: str  # status.py: complete, error (could not run), interrupted
    summary: dict | None
    events: frozenset[str] = frozenset()
    seconds: float = 0.0  # the run's wall time
    workload_seconds: float = 0.0  # its variants' producing time (produce_seconds summed)
    folder: str = ""
    reason: str = ""  # why it could not run
    rebuilt: str | None = None  # the cluster was rebuilt after it, and why


class Runner(Protocol):
    def __call__(self, faults: list[dict], seed: int, variants: tuple[str, ...] | None, purpose: str) -> Outcome:
        """Run the experiment's variants (or only these) under these faults; purpose: "try 3",
        "F1 shrink 2", "F1 rate 4" (where the run folder goes)."""


class Listener:
    def tried(self, row: dict, findings: int, events: int) -> None:
        pass

    def investigating(self, finding: str, what: str) -> None:
        pass

    def found(self, row: dict) -> None:
        pass


def run_seed(seed: int, number: int) -> int:
    """The seed of try `number`'s run (its `random` targets), a 63-bit integer from the exploration's seed."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{number}".encode()).digest()[:8], "big") >> 1


def variants_of(sig) -> tuple[str, ...]:
    """The variants a signature's marks name ("v: metric" -> v)."""
    return tuple(sorted({m.split(": ", 1)[0] for m in sig}))


def shows(outcome: Outcome, sig) -> bool:
    """The run showed every mark of the finding's signature (it ran to the end and was judged)."""
    return outcome.status == COMPLETE and set(sig) <= set(signature(outcome.summary or {}))


@dataclass
class Exploration:
    spec: object  # ExperimentSpec with an explore: section
    runner: Runner
    folder: object  # ExplorationFolder (or a fake with add_try, add_finding, tries, findings, prune, ...)
    seed: int
    budget_s: float | None = None
    max_tries: int | None = None
    clock: Callable[[], float] = None
    guided: bool = True
    rate_runs: int = 5
    shrink_runs: int = 16
    keep_all: bool = False
    listener: Listener = field(default_factory=Listener)

    def __post_init__(self):
        self.tries: list[dict] = self.folder.tries()  # a resumed exploration continues after these
        self.findings: dict[tuple, dict] = {tuple(f["signature"]): f for f in self.folder.findings()}
        self.corpus = Corpus()
        for row in self.tries:
            if row.get("status") == COMPLETE:
                self.corpus.consider(row["try"], row["faults"], frozenset(row.get("events", [])))
        self.elapsed_before = max((r.get("at_s", 0.0) + r.get("seconds", 0.0) for r in self.tries), default=0.0)
        self.started = self.clock()
        self.infra_in_a_row = 0
        self.known_seen = {ref for row in self.tries for ref in row.get("known", {})}

    # -- time ------------------------------------------------------------------------------------------
    def at(self) -> float:
        """Seconds into the exploration, across resumed sessions."""
        return self.elapsed_before + self.clock() - self.started

    def spent(self) -> bool:
        if self.budget_s is not None and self.clock() - self.started >= self.budget_s:
            return True
        return self.max_tries is not None and self._tried_now >= self.max_tries

    # -- the loop --------------------------------------------------------------------------------------
    def execute(self) -> None:
        self._tried_now = 0
        for sig, first in self._pending():  # a finding whose investigation a kill cut short
            self._investigate(sig, first)
        while not self.spent():
            self._one_try()

    def _pending(self) -> list[tuple[tuple, dict]]:
        out, seen = [], set(self.findings)
        for row in self.tries:
            sig = tuple(row.get("signature") or ())
            if sig and row.get("status") == COMPLETE and sig not in seen:
                seen.add(sig)
                out.append((sig, row))
        return out

    def _one_try(self) -> None:
        number = (self.tries[-1]["try"] + 1) if self.tries else 1
        rng = random.Random(f"{self.seed}/{number}")
        seed = run_seed(self.seed, number)
        faults, origin = next_schedule(self.spec, rng, self.corpus, guided=self.guided, seed=seed)
        at = self.at()
        outcome = self.runner(faults, seed, None, f"try {number}")
        self._tried_now += 1
        row = {"try": number, "origin": origin, "seed": seed, "faults": faults, "at_s": round(at, 2),
               "seconds": round(outcome.seconds, 2), "workload_seconds": round(outcome.workload_seconds, 2),
               "status": outcome.status, "folder": outcome.folder, "rebuilt": outcome.rebuilt}
        if outcome.status != COMPLETE:  # infrastructure: never a finding, nothing learned
            row.update(verdict=ERROR, reason=outcome.reason, signature=[], events=[], new_events=[])
            self._journal(row)
            self.infra_in_a_row += 1
            if self.infra_in_a_row >= INFRA_IN_A_ROW:
                raise InfraError(f"{INFRA_IN_A_ROW} tries in a row could not run; the last: {outcome.reason}")
            return
        self.infra_in_a_row = 0
        sig, known = explained(outcome.summary or {}, self.spec.explore.known or ())
        new = self.corpus.consider(number, faults, outcome.events)
        row.update(verdict=(outcome.summary or {}).get("verdict"), signature=list(sig),
                   events=sorted(outcome.events), new_events=sorted(new))
        first_known = set(known) - self.known_seen
        if known:
            row["known"] = known
            self.known_seen |= first_known
        if not_as_planned(outcome.summary or {}, sig):  # journaled and shown as it is, but no finding: see there
            row.update(finding=None, reason="a drawn fault could not be applied: not a finding")
            self._journal(row)
            if not self.keep_all and outcome.folder:
                self.folder.prune(outcome.folder)
            return
        finding = self.findings.get(sig)
        row["finding"] = finding["id"] if finding else None
        self._journal(row)
        if sig and finding is None:
            self._investigate(sig, row)
        elif not self.keep_all and not first_known and outcome.folder:
            self.folder.prune(outcome.folder)

    def _journal(self, row: dict) -> None:
        self.folder.add_try(row)
        self.tries.append(row)
        self.listener.tried(row, len(self.findings), len(self.corpus.seen))

    # -- a new finding ---------------------------------------------------------------------------------
    def _investigate(self, sig: tuple, first: dict) -> None:
        """Shrink the first try's schedule to the fewest faults that still show the signature, then run the
        minimal schedule rate_runs times for its rate; journal and write the finding."""
        ident = f"F{len(self.findings) + 1}"
        variants = variants_of(sig)
        seed = first["seed"]
        runs = {"shrink": 0, "rate": 0}

        def run(faults: list[dict], what: str) -> Outcome:
            runs[what] += 1
            self.listener.investigating(ident, f"{what} run {runs[what]}")
            return self.runner(faults, seed, variants, f"{ident} {what} {runs[what]}")

        def still_shows(subset: list[dict]) -> bool:
            return shows(run(sorted(subset, key=lambda f: f["at"]), "shrink"), sig)

        faults = first["faults"]
        if len(faults) > 1:
            shrunk = shrink(faults, still_shows, self.shrink_runs)
            minimal, complete = sorted(shrunk.faults, key=lambda f: f["at"]), shrunk.minimal
        else:
            minimal, complete = list(faults), True
        hits = ran = 0
        for _ in range(self.rate_runs):
            outcome = run(minimal, "rate")
            if outcome.status != COMPLETE:
                continue  # could not run: not counted either way
            ran += 1
            hits += shows(outcome, sig)
        doc = experiment_doc(self.spec, minimal, seed)
        row = {"id": ident, "signature": list(sig), "variants": list(variants), "first_try": first["try"],
               "first_at_s": first["at_s"] + first["seconds"], "faults": len(faults), "minimal_faults": minimal,
               "one_minimal": complete, "shrink_runs": runs["shrink"], "rate": [hits, ran],
               "rate_interval": share_interval(hits, ran), "experiment": f"findings/{ident}/experiment.yaml"}
        said = (f"# Finding {ident} of an exploration: {'; '.join(sig)}.\n"
                f"# First shown by try {first['try']}; this is its schedule shrunk to {len(minimal)} of {len(faults)} "
                f"fault(s), which showed it in {hits} of {ran} runs. Replay it (the same seed, so the same plan):\n"
                f"#   kafka-chaos run experiment.yaml --repeat {max(ran, 1)} --same-seed\n")
        self.folder.write_finding(ident, row, said + yaml.safe_dump(doc, sort_keys=False), first)
        self.folder.add_finding(row)
        self.findings[sig] = row
        self.listener.found(row)

