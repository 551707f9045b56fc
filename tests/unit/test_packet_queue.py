"""packet_queue.py's netlink messages and its draw of how long each packet waits (no kernel needed)."""

import random
import socket
import struct

from harness.cluster import packet_queue as pq


def _attrs(msg: bytes) -> dict[int, bytes]:
    """A message's attributes after its netlink header (16 bytes) and nfgenmsg (4)."""
    out, at = {}, 20
    while at < len(msg):
        length, kind = struct.unpack_from("=HH", msg, at)
        out[kind] = msg[at + 4:at + length]
        at += (length + 3) & ~3
    return out


def test_configuration_binds_the_queue_for_metadata_only_and_fails_open():
    bind, params = pq.config_messages(7)
    for msg in (bind, params):
        length, kind, flags = struct.unpack_from("=IHH", msg)
        assert length == len(msg) and kind == (3 << 8) | 2 and flags & pq.NLM_F_ACK  # queue subsystem, config
        assert struct.unpack_from("!BBH", msg, 16) == (socket.AF_UNSPEC, 0, 7)  # the queue number, big-endian
    assert _attrs(bind)[pq.CFG_CMD][0] == pq.CMD_BIND
    cfg = _attrs(params)
    assert struct.unpack("!IB", cfg[pq.CFG_PARAMS]) == (0, pq.COPY_META)
    assert struct.unpack("!I", cfg[pq.CFG_FLAGS])[0] & pq.F_FAIL_OPEN  # a full queue passes packets, never drops
    assert cfg[pq.CFG_MASK] == cfg[pq.CFG_FLAGS]


def test_a_verdict_accepts_the_packet_it_names():
    msg = pq.verdict(7, 123456)
    assert struct.unpack_from("=H", msg, 4)[0] == (3 << 8) | 1
    assert struct.unpack("!II", _attrs(msg)[pq.ATTR_VERDICT_HDR]) == (pq.NF_ACCEPT, 123456)


def _packet(packet_id: int) -> bytes:
    # as the kernel sends it: the packet header first, then (here) a mark attribute the reader skips
    attrs = pq.attr(pq.ATTR_PACKET_HDR, struct.pack("!IHB", packet_id, 0x0800, 0)) + pq.attr(6, struct.pack("!I", 9))
    return pq.message(pq.MSG_PACKET, 7, attrs)


def test_parse_finds_every_packet_id_and_acknowledgement_in_a_datagram():
    error = struct.pack("=IHHII", 36, pq.NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", -1) + b"\0" * 16
    ids, errors = pq.parse(_packet(1) + _packet(2) + error + _packet(70000))
    assert ids == [1, 2, 70000] and errors == [1]  # EPERM, as the kernel says it (negated)
    assert pq.parse(b"") == ([], []) and pq.parse(b"\0" * 20) == ([], [])  # a zero length ends the reading


def test_reordering_sends_percent_of_the_packets_at_once_and_holds_the_rest_delay_ms():
    rng = random.Random(1)
    waits = [pq.hold_ms("reorder", 10, 25, rng) for _ in range(20000)]
    assert set(waits) == {0.0, 10}
    assert 0.23 < waits.count(0.0) / len(waits) < 0.27


def test_delay_holds_every_packet_delay_ms_give_or_take_the_jitter():
    rng = random.Random(1)
    assert {pq.hold_ms("delay", 50, 0, rng) for _ in range(100)} == {50}
    waits = [pq.hold_ms("delay", 50, 20, rng) for _ in range(5000)]
    assert 30 <= min(waits) < 31 and 69 < max(waits) <= 70
    assert min(pq.hold_ms("delay", 5, 20, rng) for _ in range(1000)) == 0.0  # never a negative wait
