"""Kafka's request framing on a client -> broker stream, for the embedded proxy's `kafka_hold` toxic.

Every Kafka request is a frame: int32 size (bytes after it), then the request header, whose first fields are
the same in every version: int16 api_key, int16 api_version, int32 correlation_id. FrameTracker follows a
stream chunk by chunk and cuts it into frame pieces without copying what it does not hold; only these header
fields are read. A stream that does not look like Kafka requests (a size out of bounds, an API key no Kafka
defines) is passed through unchanged from there on, and counted (`unparsed`).

Hand-written because the header is four fields, and a Kafka protocol library (kafka-python's, aiokafka's)
would decode whole requests: the proxy must not pay for that on every byte a producer sends.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER = 12  # size + api_key + api_version + correlation_id
MAX_FRAME = 200 * 1024 * 1024  # larger than any request a broker accepts (socket.request.max.bytes: 100 MiB)
MAX_API_KEY = 200  # Kafka 4.1 defines keys up to 92; far beyond that is not a Kafka stream

@dataclass(frozen=True)
class Header:
    api_key: int
    api_version: int
    correlation_id: int
    size: int  # the whole frame, its size field included


@dataclass
class Piece:
    """A contiguous part of one frame as it arrived: `first` when it starts the frame, `last` when it ends it."""

    header: Header | None  # None: the stream is not being parsed (unparsed)
    data: bytes | memoryview
    first: bool
    last: bool


class FrameTracker:
    """Cuts a client -> broker stream into frame pieces, in order; feed() it every chunk."""

    def __init__(self) -> None:
        self.unparsed = False  # gave up: everything from here on is one opaque piece per chunk
        self._partial = b""  # the start of a frame whose header has not fully arrived
        self._header: Header | None = None  # the frame being passed
        self._left = 0  # its bytes still to come

    @property
    def at_boundary(self) -> bool:
        """Nothing of a frame is half passed: a whole frame may be written now without tearing another."""
        return self.unparsed or (self._left == 0 and not self._partial)

    def feed(self, data: bytes, keep: bool = True) -> list[Piece]:
        """The chunk's pieces, in order; with keep False only the state moves on (nothing to hold: the proxy
        passes the chunk as it came) and nothing is returned."""
        if self.unparsed:
            return [Piece(None, data, False, False)] if data and keep else []
        pieces: list[Piece] = []
        view, pos = memoryview(data), 0
        while pos < len(data):
            if self._left:  # the rest of the current frame
                n = min(self._left, len(data) - pos)
                self._left -= n
                if keep:
                    pieces.append(Piece(self._header, view[pos:pos + n], False, self._left == 0))
                pos += n
                continue
            need = HEADER - len(self._partial)
            if len(data) - pos < need and not self._partial:
                self._partial = bytes(view[pos:])
                break
            if self._partial:
                if len(data) - pos < need:
                    self._partial += bytes(view[pos:])
                    break
                head = self._partial + bytes(view[pos:pos + need])
                start, self._partial = head, b""
                pos += need
            else:
                head, start = bytes(view[pos:pos + HEADER]), None
                pos += HEADER
            size, api_key, version, corr = struct.unpack(">ihhi", head)
            if not (HEADER - 4 <= size <= MAX_FRAME and 0 <= api_key <= MAX_API_KEY and version >= 0):
                self.unparsed = True
                if keep:
                    pieces.append(Piece(None, head + bytes(view[pos:]), False, False))
                return pieces
            self._header = Header(api_key, version, corr, size + 4)
            self._left = size + 4 - HEADER
            body = min(self._left, len(data) - pos)
            self._left -= body
            if keep:  # the header's bytes and the body's that came with them, as one piece (copied only if
                # the header was split across chunks)
                chunk = head + bytes(view[pos:pos + body]) if start is not None else view[pos - HEADER:pos + body]
                pieces.append(Piece(self._header, chunk, True, self._left == 0))
            pos += body
        return pieces
