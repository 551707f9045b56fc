"""The `explore:` section of an experiment: the fault space a try draws its schedule from.

Each kind a try may draw names ranges for its settings: a scalar (fixed), `[low, high]` (a range, drawn
uniformly; whole numbers for a whole-number setting), a list of non-numbers or `{one_of: [...]}` (choices). A
setting not named comes from the kind's own FaultKind.explore ranges, else keeps the kind's default; the target
defaults by what the kind acts on (default_target). Every value is checked here against the kind's own schema,
at both ends of a range, so a space that could draw a setting the experiment file would refuse is refused when
the file loads, naming the field (`explore.kinds.KIND.SETTING: ...`) as every spec error does.

What needs the whole experiment (the window against the workload's length) is `cross_check`, which the
experiment's own model check calls; what needs the backend is check.py. This module imports only the fault
kinds and the strict schema: spec.py imports it for its field.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from .faults.kind import WORKLOAD_TARGET, Downtime
from .faults.registry import KINDS
from .schema import MAX_SECONDS, Strict

# Fields of a fault entry that are its timing, not settings a space draws: a try's faults are single faults at
# a drawn time, never repeated.
TIMING = ("kind", "at", "every", "jitter", "start")
DEFAULT_FAULTS = (1, 3)
DEFAULT_START = 0.5  # seconds: the window's default start, as a repeated fault's default `start`
# A try is a schedule a person reads and `kafka-chaos shrink` cuts down; thousands of faults are a soak, not a try.
MAX_TRY_FAULTS = 1000
TARGET_HINT = "use all, random, {broker: N}, {leader-of: P} or {follower-of: P}"


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Fixed:
    """A setting every draw gives this value."""

    value: Any

    def draw(self, rng: random.Random):
        return copy.deepcopy(self.value)

    @property
    def values(self) -> tuple:
        return (self.value,)


@dataclass(frozen=True)
class Span:
    """A number drawn uniformly in [low, high]: a whole number for a whole-number setting, else rounded to
    3 decimals (as the schedule rounds times) and kept within the range."""

    low: float
    high: float
    integer: bool

    def draw(self, rng: random.Random):
        if self.integer:
            return rng.randint(int(self.low), int(self.high))
        return min(max(round(rng.uniform(self.low, self.high), 3), self.low), self.high)

    @property
    def values(self) -> tuple:
        return (self.low, self.high)


@dataclass(frozen=True)
class OneOf:
    """One of these values, each as likely."""

    choices: tuple

    def draw(self, rng: random.Random):
        return copy.deepcopy(rng.choice(self.choices))

    @property
    def values(self) -> tuple:
        return self.choices


Setting = Union[Fixed, Span, OneOf]


def setting_names(kind: str) -> list[str]:
    """The settings a space may name for a kind: its schema's fields but the timing ones; a broker stop's
    duration is its `downtime` (faults/kind.py Downtime)."""
    schema = KINDS[kind].schema
    skip = set(TIMING) | ({"duration"} if issubclass(schema, Downtime) else set())
    return [name for name in schema.model_fields if name not in skip]


def _field(kind: str, name: str):
    return KINDS[kind].schema.model_fields[name]


def _whole(kind: str, name: str) -> bool:
    """A whole-number setting: `int`, also when optional or constrained (`Annotated[int, ...] | None`), which a
    plain `is int` missed: a setting so typed (the lost unflushed writes' drop_batches) was drawn fractional,
    refused at every draw, and its kind never ran in an exploration (2026-11-29)."""
    annotation = _field(kind, name).annotation
    options = [a for a in get_args(annotation) if a is not type(None)] if get_origin(annotation) is Union else \
        [annotation]
    return len(options) == 1 and (options[0] is int or (get_origin(options[0]) is Annotated
                                                         and get_args(options[0])[0] is int))


def _is_list(kind: str, name: str) -> bool:
    return getattr(_field(kind, name).annotation, "__origin__", None) is list


def parse(value, kind: str, name: str) -> Setting:
    """A setting's value as the file gives it; ValueError saying what is wrong (without the field's name)."""
    if isinstance(value, dict) and set(value) == {"one_of"}:
        choices = value["one_of"]
        if not isinstance(choices, list) or not choices:
            raise ValueError("one_of takes a non-empty list of the values to choose from")
        return OneOf(tuple(choices))
    if isinstance(value, list):
        if not value:
            raise ValueError("an empty list: give a value, a range [low, high] or the choices")
        if all(_number(v) for v in value):
            if len(value) != 2:
                raise ValueError(f"{value} is neither a range [low, high] (two numbers) nor choices: for choices "
                                 "among numbers write {one_of: [...]}")
            low, high = value
            if low > high:
                raise ValueError(f"range [{low:g}, {high:g}] is inverted (low must not exceed high)")
            return Span(low, high, _whole(kind, name))
        return OneOf(tuple(value))
    return Fixed(value)


def _from_kind(values: tuple, kind: str, name: str) -> Setting:
    """A FaultKind.explore entry: (low, high) of two numbers, else the choices."""
    if len(values) == 2 and all(_number(v) for v in values):
        return Span(values[0], values[1], _whole(kind, name))
    return OneOf(tuple(values))


def default_target(kind: str) -> Setting | None:
    """The targets a try draws when the space names none: the workload for a kind that acts on it; a random
    broker for one that holds a broker (every broker at once would meet every other broker fault: the
    schedule's overlap rule); all or a random broker for one on a broker's traffic or link; none (the kind's
    own default) for the others, which name their target themselves."""
    k = KINDS[kind]
    if k.on_workload:
        return Fixed(WORKLOAD_TARGET)
    if k.holds == "broker" or k.stops_broker:
        return Fixed("random")
    if k.acts_on in ("client traffic", "peer traffic", "link", "broker"):
        return OneOf(("all", "random"))
    return None


def as_field(kind: str, name: str, value):
    """A drawn value as the kind's field takes it: a choice of a list setting (one request type) is a list."""
    return [value] if _is_list(kind, name) and not isinstance(value, list) else value


def refusal(kind: str, name: str, value) -> str:
    """Why the kind's schema refuses this value of one setting ("" when it takes it); checks of other fields
    and of the whole fault (settings drawn together) are not this setting's."""
    if isinstance(value, bool) and _field(kind, name).annotation in (int, float):
        return f"{str(value).lower()} is not a number"
    try:
        KINDS[kind].schema.model_validate({"kind": kind, "at": 0.0, name: as_field(kind, name, value)})
        return ""
    except ValidationError as e:
        errors = [err for err in e.errors() if err["loc"][:1] == (name,)]
    if not errors:
        return ""
    if name == "target" and len(errors) > 1:  # one error per member of the targets' union
        return f"not a target ({TARGET_HINT})"
    return errors[0]["msg"].removeprefix("Value error, ")


def resolve(kind: str, given: dict) -> dict[str, Setting]:
    """Every setting a try draws for this kind, in the order an entry lists them: its duration (or downtime)
    and target first. ValueError naming the field (explore.kinds.KIND.SETTING: ...)."""
    names = setting_names(kind)
    where = f"explore.kinds.{kind}"
    for name in given:
        if name not in names:
            hint = " (a broker stop's duration is its downtime)" if name == "duration" else ""
            raise ValueError(f"{where}.{name}: not a setting of {kind}{hint} (it takes: {', '.join(names)})")
    out: dict[str, Setting] = {}
    explore = KINDS[kind].explore
    time = "downtime" if "downtime" in names else "duration"
    for name in [time, "target", *(n for n in names if n not in (time, "target"))]:
        if name in given:
            try:
                setting = parse(given[name], kind, name)
            except ValueError as e:
                raise ValueError(f"{where}.{name}: {e}") from None
            ends = ("low end ", "high end ") if isinstance(setting, Span) else None
            for i, value in enumerate(setting.values):
                why = refusal(kind, name, value)
                if why:
                    shown = f"{ends[i]}{value!r}: " if ends else f"choice {value!r}: " if isinstance(setting, OneOf) \
                        else ""  # a fixed value: the field says which
                    raise ValueError(f"{where}.{name}: {shown}{why}")
            out[name] = setting
        elif name in explore:
            out[name] = _from_kind(explore[name], kind, name)
        elif name == "target":
            target = default_target(kind)
            if target is not None:
                out[name] = target
        elif name == time:
            out[name] = Fixed(_field(kind, name).default)
        elif _field(kind, name).is_required():
            raise ValueError(f"{where}.{name}: missing: {kind} has no default for it; give a value, a range or "
                             "the choices")
    return out


def _pair(value, what: str, number=_number) -> tuple:
    if not isinstance(value, list) or len(value) != 2 or not all(number(v) for v in value):
        raise ValueError(f"{value!r} is not [low, high] ({what})")
    low, high = value
    if low > high:
        raise ValueError(f"range [{low:g}, {high:g}] is inverted (low must not exceed high)")
    return low, high


class KnownBug(Strict):
    """A bug already written up that an exploration's tries may show again (README, Explore: known bugs). A try
    mark (`VARIANT: METRIC`, signature.py) it explains is journaled with its reference and is no finding: a
    nightly exploration of a client with an open upstream bug then still fails on anything else."""

    ref: str = Field(min_length=1, description="where it is written up: an upstream issue (librdkafka #5511, "
                                               "KAFKA-12345) or a file of experiments/known-bugs/")
    marks: list[str] = Field(min_length=1, description="the marks it explains: `VARIANT: METRIC` patterns, * and ? "
                                                       "as in file names (e.g. '*: client_hangs')")
    evidence: str | None = Field(None, description="a regular expression the marked variant's entry of "
                                                   "summary.json (as JSON, keys sorted) must hold for the bug to "
                                                   "explain its marks, e.g. the call a client hung in")

    @field_validator("marks")
    @classmethod
    def _marks(cls, marks: list[str]) -> list[str]:
        for mark in marks:
            if ": " not in mark or not all(part.strip() for part in mark.split(": ", 1)):
                raise ValueError(f"{mark!r} is not `VARIANT: METRIC` (a pattern of each, e.g. '*: client_hangs')")
        return marks

    @field_validator("evidence")
    @classmethod
    def _evidence(cls, evidence: str | None) -> str | None:
        if evidence is not None:
            try:
                re.compile(evidence)
            except re.error as e:
                raise ValueError(f"{evidence!r} is not a regular expression: {e}") from None
        return evidence


class ExploreSpec(Strict):
    """The fault space of `kafka-chaos explore` (README, Explore)."""

    kinds: dict[str, dict[str, Any] | None] = Field(
        description="the kinds a try may draw, each with ranges for its settings ({}: the kind's own)")
    faults: tuple[int, int] = Field(DEFAULT_FAULTS, description="faults a try holds: N, or [min, max]")
    window: tuple[float, float] | None = Field(
        None, description="[low, high]: seconds into the workload the faults start within; default [0.5, the "
                          "planning window (fault_window, or messages / rate)]")
    messages: Annotated[int, Field(ge=1)] | None = Field(None, description="a try's workload size (default workload.messages)")
    mutate: float = Field(0.5, ge=0, le=1, description="share of tries drawn as a mutation of a corpus entry, once "
                                                      "the corpus has one")
    known: list[KnownBug] | None = Field(None, description="bugs already written up: the marks each explains are "
                                                          "no finding (KnownBug)")

    _settings: dict[str, dict[str, Setting]] = PrivateAttr(default_factory=dict)

    @field_validator("faults", mode="before")
    @classmethod
    def _count(cls, value):
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value, value]
        low, high = _pair(value, "a number of faults, or [min, max] whole numbers",
                          lambda v: isinstance(v, int) and not isinstance(v, bool))
        if low < 1:
            raise ValueError(f"a try holds at least 1 fault (min is {low})")
        if high > MAX_TRY_FAULTS:
            raise ValueError(f"at most {MAX_TRY_FAULTS} faults a try (max is {high})")
        return low, high

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value):
        if value is None:
            return None
        low, high = _pair(value, "seconds into the workload")
        if low < 0 or high > MAX_SECONDS:
            raise ValueError(f"[{low:g}, {high:g}] is not within 0..{MAX_SECONDS:g} s")
        return low, high

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, kinds: dict) -> dict:
        if not kinds:
            raise ValueError("explore.kinds: give at least 1 kind a try may draw (e.g. {latency: {}})")
        for kind in kinds:
            if kind not in KINDS:
                raise ValueError(f"explore.kinds.{kind}: unknown fault kind (kinds: {', '.join(KINDS)})")
        return {kind: given or {} for kind, given in kinds.items()}

    @model_validator(mode="after")
    def _resolve(self):
        self._settings = {kind: resolve(kind, given) for kind, given in self.kinds.items()}
        return self

    def settings(self, kind: str) -> dict[str, Setting]:
        """What a try draws for this kind (resolve)."""
        return self._settings[kind]


