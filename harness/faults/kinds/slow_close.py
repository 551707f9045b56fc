"""`slow-close`: closing connections linger before they close (Toxiproxy's slow_close toxic)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Millis
from ..kind import FaultBase, FaultKind, toxic


class SlowClose(FaultBase):
    """Closing connections linger delay_ms before they close."""

    kind: Literal["slow-close"]
    delay_ms: Annotated[Millis, Field(ge=1)] = 1000


KIND = FaultKind(SlowClose, "client traffic", *toxic("slow_close", lambda p: {"delay": p["delay_ms"]}),
                 needs=("client_proxy",), color="#9d755d", explore={"duration": (0.1, 10.0), "delay_ms": (1, 5000)})
