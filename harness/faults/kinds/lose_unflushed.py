"""`lose-unflushed`: a broker kill that also cuts from its log what only its page cache held, as a power loss
would (cluster/segments.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..kind import Downtime, FaultKind


class LoseUnflushed(Downtime):
    """SIGKILL the broker and, while it is down, cut from its log what only its page cache held (as a power
    loss would): each partition's active segment back to its last flushed position, or by the last
    `drop_batches` record batches; start it again after downtime seconds (cluster/segments.py)."""

    kind: Literal["lose-unflushed"]
    drop_batches: Annotated[int, Field(ge=1)] | None = Field(
        None, description="cut this many record batches from each partition's tail instead of back to its "
                          "recovery point (the last flushed offset)")


# The cut is journaled as the fault's effect.
KIND = FaultKind(LoseUnflushed, "broker", lambda c, b, n, p, t: c.lose_unflushed(b, t, p.get("drop_batches")),
                 lambda c, b, n, p, t: c.start_broker(b), needs=("client_proxy", "broker_process", "log_folders"),
                 holds="broker", stops_broker=True, color="#8c564b",
                 explore={"downtime": (0.5, 30.0), "drop_batches": (1, 100)})
