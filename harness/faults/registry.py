"""The fault kinds the harness knows: one line registers a kind.

Everything else asks here: the experiment schema (the union of the kinds' settings), the schedule (what a kind
holds), the nemesis (how it is applied), the backends (what it needs) and the report (its colour).
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from .kind import FaultKind, Means

# One line a kind, in the order the README lists them (the order of every list of kinds the harness prints).
from .kinds.lost_acks import KIND as LOST_ACKS
from .kinds.lost_requests import KIND as LOST_REQUESTS
from .kinds.reset_connections import KIND as RESET_CONNECTIONS
from .kinds.latency import KIND as LATENCY
from .kinds.bandwidth import KIND as BANDWIDTH
from .kinds.slow_close import KIND as SLOW_CLOSE
from .kinds.partition import KIND as PARTITION
from .kinds.delay_requests import KIND as DELAY_REQUESTS
from .kinds.isolate import KIND as ISOLATE
from .kinds.packet_loss import KIND as PACKET_LOSS
from .kinds.packet_duplicate import KIND as PACKET_DUPLICATE
from .kinds.packet_reorder import KIND as PACKET_REORDER
from .kinds.packet_delay import KIND as PACKET_DELAY
from .kinds.broker_pause import KIND as BROKER_PAUSE
from .kinds.broker_kill import KIND as BROKER_KILL
from .kinds.broker_restart import KIND as BROKER_RESTART
from .kinds.lose_unflushed import KIND as LOSE_UNFLUSHED
from .kinds.stray_produce import KIND as STRAY_PRODUCE
from .kinds.producer_restart import KIND as PRODUCER_RESTART
from .kinds.producer_pause import KIND as PRODUCER_PAUSE
from .kinds.consumer_kill import KIND as CONSUMER_KILL
from .kinds.consumer_pause import KIND as CONSUMER_PAUSE
from .kinds.rebalance_storm import KIND as REBALANCE_STORM

KINDS: dict[str, FaultKind] = {k.name: k for k in list(globals().values()) if isinstance(k, FaultKind)}  # as imported

# One fault entry of an experiment file: the kind's settings, picked by its `kind`.
Fault = Annotated[Union[tuple(k.schema for k in KINDS.values())], Field(discriminator="kind")]


def names(acts_on: str) -> tuple[str, ...]:
    """The kinds that act on this (faults/kind.py ACTS_ON), in registry order."""
    return tuple(n for n, k in KINDS.items() if k.acts_on == acts_on)


def cannot_inject(means: Means, kinds: set[str]) -> list[str]:
    """The kinds a cluster with these means cannot run, each with the reason, e.g. "isolate (...)", sorted."""
    return [f"{name} ({KINDS[name].cannot(means)})" for name in sorted(kinds) if KINDS[name].cannot(means)]
