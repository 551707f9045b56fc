"""The fault kinds: each is one module, named after it, and nothing else in harness/ names it (README, Faults)."""

import re
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from harness.faults.kind import FaultKind
from harness.faults.registry import KINDS, Fault

HARNESS = Path(__file__).resolve().parents[2] / "harness"
# Kinds named by one word are also Toxiproxy's toxic types (latency, bandwidth) and a column (partition): for
# those only the quoted name of a kind with no such twin is searched.
ONE_WORD_ALONE = ("isolate",)


def test_every_kind_is_one_module_named_after_it():
    modules = [k.schema.__module__ for k in KINDS.values()]
    assert modules == [f"harness.faults.kinds.{name.replace('-', '_')}" for name in KINDS]
    assert {p.stem for p in (HARNESS / "faults" / "kinds").glob("*.py")} - {"__init__"} == {
        m.rsplit(".", 1)[1] for m in modules}, "a kind's module that the registry does not list"
    assert all(isinstance(k, FaultKind) for k in KINDS.values())


def test_no_kind_is_named_outside_its_module_and_the_registry():
    hyphenated = re.compile("|".join(re.escape(k) for k in KINDS if "-" in k))
    quoted = re.compile("|".join(f"[\"']{k}[\"']" for k in ONE_WORD_ALONE))
    found = []
    for path in HARNESS.rglob("*.py"):
        if path.parent.name == "kinds" or path == HARNESS / "faults" / "registry.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if hyphenated.search(line) or quoted.search(line):
                found.append(f"{path.relative_to(HARNESS.parent)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def _draws(kind: FaultKind) -> list[dict]:
    """One fault entry per end of each range and per choice the kind lets an exploration draw."""
    out = []
    for setting, values in kind.explore.items():
        numeric = len(values) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        assert numeric or len(values) >= 2, f"{kind.name}.{setting}: a (low, high) range or the choices"
        if numeric:
            assert values[0] < values[1], f"{kind.name}.{setting}: low below high"
        for value in values:
            is_list = kind.schema.model_fields[setting].annotation is not None and "list" in str(
                kind.schema.model_fields[setting].annotation)
            out.append({setting: [value] if is_list else value})
    return out


@pytest.mark.parametrize("name", list(KINDS))
def test_an_exploration_draws_only_settings_the_kind_takes(name):
    kind = KINDS[name]
    assert kind.explore, f"{name}: no ranges for an exploration to draw from"
    for setting in kind.explore:
        assert setting in kind.schema.model_fields, f"{name}: explore names {setting}, which it does not take"
    required = {"stray-produce": {"partition": 0}, "delay-requests": {"requests": ["Produce"]}}.get(name, {})
    for draw in _draws(kind):
        fault = TypeAdapter(Fault).validate_python({"kind": name, "at": 1.0, **required, **draw})
        for key, value in draw.items():
            assert getattr(fault, key) == value or key == "downtime"


def test_a_kind_on_the_workload_is_served_and_any_other_applied_on_brokers():
    for name, kind in KINDS.items():
        assert kind.on_workload == (kind.acts_on in ("producer", "consumer")), name
        assert (kind.apply is None) == kind.on_workload, name
