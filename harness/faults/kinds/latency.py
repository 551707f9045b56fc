"""`latency`: broker responses delayed (Toxiproxy's latency toxic)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Millis
from ..kind import FaultBase, FaultKind, toxic


class Latency(FaultBase):
    """Broker responses delayed by latency_ms +/- jitter_ms."""

    kind: Literal["latency"]
    latency_ms: Annotated[Millis, Field(ge=1)] = 100
    jitter_ms: Annotated[Millis, Field(ge=0)] = 0


KIND = FaultKind(Latency, "client traffic",
                 *toxic("latency", lambda p: {"latency": p["latency_ms"], "jitter": p["jitter_ms"]}),
                 needs=("client_proxy",), color="#eeca3b",
                 explore={"duration": (0.1, 10.0), "latency_ms": (1, 5000), "jitter_ms": (0, 500)})
