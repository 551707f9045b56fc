"""The embedded proxy's Kafka request framing (proxy/kafka_frames.py), on what librdkafka sent Kafka 4.1.0
(requests.bin, made by tests/data/kafka-4.1.0/capture_requests.py: an idempotent producer, a transactional
one and a consumer group) cut into chunks every way, and on streams that are not Kafka requests."""

import random
import struct
from collections import Counter
from pathlib import Path

import pytest

from harness.proxy.kafka_frames import FrameTracker, Header
from harness.faults.kinds.delay_requests import KAFKA_REQUESTS

CAPTURE = Path(__file__).parents[1] / "data" / "kafka-4.1.0" / "requests.bin"


def connections() -> list[bytes]:
    data, out, pos = CAPTURE.read_bytes(), [], 0
    while pos < len(data):
        n, = struct.unpack_from(">q", data, pos)
        out.append(data[pos + 8:pos + 8 + n])
        pos += 8 + n
    return out


def frames_of(stream: bytes, cuts) -> list[tuple[Header, bytes]]:
    """Feed `stream` cut at `cuts` and join the pieces back into whole frames."""
    tracker, frames, bounds = FrameTracker(), [], [0, *cuts, len(stream)]
    for a, b in zip(bounds, bounds[1:]):
        for piece in tracker.feed(stream[a:b]):
            assert piece.header is not None, "a recorded stream was given up on"
            if piece.first:
                frames.append((piece.header, bytearray()))
            frames[-1][1].extend(piece.data)
    assert tracker.at_boundary
    return [(h, bytes(f)) for h, f in frames]


def test_the_capture_holds_every_request_type_the_workloads_send():
    keys = Counter(h.api_key for stream in connections() for h, _ in frames_of(stream, []))
    names = {v: k for k, v in KAFKA_REQUESTS.items()}
    seen = {names.get(k, k) for k in keys}
    assert 18 in keys  # ApiVersions, first on every connection
    assert {"Metadata", "Produce", "InitProducerId", "FindCoordinator", "AddPartitionsToTxn",
            "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "JoinGroup", "SyncGroup", "OffsetFetch", "Fetch",
            "OffsetCommit", "LeaveGroup"} <= seen, seen


@pytest.mark.parametrize("cut", ["whole", "every-byte", "random"])
def test_frames_come_out_whole_in_order_and_with_their_headers_however_the_stream_is_cut(cut):
    rng = random.Random(7)
    for stream in connections():
        cuts = {"whole": [], "every-byte": range(1, len(stream)),
                "random": sorted(rng.sample(range(1, len(stream)), min(len(stream) - 1, 50)))}[cut]
        if cut == "every-byte" and len(stream) > 20000:
            cuts = range(1, 20000)  # byte by byte through the first requests; the rest in one piece
        frames = frames_of(stream, cuts)
        assert b"".join(f for _, f in frames) == stream  # nothing lost, added or reordered
        for header, frame in frames:
            size, key, version, corr = struct.unpack_from(">ihhi", frame)
            assert (header.api_key, header.api_version, header.correlation_id, header.size) == (key, version, corr,
                                                                                               size + 4)
            assert size + 4 == len(frame)
        corrs = [h.correlation_id for h, _ in frames]
        assert corrs == sorted(corrs) and len(set(corrs)) == len(corrs)  # librdkafka counts up per connection


def test_a_stream_that_is_no_kafka_is_passed_through_unchanged_and_given_up_on():
    for junk in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", struct.pack(">ihhi", -5, 0, 0, 1) + b"xx",
                 struct.pack(">ihhi", 8, 999, 0, 1), b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\0" * 20):
        tracker = FrameTracker()
        out = b"".join(bytes(p.data) for p in tracker.feed(junk[:5]) + tracker.feed(junk[5:]) + tracker.feed(b"more"))
        assert out == junk + b"more" and tracker.unparsed and tracker.at_boundary, junk


def test_a_header_split_across_chunks_is_joined_and_the_boundary_known():
    frame = struct.pack(">ihhi", 14, 0, 9, 42) + b"\x00\x01body"
    tracker = FrameTracker()
    assert tracker.feed(frame[:3]) == [] and not tracker.at_boundary
    [piece] = tracker.feed(frame[3:14])
    assert piece.first and not piece.last and piece.header == Header(0, 9, 42, 18)
    [rest] = tracker.feed(frame[14:] + frame[:2])[:1]
    assert rest.last and not rest.first and not tracker.at_boundary  # the next frame's size began


def test_following_without_keeping_pieces_moves_through_the_same_states():
    rng = random.Random(11)
    streams = connections() + [b"GET / HTTP/1.1\r\n\r\n" * 3]
    for stream in streams:
        keeping, following = FrameTracker(), FrameTracker()
        bounds = [0, *sorted(rng.sample(range(1, len(stream)), min(len(stream) - 1, 30))), len(stream)]
        for a, b in zip(bounds, bounds[1:]):
            keeping.feed(stream[a:b])
            assert following.feed(stream[a:b], keep=False) == []
            assert (following.at_boundary, following.unparsed) == (keeping.at_boundary, keeping.unparsed)
