"""The shapes of a run folder's files (summary.json, faults.jsonl, aggregate.json, spec.yaml) as its readers
take them: pydantic models, strict (true is no number, "5" no count), no NaN or infinity, every text, list and
object bounded. A field of a newer release, which no reader takes, is left as it is. runfolder.py reads each
file within its size bound and calls problem(SHAPE, doc): "<field path>: <what is wrong> (<what is allowed>)"
of the first field a file gets wrong, e.g. `variants.off.expectations.0.rule: missing (...)`."""

from __future__ import annotations

import json
import re
import types
from datetime import datetime
from functools import reduce
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import MaxLen
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from .analysis.metrics import METRICS
from .spec import MAX_FAULTS, MAX_SECONDS, MAX_VARIANTS
from .verdict import ALLOWED, FAIL, PASS, UNKNOWN

# The bounds of the fields (the files' own bounds, in bytes, are runfolder.py's):
TEXT_CHARS = 64 << 10  # any text of a summary (a reason, a warning, a name): the harness's are a line each
MAX_INT64 = 2**63 - 1
FAULT_LINES = MAX_VARIANTS * MAX_FAULTS  # faults.jsonl: a line per fault and variant (the README's bounds)
AGGREGATE_RUNS = 10_000  # aggregate.json: an entry per run, and --repeat runs at most 10,000


class _Shape(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False)  # extra keys: ignored


Count = Annotated[int, Field(ge=0, le=MAX_INT64, description="a whole number from 0")]
Int64 = Annotated[int, Field(ge=-(2**63), le=MAX_INT64, description="a 64-bit integer")]
Text = Annotated[str, Field(max_length=TEXT_CHARS, description=f"a string of at most {TEXT_CHARS:,} characters")]
Flag = Annotated[bool, Field(description="true or false")]
Number = Annotated[float, Field(description="a finite number")]
Figure = Annotated[float, Field(ge=0, description="a finite number from 0")]
Time = Annotated[str, AfterValidator(datetime.fromisoformat), Field(title="a time", description="an ISO 8601 time")]
Mapping = dict[Any, Any]
Target = Annotated[Union[  # "broker-N" and "leader-of-N": as older releases wrote them
    Literal["all", "workload"], Annotated[str, Field(pattern=r"^(broker|leader-of)-\d{1,3}$")],
    Annotated[dict[Literal["broker", "leader-of", "follower-of"], Annotated[int, Field(ge=0, le=999)]],
              Field(min_length=1, max_length=1)],
], Field(title="a target", description='"all", "workload", {"broker": N}, {"leader-of": N} or {"follower-of": N}, '
                                       'N a whole number from 0 to 999')]


def _object(model: str, required: tuple = (), /, **fields) -> type[BaseModel]:
    """An object of these fields (name=type), each optional (absent: a reader does without) but the `required`."""
    return create_model(model, __base__=_Shape, **{k: (t, ... if k in required else None) for k, t in fields.items()})


def _list(item, limit: int, description: str | None = None):
    return Annotated[list[item], Field(max_length=limit, description=description)]


def _dict(value, limit: int, description: str | None = None):
    return Annotated[dict[str, value], Field(max_length=limit, description=description)]


def _quantiles(*keys: str, **more):
    """{} or null (nothing measured), else an object with every one of `keys`, each a finite number from 0."""
    shape = _object("Quantiles", keys, **dict.fromkeys(keys, Figure), **more)
    return Annotated[shape | None, BeforeValidator(lambda x: None if x == {} else x),
                     Field(description=f"null, {{}}, or an object with {', '.join(keys)}, each a finite number from 0")]


LATENCY, WINDOW = _quantiles("p50", "p95", "p99", "max"), _quantiles("p50", "p99", "p100", count=Count)
CHECK = _object("Check", ("metric", "rule"), metric=Text, rule=Text, actual=Number | None,
                status=Literal[PASS, FAIL, ALLOWED, UNKNOWN], passed=Flag)
