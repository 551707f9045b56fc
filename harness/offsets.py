"""The offsets a topic's partitions' leaders list (ListOffsets): for the final read (engine/readback.py) and
for a fault that waits for a transaction's marker (faults/kinds/stray_produce.py). Kept out of harness.cluster, whose package
imports the spec: the final read's Spark workers import this too."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError

# The errors of a partition whose leader is moving (a preferred leader elected back after the faults healed):
# asked again, never raised, until the caller's timeout.
LEADER_MOVING = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.FENCED_LEADER_EPOCH,
                 KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.OFFSET_NOT_AVAILABLE, KafkaError._TRANSPORT}


def watermarks(client: dict, topic: str, partitions: int, isolation: str = "read_committed",
               timeout: float = 30) -> list[tuple[int, int]]:
    """Each partition's (log start offset, end offset) as the brokers list them; under read_committed the end
    is the last stable offset. Two ListOffsets requests for every partition (the admin API; a consumer asks
    one partition at a time, ~45 ms each, which made this 0.13 s for three partitions, asked twice a
    variant). A partition whose leader is moving is asked again until `timeout`, and so is one listed without
    valid offsets (a negative one: a read assigned -1001 fails, and -1 reads from the end); other errors are
    raised. A CI run's final read was once assigned -1001 right after a leader's isolation healed."""
    from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    admin = admin_client(client)
    deadline = time.monotonic() + timeout
    found: dict[int, tuple[int, int]] = {}
    pending = list(range(partitions))
    while pending:
        wait = max(1.0, deadline - time.monotonic())
        asked = [admin.list_offsets({TopicPartition(topic, p): spec for p in pending}, isolation_level=level,
                                    request_timeout=wait)
                 for spec in (OffsetSpec.earliest(), OffsetSpec.latest())]
        moving = []
        for p in pending:
            try:
                low, high = (futures[TopicPartition(topic, p)].result().offset for futures in asked)
            except KafkaException as e:
                if e.args[0].code() not in LEADER_MOVING or time.monotonic() >= deadline:
                    raise
                moving.append(p)
                continue
            if 0 <= low <= high:
                found[p] = (low, high)
            elif time.monotonic() >= deadline:
                raise RuntimeError(f"{topic}[{p}]: the brokers listed no valid offsets (log start {low}, end {high}) "
                                   f"for {timeout:.0f}s")
            else:  # an answer without an error but without offsets (-1001: none known): the leader is moving
                moving.append(p)
        pending = moving
        if pending:
            time.sleep(0.2)
    return [found[p] for p in range(partitions)]


def admin_client(client: dict):
    """An admin client for the harness's own lookups (topics, offsets), with librdkafka's log at notice and
    above: a client without a logger writes to the terminal, and each one closed said `Purging 1 unserved
    events from background queue` (an info line) there, once a run, every try of an exploration."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({**client, "log_level": 5})
