"""Before the final read (engine/readback.py): whether the workload left a transaction open. An open transaction
(a hanging one, if it never ends) holds a partition's last stable offset below its high watermark, and a
read_committed read then cannot reach the partition's end; the run waits a while, then says so. No Spark here:
two ListOffsets requests a look."""

from __future__ import annotations

import time

from ..offsets import watermarks

# Seconds between looks. The markers of the last commit land a moment after the workload ends, so the
# first look often finds a partition behind; 0.5 s between looks made that moment cost half a second.
LOOK = 0.1


def lso_stall(client: dict, topic: str, partitions: int, wait: float = 15.0) -> tuple[float, dict[int, tuple[int, int]]]:
    """How long (s) the read_committed end of some partition stayed below its read_uncommitted end, up to `wait`,
    and {partition: (last stable offset, high watermark)} for those still behind then: an open transaction (a
    hanging one, if it never ends) hides what follows it from read_committed readers. (0.0, {}) when they are
    all equal at once."""
    start, stalled = time.monotonic(), 0.0
    while True:
        committed = watermarks(client, topic, partitions, "read_committed")
        uncommitted = watermarks(client, topic, partitions, "read_uncommitted")
        behind = {p: (c[1], u[1]) for p, (c, u) in enumerate(zip(committed, uncommitted)) if c[1] < u[1]}
        if not behind or stalled >= wait:
            return round(stalled, 1), behind
        time.sleep(LOOK)
        stalled = time.monotonic() - start  # behind since the first look
