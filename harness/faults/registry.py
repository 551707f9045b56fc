"""The fault kinds the harness knows, in the order the README lists them: one line registers a kind.

Everything else asks here: the experiment schema (the union of the kinds' settings), the schedule (what a kind
holds), the nemesis (how it is applied), the backends (what it needs) and the report (its colour).
"""

from __future__ import annotations

import importlib
from typing import Annotated, Union

from pydantic import Field

from .kind import FaultKind, Means

MODULES = (  # under faults/kinds/
    "lost_acks",
    "lost_requests",
    "reset_connections",
    "latency",
    "bandwidth",
    "slow_close",
    "partition",
    "delay_requests",
    "isolate",
    "packet_loss",
    "packet_duplicate",
    "packet_reorder",
    "packet_delay",
    "broker_pause",
    "broker_kill",
    "broker_restart",
    "lose_unflushed",
    "stray_produce",
    "producer_restart",
    "producer_pause",
    "consumer_kill",
    "consumer_pause",
    "rebalance_storm",
)

KINDS: dict[str, FaultKind] = {}
for _module in MODULES:
    _kind = importlib.import_module(f"{__package__}.kinds.{_module}").KIND
    KINDS[_kind.name] = _kind
NAMES = tuple(KINDS)

# One fault entry of an experiment file: the kind's settings, picked by its `kind`.
Fault = Annotated[Union[tuple(k.schema for k in KINDS.values())], Field(discriminator="kind")]


def kind(name: str) -> FaultKind:
    return KINDS[name]


def names(acts_on: str) -> tuple[str, ...]:
    """The kinds that act on this (faults/kind.py ACTS_ON), in registry order."""
    return tuple(n for n, k in KINDS.items() if k.acts_on == acts_on)


def cannot_inject(means: Means, kinds: set[str]) -> list[str]:
    """The kinds a cluster with these means cannot run, each with the reason, e.g. "isolate (...)", sorted."""
    return [f"{name} ({KINDS[name].cannot(means)})" for name in sorted(kinds) if KINDS[name].cannot(means)]