SUMMARY_VARIANT = _object(
    "SummaryVariant", **dict.fromkeys((m.key for m in METRICS), Count),  # the counts tables and ranking take
    expectations=_list(CHECK, 1000, "a list of checks, each an object with metric and rule"),
    allowed=_list(Text, 1000, "a list of metric names"), verdict=Text, incomplete=Text | None, client=Text | None,
    client_fatal=Text | None, producer_error=Text | None, topic=Text | None, produce_seconds=Figure | None,
    latency_ms=LATENCY, unavailable_s=Figure | None, unavailable_from_ms=Number | None, lso_stall_s=Figure | None,
    lso_stalled=_dict(Annotated[list[Count], Field(min_length=2, max_length=2)], 100_000,
                      "partition -> [last stable offset, high watermark], for those still behind"), dedup_window_ms=WINDOW, dedup_window_records=WINDOW, instances_replaced=_dict(Count, 1000),
    consumer=Mapping | None, fault_periods=_list(_object("FaultPeriod", id=Count, kind=Text, latency_ms=LATENCY,
                                                         unavailable_s=Figure | None), MAX_FAULTS))
SUMMARY = _object(
    "Summary", run_id=Text, experiment=Text, status=Text, verdict=Text,
    seed=Annotated[Int64, Field(description="a 64-bit integer, or absent")], cluster=Text | None,
    started_at=Text | None, ended_at=Text | None, reason=Text | None,
    warnings=_list(Text, FAULT_LINES + 1000), faults_planned=Count,  # a warning per late fault, and a few
    broker_data=_object("BrokerData", ("path", "why"), path=Text, why=Text, bytes=Count) | None,
    variants=_dict(SUMMARY_VARIANT, MAX_VARIANTS, f"an object of at most {MAX_VARIANTS} variants, each an object"))
SECONDS = Annotated[float, Field(ge=0, le=MAX_SECONDS, description=f"a finite number, 0 to {MAX_SECONDS:,g}")]
FAULT_ROW = _object(  # a line of faults.jsonl
    "FaultRow", ("id",), id=Count, variant=Text, kind=Text, target=Target, planned_at=SECONDS,
    planned_duration=SECONDS, params=Mapping, outcome=Text, applied_at=Time | None, healed_at=Time | None,
    applied_offset=Number | None, healed_offset=Number | None, late_s=Number | None, held_s=Number | None,
    heal_s=Number | None, brokers=_list(Annotated[int, Field(ge=0, le=999, description="0 to 999")], 1000),
    error=Text | None, deviation=Text | None)
INTERVAL = Annotated[list[Number], Field(min_length=2, max_length=2, description="a list of 2 numbers")] | None
STATS = _object("Stats", runs_with=Count, runs_with_ci95=INTERVAL, mean=Number, mean_ci95=INTERVAL, min=Number,
                max=Number, rate_per_100k=Number, ci95=INTERVAL)
SPREAD = _object("Spread", ("mean", "min", "max"), mean=Number, min=Number, max=Number) | None
AGGREGATE_VARIANT = _object(
    "AggregateVariant", runs=Count, acked=Count, failed_runs=Count, metrics=_dict(STATS, 1000),
    duplicates_per_jump_back_run=Number | None, anomaly_rate=STATS, acked_per_s=SPREAD, unavailable_s=SPREAD,
    latency_p99_ms=SPREAD, lso_stall_s=SPREAD, lso_stalled_runs=Count,
    client_failures=_dict(_object("ClientFailures", runs_with=Count, runs_with_ci95=INTERVAL, times=Count), 1000))
AGGREGATE_FIELDS = _object(
    "Aggregate", series_id=Text, experiment=Text | None, verdict=Text, status=Text, complete=Flag, requested=Count,
    same_seed=Flag, until_fail=Flag, started_at=Text | None, ended_at=Text | None, replayed_from=Text, refused=Text,
    failed_run=Text, failed_faults=Text, seeds=_list(Int64, AGGREGATE_RUNS), stopped=Text,
    rebuilds=_list(_object("AggregateRebuild", after_run=Count, reason=Text), AGGREGATE_RUNS),
    # run_id is checked where it is used (SeriesFolder.run_folder: a folder name beside the series)
    runs=_list(_object("AggregateRun", seed=Int64 | None, status=Text | None, verdict=Text | None), AGGREGATE_RUNS),
    verdicts=_dict(Count, 100),
    variants=_dict(AGGREGATE_VARIANT, MAX_VARIANTS, f"an object of at most {MAX_VARIANTS} variants, each an object"))
