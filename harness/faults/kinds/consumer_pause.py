"""`consumer-pause`: SIGSTOP of one member of the consumer group for the duration, then SIGCONT (applied by the
group's supervisor: workload/consumers.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Seconds
from ..channel import PAUSE_MEMBER
from ..kind import FaultKind, WorkloadFault, consumer_problem


class ConsumerPause(WorkloadFault):
    """SIGSTOP of one member (the members in turn) for `duration`, then SIGCONT. Longer than the group's
    session timeout, the group rebalances without it and it resumes as a zombie of an older generation."""

    kind: Literal["consumer-pause"]
    duration: Annotated[Seconds, Field(gt=0)] = 10.0


KIND = FaultKind(ConsumerPause, "consumer", serve=PAUSE_MEMBER, check=consumer_problem, holds="member",
                 explore={"duration": (0.5, 60.0)})
