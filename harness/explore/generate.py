"""A try's schedule: drawn fresh from the space, or a mutation of a corpus entry's, as experiment-file fault
entries (single faults with `at`), and the experiment one try runs.

Pure and seeded: everything random comes from the `random.Random` passed in, so one generator's state gives one
sequence of tries (a resumed exploration replays it). A drawn entry is what the experiment file would hold, so
a finding is written out as an ordinary experiment (experiment_doc) that `kafka-chaos run` takes and plans the
same; the schedule itself is planned by schedule.plan, the overlap rule included, never by a rule of its own.
"""

from __future__ import annotations

import copy
import math
import random

from pydantic import TypeAdapter, ValidationError

from ..faults.registry import KINDS, Fault
from ..schedule import PlannedFault, ScheduleError, plan
from ..spec import ExperimentSpec, SpecError, validation_message
from ..space import OneOf, Setting, Span, as_field, try_window, window

MAX_REDRAWS = 50  # draws of one fault's settings until the kind and the experiment take them together
MAX_ATTEMPTS = 100  # schedules drawn by next_schedule until one plans
SHIFT = 0.25  # a shifted fault moves by up to this share of the window, either way
_FAULT = TypeAdapter(Fault)


def _refused(spec: ExperimentSpec, entry: dict) -> str:
    """Why the kind's schema, or this experiment, refuses a drawn entry ("" when both take it): settings drawn
    one by one may not go together (a storm's interval longer than its duration), and a choice the kind offers
    may need what this experiment lacks (a one-way isolation without network namespaces)."""
    try:
        fault = _FAULT.validate_python(entry)
    except ValidationError as e:
        err = e.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'][1:]) or entry['kind']}: {err['msg'].removeprefix('Value error, ')}"
    return KINDS[entry["kind"]].problem(spec, fault)


def _before(end: float) -> float:
    """The last time on the schedule's millisecond grid strictly before `end`."""
    return math.ceil(end * 1000 - 1) / 1000


def draw_at(spec: ExperimentSpec, rng: random.Random) -> float:
    """A fault's start, uniform in the window, rounded to 3 decimals, before the end of the try's workload."""
    low, high = window(spec.explore, spec)
    at = min(max(round(rng.uniform(low, high), 3), low), high)
    end = try_window(spec.explore, spec)
    return min(at, _before(end)) if end is not None and at >= end else at


def _settings(spec: ExperimentSpec, kind: str, rng: random.Random, names=None) -> dict:
    """Drawn values of a kind's settings (all, or those named), as its fields take them."""
    return {name: as_field(kind, name, s.draw(rng)) for name, s in spec.explore.settings(kind).items()
            if names is None or name in names}


def draw_fault(spec: ExperimentSpec, rng: random.Random, kind: str | None = None, at: float | None = None) -> dict:
    """One fault entry {kind, at, duration|downtime, target, **settings}, the kind uniform among the space's;
    ScheduleError when MAX_REDRAWS draws of its settings were all refused."""
    kind = kind if kind is not None else rng.choice(list(spec.explore.kinds))
    at = at if at is not None else draw_at(spec, rng)
    why = ""
    for _ in range(MAX_REDRAWS):
        entry = {"kind": kind, "at": at, **_settings(spec, kind, rng)}
        why = _refused(spec, entry)
        if not why:
            return entry
    raise ScheduleError(f"explore.kinds.{kind}: {MAX_REDRAWS} draws of its settings were all refused; the last: "
                        f"{why}")


def _by_time(faults: list[dict]) -> list[dict]:
    return sorted(faults, key=lambda f: f["at"])  # stable: faults drawn at one time keep their order


def draw(spec: ExperimentSpec, rng: random.Random) -> list[dict]:
    """A fresh schedule: between the space's min and max faults, each drawn on its own, in time order."""
    low, high = spec.explore.faults
    return _by_time([draw_fault(spec, rng) for _ in range(rng.randint(low, high))])


def _variable(setting: Setting) -> bool:
    """A setting a redraw could change."""
    return (isinstance(setting, Span) and setting.low < setting.high) or \
        (isinstance(setting, OneOf) and len(setting.choices) > 1)


def _redrawable(spec: ExperimentSpec, fault: dict) -> list[str]:
    settings = spec.explore.settings(fault["kind"]) if fault["kind"] in spec.explore.kinds else {}
    return [name for name, s in settings.items() if _variable(s)]


