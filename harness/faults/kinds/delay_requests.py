"""`delay-requests`: Kafka requests of the named types held (or dropped) on their way to the broker (the embedded
proxy's kafka_hold toxic, which reads the request framing: proxy/kafka_frames.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from ...schema import Millis
from ..kind import FaultBase, FaultKind


# The Kafka requests a delay-requests fault may name, with their API keys (Kafka's protocol guide).
KAFKA_REQUESTS = {
    "Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8, "OffsetFetch": 9,
    "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12, "LeaveGroup": 13, "SyncGroup": 14,
    "InitProducerId": 22, "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25, "EndTxn": 26, "TxnOffsetCommit": 28,
    "ConsumerGroupHeartbeat": 68,
}


def _request_names(names: list[str]) -> list[str]:
    for name in names:
        if name not in KAFKA_REQUESTS:
            raise ValueError(f"{name!r} is not a request this fault knows; give any of {', '.join(KAFKA_REQUESTS)}")
    if len(set(names)) != len(names):
        raise ValueError("a request is named twice")
    return names


class DelayRequests(FaultBase):
    """A Kafka request of the named types that the client sends while the fault is on is held `hold_ms` from
    its arrival, with what follows it on its connection (TCP never reorders a connection), then all of it is
    delivered in order, even after the client gave up and closed the connection; its requests on a new
    connection overtake them. With `drop` the request and what follows it on its connection are never
    delivered. With `gap_ms` each is also delivered at least gap_ms after the previous one of its connection:
    requests sent back to back reach the broker spread out. The embedded proxy reads the request framing
    (proxy/kafka_frames.py)."""

    kind: Literal["delay-requests"]
    requests: Annotated[list[str], Field(min_length=1), AfterValidator(_request_names)] = Field(
        description="request types, e.g. [Produce] or [EndTxn, AddPartitionsToTxn]")
    hold_ms: Annotated[Millis, Field(ge=1)] = 5000
    drop: bool = False
    gap_ms: Annotated[Millis, Field(ge=0)] = 0


def _apply(cluster, broker, name, params, topic):
    """One kafka_hold toxic (the embedded proxy's own) per request type named, on the client's stream."""
    for request in params["requests"]:
        cluster.toxiproxy().add_toxic(cluster.proxy_name(broker), f"{name}-{request}", type="kafka_hold",
                                      stream="upstream", attributes={"api_key": KAFKA_REQUESTS[request],
                                                                     "hold": params["hold_ms"],
                                                                     "drop": int(params["drop"]),
                                                                     "gap": params.get("gap_ms", 0)})


def _heal(cluster, broker, name, params, topic):
    """Requests held already are still delivered when due; returns what this fault's toxics held and dropped
    (unparsed: streams this proxy could not follow, so far)."""
    proxy = cluster.proxy_name(broker)
    counts = cluster.toxiproxy().kafka_requests(proxy)
    for request in params["requests"]:
        cluster.toxiproxy().remove_toxic(proxy, f"{name}-{request}")
    mine = [counts["toxics"].get(f"{name}-{request}", {}) for request in params["requests"]]
    return {"kafka_requests": {"held": sum(c.get("held", 0) for c in mine),
                               "dropped": sum(c.get("dropped", 0) for c in mine),
                               "unparsed": counts["unparsed"]}}


KIND = FaultKind(DelayRequests, "client traffic", _apply, _heal, needs=("client_proxy", "request_framing"),
                 explore={"duration": (0.1, 10.0), "requests": tuple(KAFKA_REQUESTS), "hold_ms": (1, 30_000),
                          "drop": (False, True), "gap_ms": (0, 1000)})
