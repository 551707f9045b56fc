"""Toxic definitions for the embedded proxy: names, attributes and their defaults.

The behaviour lives in `link.py`, which applies these to each connection; this
module only validates what the HTTP API receives, the way Toxiproxy 2.12 does
(toxic_collection.go, decoding into Go structs): 400 "stream was invalid..." and
"invalid toxic type", 400 "bad request body: json: cannot unmarshal ..." for a field
of the wrong JSON type (null counts as not given). As in Toxiproxy, attributes it
does not know are ignored, names match case-insensitively, and any int64 (negative
too) and any toxicity are taken as given: a negative time waits nothing, toxicity
above 1 always applies, below 0 never.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

STREAMS = ("upstream", "downstream")

# type -> {attribute: default}; units as in Toxiproxy (ms, KB/s, bytes, µs for slicer delay).
TOXIC_ATTRIBUTES: dict[str, dict[str, int]] = {
    "latency": {"latency": 0, "jitter": 0},
    "bandwidth": {"rate": 0},
    "slow_close": {"delay": 0},
    "timeout": {"timeout": 0},
    "reset_peer": {"timeout": 0},
    "slicer": {"average_size": 0, "size_variation": 0, "delay": 0},
    "limit_data": {"bytes": 0},
    # The embedded proxy's own (Toxiproxy has none such), upstream: a Kafka request of API key `api_key` is
    # held `hold` ms from its arrival, and `gap` ms after the previous one, what follows it on the connection
    # waiting behind it (drop 1: neither is ever delivered). Framing in kafka_frames.py; see link.py.
    "kafka_hold": {"api_key": 0, "hold": 0, "drop": 0, "gap": 0},
}


class ToxicError(ValueError):
    """A toxic definition the API must refuse with 400."""


@dataclass
class Toxic:
    name: str
    type: str
    stream: str = "downstream"
    toxicity: float = 1.0
    attributes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "attributes": dict(self.attributes),
        }

    @property
    def direction(self) -> str:
        """upstream or downstream: the stream, whatever its case."""
        return self.stream.lower()

    def attr(self, key: str) -> int:
        return self.attributes[key]


INT64_MAX = 2**63 - 1
UPDATE_TYPE = 'struct { Attributes interface {} "json:\\"attributes\\""; Toxicity float32 "json:\\"toxicity\\"" }'
GO_STRUCT = {"latency": "LatencyToxic", "bandwidth": "BandwidthToxic", "slow_close": "SlowCloseToxic",
             "timeout": "TimeoutToxic", "reset_peer": "ResetToxic", "slicer": "SlicerToxic",
             "limit_data": "LimitDataToxic", "kafka_hold": "KafkaHoldToxic"}


def go_kind(value, literal: bool = True) -> str:
    """How Go's encoding/json names a JSON value it cannot decode: "string", "array", ..., and a number as
    "number 1.5" when decoding it into a number type failed (`literal`), else just "number"."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return f"number {json.dumps(value)}" if literal else "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "null")


def _cannot(value, where: str, gotype: str) -> ToxicError:
    return ToxicError(f"bad request body: json: cannot unmarshal {go_kind(value)} into Go {where} of type {gotype}")


def _integer(value, ttype: str, key: str) -> int:
    # Toxiproxy decodes attributes into Go int64 fields, which refuse 1.5, 1e3, "1" and 2**63.
    if isinstance(value, bool) or not isinstance(value, int) or not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise _cannot(value, f"struct field {GO_STRUCT[ttype]}.attributes.{key}", "int64")
    return value


def _toxicity(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _cannot(value, "struct field ToxicWrapper.toxicity", "float32")
    return float(value)


def _string(body: dict, key: str) -> str | None:
    value = field_of(body, key)
    if value is not None and not isinstance(value, str):
        raise ToxicError(f"bad request body: json: cannot unmarshal {go_kind(value, literal=False)} into Go struct "
                         f"field ToxicWrapper.{key} of type string")
    return value


def field_of(body: dict, key: str):
    """body[key] as Go's decoder finds it: the exact key, else one that matches ignoring case (the last)."""
    if key in body:
        return body[key]
    found = [v for k, v in body.items() if k.lower() == key]
    return found[-1] if found else None


def parse_toxic(body) -> Toxic:
    """Build a Toxic from an API request body, or raise ToxicError (checks in Toxiproxy's order)."""
    if not isinstance(body, dict):
        raise _cannot(body, "value", "toxics.ToxicWrapper")
    name, ttype, stream = _string(body, "name"), _string(body, "type"), _string(body, "stream")
    stream = "downstream" if stream is None else stream
    toxicity = 1.0 if field_of(body, "toxicity") is None else _toxicity(field_of(body, "toxicity"))
    given = field_of(body, "attributes")
    if given is not None and not isinstance(given, dict):  # decoded first into the no-op toxic
        raise _cannot(given, "struct field ToxicWrapper.attributes", "toxics.NoopToxic")
    if stream.lower() not in STREAMS:
        raise ToxicError("stream was invalid, can be either upstream or downstream")
    if ttype not in TOXIC_ATTRIBUTES:
        raise ToxicError("invalid toxic type")
    attributes = dict(TOXIC_ATTRIBUTES[ttype])
    attributes.update(_attributes(ttype, given))
    # The stream is shown as given ("UPSTREAM" stays so), and acts by its direction
    return Toxic(name=name or f"{ttype}_{stream}", type=ttype, stream=stream, toxicity=toxicity,
                 attributes=attributes)


def _attributes(ttype: str, given) -> dict[str, int]:
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise _cannot(given, "value", f"toxics.{GO_STRUCT[ttype]}")
    return {key: _integer(value, ttype, key) for key in TOXIC_ATTRIBUTES[ttype]
            if (value := field_of(given, key)) is not None}


def update_toxic(toxic: Toxic, body) -> None:
    """Apply a POST /proxies/{p}/toxics/{t} body: attributes and toxicity may change (nothing else)."""
    if not isinstance(body, dict):
        raise _cannot(body, "value", UPDATE_TYPE)
    toxicity = toxic.toxicity if field_of(body, "toxicity") is None else _toxicity(field_of(body, "toxicity"))
    attributes = _attributes(toxic.type, field_of(body, "attributes"))  # checked before anything changes
    toxic.toxicity = toxicity
    toxic.attributes.update(attributes)
