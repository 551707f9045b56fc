"""`lost-acks`: responses are dropped and the connection cut, so requests reach the broker and their acks never
return (Toxiproxy's timeout toxic on the responses)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Millis
from ..kind import FaultBase, FaultKind, toxic


class LostAcks(FaultBase):
    """Responses are dropped and the connection cut: requests reach the broker, acks never return."""

    kind: Literal["lost-acks"]
    cut_after_ms: Annotated[Millis, Field(ge=1)] = 100


# Responses are dropped while requests still reach the broker, and the connection is cut cut_after_ms after the
# last one or when the fault ends: every request in flight is written but its ack never arrives.
KIND = FaultKind(LostAcks, "client traffic", *toxic("timeout", lambda p: {"timeout": p["cut_after_ms"]}),
                 needs=("client_proxy",), color="#e45756",
                 explore={"duration": (0.05, 5.0), "cut_after_ms": (1, 2000)})
