"""Toxic definitions for the embedded proxy: names, attributes and their defaults.

The behaviour lives in `link.py`, which applies these to each connection; this
module only validates what the HTTP API receives, the way Toxiproxy 2.x does
(400 on an unknown type or stream, or a field of the wrong JSON type; null
counts as not given). It also refuses unknown and negative attributes.
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
}


class ToxicError(ValueError):
    """A toxic definition the API must refuse with 400."""


def shown(value) -> str:
    """A request value for an error message: as JSON, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


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

    def attr(self, key: str) -> int:
        return self.attributes[key]


INT64_MAX = 2**63 - 1


def _integer(value, what: str) -> int:
    # Toxiproxy decodes attributes into Go int64 fields, which refuse 1.5, 1e3 and "1".
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise ToxicError(f"{what} must be a whole number from 0 to {INT64_MAX}, got {shown(value)}")
    return value


def _toxicity(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ToxicError(f"toxicity must be a number from 0 to 1, got {shown(value)}")
    return float(value)


def _string(body: dict, key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise ToxicError(f"bad request body: {key} must be a string, got {shown(value)}")
    return value


def parse_toxic(body) -> Toxic:
    """Build a Toxic from an API request body, or raise ToxicError."""
    if not isinstance(body, dict):
        raise ToxicError(f"bad request body: a toxic must be a JSON object, got {shown(body)}")
    ttype, stream, name = _string(body, "type"), _string(body, "stream") or "downstream", _string(body, "name")
    if ttype not in TOXIC_ATTRIBUTES:
        raise ToxicError(f"invalid toxic type: {shown(ttype)}; allowed: {', '.join(TOXIC_ATTRIBUTES)}")
    if stream not in STREAMS:
        raise ToxicError(f"invalid stream: {shown(stream)}; allowed: upstream, downstream")
    toxicity = 1.0 if body.get("toxicity") is None else _toxicity(body["toxicity"])
    attributes = dict(TOXIC_ATTRIBUTES[ttype])
    attributes.update(_attributes(ttype, body.get("attributes")))
    return Toxic(name=name or f"{ttype}_{stream}", type=ttype, stream=stream, toxicity=toxicity,
                 attributes=attributes)


def _attributes(ttype: str, given) -> dict[str, int]:
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ToxicError(f"bad request body: attributes must be a JSON object, got {shown(given)}")
    allowed = TOXIC_ATTRIBUTES[ttype]
    out = {}
    for key, value in given.items():
        if key not in allowed:
            raise ToxicError(f"unknown attribute {shown(key)} for {ttype}; allowed: {', '.join(allowed)}")
        out[key] = _integer(value, f"{ttype}.{key}")
    return out


def update_toxic(toxic: Toxic, body) -> None:
    """Apply a POST /proxies/{p}/toxics/{t} body: attributes and toxicity may change."""
    if not isinstance(body, dict):
        raise ToxicError(f"bad request body: a toxic update must be a JSON object, got {shown(body)}")
    toxicity = toxic.toxicity if body.get("toxicity") is None else _toxicity(body["toxicity"])
    attributes = _attributes(toxic.type, body.get("attributes"))  # checked before anything changes
    toxic.toxicity = toxicity
    toxic.attributes.update(attributes)
