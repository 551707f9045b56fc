"""`broker-pause`: the broker process is frozen (SIGSTOP: to the local process, or to a container's first process,
its JVM) for the duration."""

from __future__ import annotations

from typing import Literal

from ..kind import FaultBase, FaultKind


class BrokerPause(FaultBase):
    """The broker process is frozen (SIGSTOP: to the local process, or to a container's first process, its JVM)
    for the duration."""

    kind: Literal["broker-pause"]


KIND = FaultKind(BrokerPause, "broker", lambda c, b, n, p, t: c.pause_broker(b),
                 lambda c, b, n, p, t: c.resume_broker(b), needs=("client_proxy", "broker_process"), holds="broker",
                 color="#4c78a8", explore={"duration": (0.5, 30.0)})
