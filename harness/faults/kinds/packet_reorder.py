"""`packet-reorder`: some packets on the broker's network link overtake the others, each way (a netfilter queue
in network namespaces)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Millis
from ..kind import FaultBase, FaultKind, link


class PacketReorder(FaultBase):
    """`percent` of the packets on the broker's link go at once while the others wait `delay_ms`, so they
    overtake them, each way (netem's `reorder`, made with a netfilter queue: cluster/packet_queue.py)."""

    kind: Literal["packet-reorder"]
    percent: Annotated[float, Field(gt=0, le=100)] = 25.0
    delay_ms: Annotated[Millis, Field(ge=1)] = 10


KIND = FaultKind(PacketReorder, "link", *link("reorder"), needs=("client_proxy", "packets", "packet_queue"),
                 holds="link queue", explore={"duration": (0.5, 30.0), "percent": (1.0, 75.0), "delay_ms": (1, 200)})
