"""`consumer-kill`: SIGKILL of one member of the consumer group, replaced when it heals (applied by the group's
supervisor: workload/consumers.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...schema import Seconds
from ..channel import KILL_MEMBER
from ..kind import FaultKind, WorkloadFault, consumer_problem


class ConsumerKill(WorkloadFault):
    """SIGKILL of one member of the consumer group (the members in turn); its replacement (a new process, a
    new member of the group, in the same slot) starts when the fault heals, after `duration` seconds."""

    kind: Literal["consumer-kill"]
    duration: Annotated[Seconds, Field(gt=0)] = 1.0


KIND = FaultKind(ConsumerKill, "consumer", serve=KILL_MEMBER, check=consumer_problem, holds="member",
                 explore={"duration": (0.1, 30.0)})
