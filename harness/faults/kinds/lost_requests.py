"""`lost-requests`: requests are held on their way to the broker and the connection cut (Toxiproxy's timeout
toxic on the requests)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Millis
from ..kind import FaultBase, FaultKind, toxic


class LostRequests(FaultBase):
    """Requests are held on their way to the broker and the connection cut: nothing sent in the window is
    written, yet the client cannot know (a "possibly persisted" error, as librdkafka calls it)."""

    kind: Literal["lost-requests"]
    cut_after_ms: Annotated[Millis, Field(ge=1)] = 100


KIND = FaultKind(LostRequests, "client traffic",
                 *toxic("timeout", lambda p: {"timeout": p["cut_after_ms"]}, stream="upstream"),
                 needs=("client_proxy",), color="#ff9da6",
                 explore={"duration": (0.05, 5.0), "cut_after_ms": (1, 2000)})