# spec.yaml: ExperimentSpec validates all of it for analyze; the report and variants() take these fields directly.
SPEC_FIELDS = _object("Spec", producer=Mapping, variants=_list(
    _object("SpecVariant", name=Text, producer=Mapping), MAX_VARIANTS,
    f"a list of at most {MAX_VARIANTS} variants, each an object"))


# -- the message ----------------------------------------------------------------------------------------------
_NOUN = {"int_type": "a whole number", "float_type": "a number", "string_type": "a string", "bool_type": "true or false",
         "list_type": "a list", "dict_type": "an object", "model_type": "an object", "literal_error": "a word it takes"}
_RANGE = {"greater_than_equal", "less_than_equal", "greater_than", "less_than", "finite_number"}
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def said(x) -> str:
    """A value as a message shows it: JSON in ASCII (a control character shows as \\u001b), at most 60 characters."""
    text = json.dumps(x, ensure_ascii=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _path(loc) -> str:
    """variants.off.expectations.0.metric (a key of other characters quoted as JSON)."""
    return ".".join(str(k) if _PLAIN_KEY.match(str(k)) else json.dumps(str(k), ensure_ascii=True) for k in loc)


def _peel(tp) -> tuple[Any, list[FieldInfo]]:
    """(the type, its Field()s) of an annotation; of X for Optional[X] (nullable: ", or null" in _describe)."""
    infos = []
    while get_origin(tp) is Annotated:
        infos += [m for m in tp.__metadata__ if isinstance(m, FieldInfo)]
        tp = tp.__origin__
    return tp, infos


def _nullable(tp):
    """X of Optional[X], else None."""
    args = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else ()
    return next((a for a in args if a is not type(None)), None) if type(None) in args else None


def _step(tp, key):
    """The annotation at `key` inside `tp` (a model's field, a list's item, an object's value); None inside a
    union's member (a target), which is said of the union."""
    tp = _peel(tp)[0]
    tp = _peel(_nullable(tp) or tp)[0]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(key)
        return field and Annotated[field.annotation, field]
    if get_origin(tp) is list and isinstance(key, int):
        return get_args(tp)[0]
    return get_args(tp)[1] if get_origin(tp) is dict else None


def _describe(tp) -> tuple[str | None, str]:
    """(its noun when not its type's, what is allowed) of a field's annotation."""
    tp, infos = _peel(tp)
    title = next((i.title for i in reversed(infos) if i.title), None)
    allowed = next((i.description for i in reversed(infos) if i.description), None)
    if allowed:
        return title, allowed
    if _nullable(tp):
        title, allowed = _describe(_nullable(tp))
        return title, f"{allowed}, or null"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        required = [k for k, f in tp.model_fields.items() if f.is_required()]
        return title, "an object" + (f" with {', '.join(required)}" if required else "")
    if get_origin(tp) is Literal:
        return title, " or ".join(map(str, get_args(tp)))
    limit = next((m.max_length for i in infos for m in i.metadata if isinstance(m, MaxLen)), None)
    kind = "a list" if get_origin(tp) is list else "an object"
    return title, kind + (f" of at most {limit:,} entries" if limit else "")


def problem(shape: type[BaseModel], doc) -> str:
    """"<field path>: <what is wrong> (<what is allowed>)" of the first field of `doc` that `shape` refuses
    ("" when none)."""
    try:
        shape.model_validate(doc)
        return ""
    except ValidationError as e:
        error = e.errors(include_url=False)[0]
    loc, kinds = [], [shape]
    for key in error["loc"]:
        inner = _step(kinds[-1], key)
        if inner is None:
            break
        loc.append(key)
        kinds.append(inner)
    kind = error["type"] if len(loc) == len(error["loc"]) else "union"  # said of the union, of its value
    value = error["input"] if kind != "union" else reduce(lambda x, k: x[k], loc, doc)
    title, allowed = _describe(kinds[-1])
    if kind == "missing":
        what, allowed = "missing", f"{_path(loc[:-1]) or 'the file'} must be {_describe(kinds[-2])[1]}"
    elif kind in _RANGE:
        what = f"{said(value)} is out of range"
    elif kind in ("too_long", "too_short"):
        what = f"{len(value):,} entries"
    elif kind == "string_too_long":
        what = f"{len(value):,} characters"
    else:
        what = f"{said(value)} is not {title or _NOUN.get(kind, 'of the shape it takes')}"
    return f"{_path(loc)}: {what} ({allowed})" if loc else f"{what} ({allowed})"