def try_window(explore: ExploreSpec, experiment) -> float | None:
    """How long a try's workload is expected to run (its planning window): fault_window, else its messages
    at the workload's rate; None when neither says."""
    if experiment.fault_window:
        return experiment.fault_window
    rate = experiment.workload.rate
    return (explore.messages or experiment.workload.messages) / rate if rate else None


def window(explore: ExploreSpec, experiment) -> tuple[float, float]:
    """[low, high] seconds the faults of a try start within (cross_check made sure it is one)."""
    return explore.window or (DEFAULT_START, try_window(explore, experiment))


def cross_check(explore: ExploreSpec, experiment) -> None:
    """What the section means only with the experiment around it: the window lies within the workload (a fault
    due after it would never be applied). ValueError naming the field."""
    end = try_window(explore, experiment)
    if end is None:
        if explore.window is None:
            raise ValueError("explore.window: missing: without workload.rate or fault_window the workload's length "
                             "is not known; give the seconds the faults start within, [low, high]")
        return
    what = "fault_window" if experiment.fault_window else \
        f"the workload's expected duration ({explore.messages or experiment.workload.messages:,} messages at " \
        f"{experiment.workload.rate:g}/s)"
    low, high = window(explore, experiment)
    default = "" if explore.window else " (the default)"
    if low >= end:
        raise ValueError(f"explore.window: starts at {low:g} s{default}, not before the end of {what}, {end:g} s: "
                         "no fault would ever be applied")
    if high > end:
        raise ValueError(f"explore.window: ends at {high:g} s, after the end of {what}, {end:g} s: a fault drawn "
                         "there would never be applied")
