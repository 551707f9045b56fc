"""Which Kafka protocol APIs a broker answers to, from its ApiVersions response.

Hand-written (about thirty lines of the wire format) because neither confluent-kafka nor librdkafka
exposes the answer: a consumer asked for group.protocol=consumer (KIP-848) on a broker without the
ConsumerGroupHeartbeat API just waits for an assignment that never comes, without an error.
Plaintext listeners only; for TLS or SASL the caller is told None (not known).
"""

from __future__ import annotations

import socket
import struct

API_VERSIONS, CONSUMER_GROUP_HEARTBEAT = 18, 68


def supported_apis(client: dict, timeout: float = 10.0) -> set[int] | None:
    """The API keys the first reachable bootstrap broker supports, or None when it cannot be asked
    (a security protocol other than plaintext, or no broker answered)."""
    if str(client.get("security.protocol", "plaintext")).lower() != "plaintext":
        return None
    for address in str(client.get("bootstrap.servers", "")).split(","):
        host, _, port = address.strip().rpartition(":")
        if port.isdigit() and (found := _apis_at(host.strip("[]") or "127.0.0.1", int(port), timeout)) is not None:
            return found
    return None


def kafka_answers(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether a Kafka broker answers ApiVersions at host:port. A bare TCP accept is not enough: Docker's
    published ports (docker-proxy) accept every connection and close it when nothing listens behind."""
    return _apis_at(host, port, timeout) is not None


def _apis_at(host: str, port: int, timeout: float) -> set[int] | None:
    """The API keys the broker at host:port answers to; None when nothing answers ApiVersions there."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            return _ask(s)
    except (OSError, ValueError, struct.error):
        return None


def _ask(s: socket.socket) -> set[int]:
    client_id = b"kafka-chaos"
    # Request header v1: api_key, api_version (0: every broker answers it), correlation_id, client_id.
    body = struct.pack(">hhih", API_VERSIONS, 0, 1, len(client_id)) + client_id
    s.sendall(struct.pack(">i", len(body)) + body)
    size = struct.unpack(">i", _exactly(s, 4))[0]
    answer = _exactly(s, size)
    _correlation, error, count = struct.unpack_from(">ihi", answer)
    if error:
        raise ValueError(f"ApiVersions error {error}")
    return {struct.unpack_from(">hhh", answer, 10 + 6 * i)[0] for i in range(count)}


def _exactly(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data
