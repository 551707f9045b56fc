"""`packet-delay`: every packet on the broker's network link waits, each way (a netfilter queue in network
namespaces)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Millis
from ..kind import FaultBase, FaultKind, link


class PacketDelay(FaultBase):
    """Every packet on the broker's link waits `delay_ms` +/- `jitter_ms`, each way (a netfilter queue:
    cluster/packet_queue.py; packets drawn apart by the jitter may swap places)."""

    kind: Literal["packet-delay"]
    delay_ms: Annotated[Millis, Field(ge=1)] = 50
    jitter_ms: Annotated[Millis, Field(ge=0)] = 0


KIND = FaultKind(PacketDelay, "link", *link("delay"), needs=("client_proxy", "packets", "packet_queue"),
                 holds="link queue", explore={"duration": (0.5, 30.0), "delay_ms": (1, 500), "jitter_ms": (0, 100)})
