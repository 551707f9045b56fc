"""What a fault space can never give this experiment, refused before an exploration starts (exit 2).

The section's own checks (space.py) run when the file loads; these need the experiment as a whole: a kind it
cannot take (the kind's own problem), a value it names that the experiment refuses (a broker it does not have),
more faults a try than its window lets start, a known bug's mark that no try could ever have, and, generically,
a space from which no schedule plans (the faults always meet on one broker: the overlap rule). check_explore is
the explore command's whole preflight: preflight.py's checks of a run but the schedule, the backend's faults, and
these.
"""

from __future__ import annotations

import math
import random
from fnmatch import fnmatchcase
from pathlib import Path

from ..analysis.metrics import KEYS
from ..faults.registry import KINDS
from ..preflight import check_cluster, check_consumer_configs, check_producer_configs, check_spark_master
from ..schedule import ScheduleError
from ..schema import MAX_FAULTS_PER_SECOND
from ..space import as_field, window
from ..spec import ExperimentSpec, SpecError, load_spec
from .generate import draw, draw_fault, schedule_of, try_spec

TRIES = 200  # schedules drawn (with a fixed generator) before a space is called one that never plans


def _probe(spec: ExperimentSpec, kind: str, name: str, value) -> str:
    """Why the experiment refuses a one-fault try whose `name` is `value`, every other setting at its first
    value ("" when it takes it), said of the explore field the experiment's own message names."""
    settings = spec.explore.settings(kind)
    values = {**{n: s.values[0] for n, s in settings.items()}, name: value}
    entry = {"kind": kind, "at": window(spec.explore, spec)[0], **{n: as_field(kind, n, v) for n, v in values.items()}}
    try:
        try_spec(spec, [entry])
    except SpecError as e:
        first = str(e).splitlines()[0].split(": ", 1)[1]  # "<name> (explored try): faults.0.target: ..."
        return first.replace("faults.0.", f"explore.kinds.{kind}.", 1).replace("faults.0:", f"explore.kinds.{kind}:", 1)
    return ""


def check_known(spec: ExperimentSpec, path: Path) -> None:
    """SpecError when a known bug's mark pattern names no variant of the experiment or nothing a try's signature
    holds (a metric, `client_fatal NAME` or `unknown`): a typo would explain nothing, silently."""
    names = [variant.name for variant in spec.variants]
    for i, bug in enumerate(spec.explore.known or ()):
        for pattern in bug.marks:
            variant, what = pattern.split(": ", 1)
            if not any(fnmatchcase(name, variant) for name in names):
                raise SpecError(f"{path}: explore.known.{i}.marks: {pattern!r} names no variant of the experiment "
                                f"(variants: {', '.join(names)})")
            if not what.startswith("client_fatal ") and not any(fnmatchcase(mark, what) for mark in (*KEYS, "unknown")):
                raise SpecError(f"{path}: explore.known.{i}.marks: {pattern!r}: {what!r} matches no metric, "
                                "`client_fatal NAME` or `unknown` (a mark is `VARIANT: METRIC`; see README, Words)")


def check_space(spec: ExperimentSpec, path: Path) -> None:
    """SpecError `FILE: explore...: why` when the space can never draw a schedule this experiment runs, or one of
    its kinds can never be drawn."""
    explore = spec.explore
    for kind in explore.kinds:
        problem = KINDS[kind].problem(spec)
        if problem:
            raise SpecError(f"{path}: explore.kinds.{kind}: {problem}")
    for kind, given in explore.kinds.items():  # each value the file names, at each end of its range
        for name in given:
            for value in explore.settings(kind)[name].values:
                problem = _probe(spec, kind, name, value)
                if problem:
                    raise SpecError(f"{path}: {problem}")
    rng = random.Random(0)
    for kind in explore.kinds:  # each kind drawn as a try draws it (every setting, the kind's own ranges too): a
        try:  # kind whose draws are all refused would silently never run, the tries redrawn without it
            draw_fault(spec, rng, kind)
        except ScheduleError as e:
            raise SpecError(f"{path}: {e}") from None
    low, high = window(explore, spec)
    # check_rate: at most MAX_FAULTS_PER_SECOND start within any one second, and a window of L seconds holds
    # floor(L) + 1 such seconds that do not overlap.
    room = MAX_FAULTS_PER_SECOND * (math.floor(high - low) + 1)
    if explore.faults[0] > room:
        raise SpecError(f"{path}: explore.faults: a try holds at least {explore.faults[0]} faults, and at most "
                        f"{room} can start within the window [{low:g}, {high:g}] s ({MAX_FAULTS_PER_SECOND} a second)")
    rng = random.Random(0)
    last: Exception | None = None
    for _ in range(TRIES):
        try:
            schedule_of(spec, draw(spec, rng), spec.seed)
            return
        except (ScheduleError, SpecError) as e:
            last = e
    raise SpecError(f"{path}: explore: none of {TRIES} schedules drawn from the space could be planned; the "
                    f"last: {last}")


def check_explore(experiment: Path, spark_master: str | None) -> ExperimentSpec:
    """The spec for `kafka-chaos explore`, or SpecError / UsageError: check()'s checks but the schedule (each try
    plans its own), with the fault space's: the kinds the backend can inject, and a space that can draw a
    schedule this experiment runs (explore/check.py)."""
    check_spark_master(spark_master)
    spec = load_spec(experiment)
    if spec.explore is None:
        raise SpecError(f"{experiment}: explore: missing: `kafka-chaos explore` needs an explore: section declaring "
                        "the fault space (see README)")
    check_producer_configs(spec, experiment)
    check_consumer_configs(spec, experiment)
    check_cluster(spec, experiment, set(spec.explore.kinds), f"{experiment}: explore.kinds")
    check_space(spec, experiment)
    check_known(spec, experiment)
    return spec
