"""`rebalance-storm`: members join and leave the consumer group in turn for the duration (applied by the group's
supervisor: workload/consumers.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, model_validator

from ...schema import MAX_FAULTS_PER_SECOND, Seconds, stored
from ..channel import STORM_MEMBERS
from ..kind import FaultKind, WorkloadFault, consumer_problem


class RebalanceStorm(WorkloadFault):
    """For `duration` seconds, every `interval` seconds a member joins the group (a new process) or the
    last one that joined leaves it (a graceful close), alternately; those still in when it heals leave."""

    kind: Literal["rebalance-storm"]
    duration: Annotated[Seconds, Field(gt=0)] = 10.0
    interval: Annotated[Seconds, Field(ge=1 / MAX_FAULTS_PER_SECOND)] = 2.0  # the floor of every fault's `every`

    @model_validator(mode="after")
    def _acts(self, info: ValidationInfo):
        # The first member joins an interval after the start; one due as the storm heals is stopped unmade.
        if self.interval >= self.duration and not stored(info):
            raise ValueError(f"interval: {self.interval:g} s is not shorter than the storm's duration, "
                             f"{self.duration:g} s: no member would ever join or leave")
        return self


KIND = FaultKind(RebalanceStorm, "consumer", serve=STORM_MEMBERS, check=consumer_problem,
                 explore={"duration": (5.0, 60.0), "interval": (0.5, 4.0)})
