"""`bandwidth`: the broker's responses (or the client's requests) throttled (Toxiproxy's bandwidth toxic)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..kind import FaultBase, FaultKind, toxic


class Bandwidth(FaultBase):
    """Broker responses (or, with `stream: requests`, the client's requests) throttled to rate_kbps
    kilobytes per second. Throttled requests reach the broker spread out, one read at a time, instead of
    back to back."""

    kind: Literal["bandwidth"]
    rate_kbps: Annotated[int, Field(ge=1, le=10_000_000)] = 100
    stream: Literal["responses", "requests"] = "responses"


KIND = FaultKind(Bandwidth, "client traffic", *toxic("bandwidth", lambda p: {"rate": p["rate_kbps"]}),
                 needs=("client_proxy",), color="#b279a2",
                 explore={"duration": (0.1, 10.0), "rate_kbps": (1, 10_000), "stream": ("responses", "requests")})
