"""`isolate`: the broker is cut off from its peers and the controller quorum while its clients still reach it."""

from __future__ import annotations

from typing import Literal

from ..kind import FaultBase, FaultKind


class Isolate(FaultBase):
    """The broker is cut off from its peers and the controller quorum (replication and controller
    traffic) while clients still reach it through its proxy; healed by reconnecting. `direction` in or
    out (one way: what its peers send it, or what it sends them, is dropped) needs network namespaces."""

    kind: Literal["isolate"]
    direction: Literal["both", "in", "out"] = "both"


def _one_way(kind: str, experiment, fault) -> str:
    if fault is not None and fault.direction != "both" and getattr(experiment.cluster, "network", None) != "namespaces":
        return (f"direction: {fault.direction}: a one-way isolation drops packets, which needs cluster.network: "
                "namespaces (backend local, broker kafka); proxies cut connections both ways")
    return ""


KIND = FaultKind(Isolate, "peer traffic", lambda c, b, n, p, t: c.isolate_broker(b, p.get("direction", "both")),
                 lambda c, b, n, p, t: c.rejoin_broker(b), needs=("client_proxy", "peer_traffic"), check=_one_way,
                 color="#2f7f4f", explore={"duration": (0.5, 60.0), "direction": ("both", "in", "out")})
