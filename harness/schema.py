"""The strict schema every YAML section is read with (pydantic), and the bounds of times in it.

Shared by the experiment file (spec.py) and the fault kinds' settings (faults/), which spec.py composes:
unknown fields are refused, true is never read as a number, and no time is infinite or longer than a day.
"""

from __future__ import annotations

from typing import Annotated, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

# Bounds: what no experiment needs, refused before anything starts (README, "Bounds").
MAX_SECONDS = 86_400.0  # any time in the file: at, every, start, duration, downtime, fault_window, the workload
MAX_FAULTS_PER_SECOND = 50  # faults that start within any one second (each runs on its own thread)
MAX_MS = 3_600_000  # any *_ms setting of a fault
Seconds = Annotated[float, Field(le=MAX_SECONDS)]
Millis = Annotated[int, Field(le=MAX_MS)]


def _numeric(annotation) -> bool:
    """A field that takes a number and never a true/false (int, float, Annotated or Optional ones)."""
    if annotation in (int, float):
        return True
    args = get_args(annotation)
    return bool(args) and bool not in args and any(_numeric(a) for a in args if a is not type(None))


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_true_for_a_number(cls, data):
        """pydantic reads true as 1 for a number field (members: true would be one member): refused."""
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                for key in {name, field.alias} - {None}:
                    if isinstance(data.get(key), bool) and _numeric(field.annotation):
                        raise ValueError(f"{key}: {str(data[key]).lower()} is not a number")
        return data


def stored(info: ValidationInfo) -> bool:
    """Validating a run folder's spec.yaml: what this machine has (its environment) does not matter,
    and what the live run checked before it started (faults that would never fire) is history."""
    return bool(info.context and info.context.get("stored"))
