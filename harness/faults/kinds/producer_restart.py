"""`producer-restart`: the producer is closed without flushing and a new instance created (applied by the produce
loop: workload/producer.py, transactional.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Seconds
from ..channel import RESTART_PRODUCER
from ..kind import FaultKind, WorkloadFault, producer_problem


class ProducerRestart(WorkloadFault):
    """The producer is closed without flushing (in flight and queued sends purged) and a new instance is
    created; the application sends again what was not acknowledged (its open transaction, if any)."""

    kind: Literal["producer-restart"]
    duration: Annotated[Seconds, Field(gt=0)] = 0.05


KIND = FaultKind(ProducerRestart, "producer", serve=RESTART_PRODUCER, check=producer_problem,
                 explore={"duration": (0.01, 1.0)})
