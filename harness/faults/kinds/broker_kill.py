"""`broker-kill`: SIGKILL the broker, start it again after the downtime."""

from __future__ import annotations

from typing import Literal

from ..kind import Downtime, FaultKind


class BrokerKill(Downtime):
    """SIGKILL the broker, start it again after downtime seconds."""

    kind: Literal["broker-kill"]


KIND = FaultKind(BrokerKill, "broker", lambda c, b, n, p, t: c.kill_broker(b),
                 lambda c, b, n, p, t: c.start_broker(b), needs=("client_proxy", "broker_process"), holds="broker",
                 stops_broker=True, loses_memory_log=True, color="#222222", explore={"downtime": (0.5, 30.0)})
