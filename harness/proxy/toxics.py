"""Toxic definitions for the embedded proxy: names, attributes and their defaults.

The behaviour lives in `link.py`, which applies these to each connection; this
module only validates what the HTTP API receives, the way Toxiproxy 2.x does
(400 on an unknown type, stream or attribute value).
"""

from __future__ import annotations

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


def _number(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ToxicError(f"{what} must be a non-negative number, got {value!r}")
    return int(value)


def parse_toxic(body: dict) -> Toxic:
    """Build a Toxic from an API request body, or raise ToxicError."""
    if not isinstance(body, dict):
        raise ToxicError("toxic must be a JSON object")
    ttype = body.get("type")
    if ttype not in TOXIC_ATTRIBUTES:
        raise ToxicError(f"invalid toxic type: {ttype!r}; allowed: {', '.join(TOXIC_ATTRIBUTES)}")
    stream = body.get("stream") or "downstream"
    if stream not in STREAMS:
        raise ToxicError(f"invalid stream: {stream!r}; allowed: upstream, downstream")
    toxicity = body.get("toxicity", 1.0)
    if isinstance(toxicity, bool) or not isinstance(toxicity, (int, float)) or not 0 <= toxicity <= 1:
        raise ToxicError(f"toxicity must be between 0 and 1, got {toxicity!r}")
    name = body.get("name") or f"{ttype}_{stream}"
    attributes = dict(TOXIC_ATTRIBUTES[ttype])
    attributes.update(_attributes(ttype, body.get("attributes") or {}))
    return Toxic(name=name, type=ttype, stream=stream, toxicity=float(toxicity), attributes=attributes)


def _attributes(ttype: str, given: dict) -> dict[str, int]:
    if not isinstance(given, dict):
        raise ToxicError("attributes must be a JSON object")
    allowed = TOXIC_ATTRIBUTES[ttype]
    out = {}
    for key, value in given.items():
        if key not in allowed:
            raise ToxicError(f"unknown attribute {key!r} for {ttype}; allowed: {', '.join(allowed)}")
        out[key] = _number(value, f"{ttype}.{key}")
    return out


def update_toxic(toxic: Toxic, body: dict) -> None:
    """Apply a POST /proxies/{p}/toxics/{t} body: attributes and toxicity may change."""
    if "toxicity" in body:
        t = body["toxicity"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 1:
            raise ToxicError(f"toxicity must be between 0 and 1, got {t!r}")
        toxic.toxicity = float(t)
    toxic.attributes.update(_attributes(toxic.type, body.get("attributes") or {}))
