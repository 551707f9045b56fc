"""`packet-duplicate`: a share of the packets on the broker's network link sent twice, each way (network
namespaces)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..kind import FaultBase, FaultKind, link


class PacketDuplicate(FaultBase):
    """`percent` of the packets on the broker's link are sent twice, each way (cluster.network: namespaces)."""

    kind: Literal["packet-duplicate"]
    percent: Annotated[float, Field(gt=0, le=100)] = 5.0


KIND = FaultKind(PacketDuplicate, "link", *link("duplicate"), needs=("client_proxy", "packets"),
                 explore={"duration": (0.5, 30.0), "percent": (0.1, 50.0)})
