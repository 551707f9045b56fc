"""`producer-pause`: the producer instance is frozen mid-transaction and a second one takes over; the first resumes
as a zombie (applied by the produce loop: workload/producer.py, transactional.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Seconds
from ..channel import PAUSE_PRODUCER
from ..kind import FaultKind, WorkloadFault, producer_problem


class ProducerPause(WorkloadFault):
    """The producer instance is frozen mid-transaction (its thread stops calling it) and a second instance
    with the same settings (and transactional.id) takes over; after `duration` the first resumes as a zombie:
    it sends the rest of its transaction and commits (a plain producer flushes)."""

    kind: Literal["producer-pause"]
    duration: Annotated[Seconds, Field(gt=0)] = 2.0


KIND = FaultKind(ProducerPause, "producer", serve=PAUSE_PRODUCER, check=producer_problem, holds="producer",
                 explore={"duration": (0.5, 30.0)})
