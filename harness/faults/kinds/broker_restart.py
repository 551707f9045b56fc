"""`broker-restart`: stop the broker gracefully (SIGTERM), start it again after the downtime."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Seconds
from ..kind import Downtime, FaultKind


class BrokerRestart(Downtime):
    """Stop the broker gracefully (SIGTERM), start it again after downtime seconds."""

    kind: Literal["broker-restart"]
    downtime: Annotated[Seconds, Field(gt=0)] = 0.5


KIND = FaultKind(BrokerRestart, "broker", lambda c, b, n, p, t: c.stop_broker(b),
                 lambda c, b, n, p, t: c.start_broker(b), needs=("client_proxy", "broker_process"), holds="broker",
                 stops_broker=True, loses_memory_log=True, color="#72b7b2", explore={"downtime": (0.2, 30.0)})
