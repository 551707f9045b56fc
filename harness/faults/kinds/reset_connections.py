"""`reset-connections`: every client connection to the broker is reset (Toxiproxy's reset_peer toxic)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Seconds
from ..kind import FaultBase, FaultKind, toxic


class ResetConnections(FaultBase):
    """Every client connection to the target is reset (TCP RST), and new ones while the fault lasts."""

    kind: Literal["reset-connections"]
    duration: Annotated[Seconds, Field(gt=0)] = 0.05


KIND = FaultKind(ResetConnections, "client traffic", *toxic("reset_peer", lambda p: {"timeout": 0}),
                 needs=("client_proxy",), color="#f58518", explore={"duration": (0.01, 2.0)})