def mutate(faults: list[dict], spec: ExperimentSpec, rng: random.Random) -> list[dict]:
    """A new schedule one step from `faults` (left as it is), the step drawn among those that apply: shift one
    fault's start (within the window), redraw one setting of one fault (from the space), add a fault (below the
    space's max), remove one (above its min). When none applies (one fault, a window of one instant, every
    setting fixed) one fault is replaced by a fresh one. ScheduleError when a redrawn setting was refused
    MAX_REDRAWS times."""
    out = copy.deepcopy(faults)
    low, high = spec.explore.faults
    start, end = window(spec.explore, spec)
    redrawable = [i for i, f in enumerate(out) if _redrawable(spec, f)]
    steps = [step for step, applies in (("shift", out and end > start), ("redraw", redrawable),
                                        ("add", len(out) < high), ("remove", len(out) > low)) if applies]
    step = rng.choice(steps) if steps else "replace"
    if step == "shift":
        i = rng.randrange(len(out))
        reach = (end - start) * SHIFT
        at = min(max(round(out[i]["at"] + rng.uniform(-reach, reach), 3), start), end)
        limit = try_window(spec.explore, spec)
        out[i]["at"] = min(at, _before(limit)) if limit is not None and at >= limit else at
    elif step == "redraw":
        i = rng.choice(redrawable)
        kind, name = out[i]["kind"], rng.choice(_redrawable(spec, out[i]))
        why = ""
        for _ in range(MAX_REDRAWS):
            entry = {**out[i], **_settings(spec, kind, rng, {name})}
            why = _refused(spec, entry)
            if not why:
                break
        else:
            raise ScheduleError(f"explore.kinds.{kind}.{name}: {MAX_REDRAWS} redraws were all refused; the last: "
                                f"{why}")
        out[i] = entry
    elif step == "add":
        out.append(draw_fault(spec, rng))
    elif step == "remove":
        del out[rng.randrange(len(out))]
    elif out:
        out[rng.randrange(len(out))] = draw_fault(spec, rng)
    else:
        out.append(draw_fault(spec, rng))
    return _by_time(out)


def _file_form(spec: ExperimentSpec) -> dict:
    """The experiment as its file would give it: what was set (so what a file leaves out stays out), the
    matrix already expanded into its variants, field names as the file spells them."""
    doc = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    doc.pop("matrix", None)
    doc.pop("explore", None)
    return doc


def try_spec(spec: ExperimentSpec, faults: list[dict]) -> ExperimentSpec:
    """The experiment one try runs: its faults these entries, its workload explore.messages long (when set),
    without the explore section; validated as an experiment file is (SpecError naming the field)."""
    doc = _file_form(spec)
    doc["faults"] = copy.deepcopy(faults)
    if spec.explore is not None and spec.explore.messages is not None:
        doc["workload"] = {**doc["workload"], "messages": spec.explore.messages}
    try:
        return ExperimentSpec.model_validate(doc)
    except ValidationError as e:
        raise SpecError(validation_message(e, f"{spec.name} (explored try)")) from None


def schedule_of(spec: ExperimentSpec, faults: list[dict], seed: int) -> list[PlannedFault]:
    """The try's schedule as `kafka-chaos run` would plan it; ScheduleError when its faults could meet (the
    overlap rule), SpecError when the experiment refuses them."""
    return plan(try_spec(spec, faults), seed)


def experiment_doc(spec: ExperimentSpec, faults: list[dict], seed: int) -> dict:
    """A try as an ordinary experiment file (YAML-dumpable; secrets masked as a run folder keeps them): what a
    finding writes out, for `kafka-chaos run` to run again with the same schedule."""
    doc = try_spec(spec, faults).public_dict()
    doc["seed"] = seed
    return doc


def next_schedule(spec: ExperimentSpec, rng: random.Random, corpus=None, guided: bool = True,
                  seed: int | None = None) -> tuple[list[dict], str]:
    """The next try's faults and where they came from: with probability explore.mutate (once the corpus has an
    entry, and `guided`) a mutation of an entry the corpus picks ("mutation of try N"), else a fresh draw
    ("fresh"); drawn again until it plans with `seed` (default the experiment's), MAX_ATTEMPTS times, then
    ScheduleError saying why the last one did not. guided=False is the purely random baseline."""
    seed = spec.seed if seed is None else seed
    last: Exception | None = None
    for _ in range(MAX_ATTEMPTS):
        try:
            if guided and corpus is not None and len(corpus) and rng.random() < spec.explore.mutate:
                entry = corpus.pick(rng)
                faults, origin = mutate(entry.faults, spec, rng), f"mutation of try {entry.try_id}"
            else:
                faults, origin = draw(spec, rng), "fresh"
            schedule_of(spec, faults, seed)
            return faults, origin
        except (ScheduleError, SpecError) as e:
            last = e
    raise ScheduleError(f"explore: none of {MAX_ATTEMPTS} schedules drawn could be planned; the last: {last}")
