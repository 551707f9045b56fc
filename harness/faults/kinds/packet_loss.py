"""`packet-loss`: a share of the packets on the broker's network link dropped, each way (network namespaces)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..kind import FaultBase, FaultKind, link


class PacketLoss(FaultBase):
    """`percent` of the packets on the broker's link are dropped, each way (cluster.network: namespaces)."""

    kind: Literal["packet-loss"]
    percent: Annotated[float, Field(gt=0, le=100)] = 5.0


KIND = FaultKind(PacketLoss, "link", *link("drop"), needs=("client_proxy", "packets"),
                 explore={"duration": (0.5, 30.0), "percent": (0.1, 50.0)})
