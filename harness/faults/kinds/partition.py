"""`partition`: the broker's proxy is down (a network partition between the clients and the broker)."""

from __future__ import annotations

from typing import Literal

from ..kind import FaultBase, FaultKind


class Partition(FaultBase):
    """The broker's proxy is down: connections dropped, new ones refused (a network partition)."""

    kind: Literal["partition"]


KIND = FaultKind(Partition, "client traffic", lambda c, b, n, p, t: c.cut([c.proxy_name(b)]),
                 lambda c, b, n, p, t: c.reconnect([c.proxy_name(b)]), needs=("client_proxy",), color="#54a24b",
                 explore={"duration": (0.1, 30.0)})
