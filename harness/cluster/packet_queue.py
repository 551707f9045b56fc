"""Delay or reorder the packets of one netfilter queue:  python -I packet_queue.py QUEUE MODE DELAY_MS X SEED

The packet delay and reordering faults of `network: namespaces` (netns.py). iptables rules in a
broker's namespace send every packet of its link, each way, to netfilter queue QUEUE; the kernel holds
each one until this process gives its verdict, so a verdict given later delays the packet and verdicts
given out of order reorder them. MODE is
- `delay`: every packet waits DELAY_MS +/- X ms (the jitter; packets drawn apart may swap places);
- `reorder`: X % of the packets go at once, the others wait DELAY_MS, so those overtake them (netem's
  `delay DELAY_MS reorder X%`).
It prints `bound` once it listens; on SIGTERM it lets every held packet go at once, in order, and prints
one JSON line of what it did ({"packets", "held", "sent_at_once", "overflows"}: an overflow is news of
queued packets the kernel could not send this process, whose packets then wait until the queue goes).

Why not the kernel's netem, which does this in the kernel: kernels without it exist (CONFIG_NET_SCH_NETEM
unset, as on the machines this was written on), while the netfilter queue is in every kernel that runs
iptables. Why not the NetfilterQueue package: it builds against libnetfilter_queue's C headers, a system
package and a compiler on the user's machine, for four netlink messages that the standard library's
socket speaks as well. Standard library only, run by path, so it starts in milliseconds in a namespace.
A packet this process never answers (it was killed) is dropped by the kernel when the queue goes; the
rules pass packets through (`--queue-bypass`) when nothing listens, and when the queue is full.
"""

from __future__ import annotations

import errno
import heapq
import json
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
QUEUE_SUBSYS = 3 << 8  # NFNL_SUBSYS_QUEUE, the high byte of the message type
MSG_PACKET, MSG_VERDICT, MSG_CONFIG = 0, 1, 2
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
CFG_CMD, CFG_PARAMS, CFG_QUEUE_MAXLEN, CFG_MASK, CFG_FLAGS = 1, 2, 3, 4, 5
CMD_BIND = 1
COPY_META = 1  # the kernel sends the packet's id and headers' metadata, not its bytes
F_FAIL_OPEN, F_GSO = 1, 4  # a full queue passes packets; large segments are queued whole
ATTR_PACKET_HDR, ATTR_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
MAXLEN = 65536


def attr(kind: int, payload: bytes) -> bytes:
    """One netlink attribute: length, type, payload padded to 4 bytes."""
    return struct.pack("=HH", 4 + len(payload), kind) + payload + b"\0" * (-len(payload) % 4)


def message(kind: int, queue: int, attrs: bytes, flags: int = NLM_F_REQUEST, seq: int = 0) -> bytes:
    """A netfilter-queue message: netlink header, nfgenmsg (family unspecified, version 0, queue), attributes."""
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue) + attrs
    return struct.pack("=IHHII", 16 + len(body), QUEUE_SUBSYS | kind, flags, seq, 0) + body


def config_messages(queue: int) -> list[bytes]:
    """Bind the queue, ask for metadata only, a long queue, and fail-open (the kernel passes what it cannot queue)."""
    flags = struct.pack("!I", F_FAIL_OPEN | F_GSO)
    return [message(MSG_CONFIG, queue, attr(CFG_CMD, struct.pack("!BxH", CMD_BIND, socket.AF_INET)), NLM_F_REQUEST | NLM_F_ACK, 1),
            message(MSG_CONFIG, queue, attr(CFG_PARAMS, struct.pack("!IB", 0, COPY_META))
                    + attr(CFG_QUEUE_MAXLEN, struct.pack("!I", MAXLEN))
                    + attr(CFG_MASK, flags) + attr(CFG_FLAGS, flags), NLM_F_REQUEST | NLM_F_ACK, 2)]


def verdict(queue: int, packet_id: int) -> bytes:
    return message(MSG_VERDICT, queue, attr(ATTR_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id)))


def parse(data: bytes) -> tuple[list[int], list[int]]:
    """(ids of the packets queued, error codes of the acknowledgements) in a datagram of netlink messages."""
    ids, errors, at = [], [], 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, at)
        if length < 16:
            break
        if kind == NLMSG_ERROR:
            errors.append(-struct.unpack_from("=i", data, at + 16)[0])
        elif kind == QUEUE_SUBSYS | MSG_PACKET:
            a = at + 20  # after the nfgenmsg
            while a + 4 <= at + length:
                alen, akind = struct.unpack_from("=HH", data, a)
                if alen < 4:
                    break
                if akind & 0x3FFF == ATTR_PACKET_HDR:
                    ids.append(struct.unpack_from("!I", data, a + 4)[0])
                a += (alen + 3) & ~3
        at += (length + 3) & ~3
    return ids, errors


def hold_ms(mode: str, delay_ms: float, x: float, rng: random.Random) -> float:
    """How long one packet waits: see the module's docstring."""
    if mode == "delay":
        return max(0.0, delay_ms + rng.uniform(-x, x)) if x else delay_ms
    return 0.0 if rng.random() * 100 < x else delay_ms


def run(queue: int, mode: str, delay_ms: float, x: float, seed: int) -> dict:
    rng = random.Random(seed)
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE (root): room for a burst of packets
    sock.bind((0, 0))
    for msg in config_messages(queue):
        sock.send(msg)
        _, errors = parse(sock.recv(65536))
        if any(errors):
            raise OSError(errors[0], f"netfilter queue {queue}: the kernel refused its configuration")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    print("bound", flush=True)
    held: list[tuple[float, int]] = []  # (when it goes, packet id): a heap
    counts = {"packets": 0, "held": 0, "sent_at_once": 0, "overflows": 0}
    while not stopping:
        now = time.monotonic()
        while held and held[0][0] <= now:
            sock.send(verdict(queue, heapq.heappop(held)[1]))
        timeout = min(0.2, held[0][0] - now) if held else 0.2
        try:
            ready, _, _ = select.select([sock], [], [], max(0.0, timeout))
        except InterruptedError:
            continue
        if not ready:
            continue
        try:
            ids, _ = parse(sock.recv(1 << 20))
        except OSError as e:  # ENOBUFS: the kernel dropped news of packets it queued (they wait until we go)
            if e.errno != errno.ENOBUFS:
                raise
            counts["overflows"] += 1
            continue
        now = time.monotonic()
        for packet_id in ids:
            counts["packets"] += 1
            wait = hold_ms(mode, delay_ms, x, rng)
            if wait <= 0:
                counts["sent_at_once"] += 1
                sock.send(verdict(queue, packet_id))
            else:
                counts["held"] += 1
                heapq.heappush(held, (now + wait / 1000, packet_id))
    while held:
        sock.send(verdict(queue, heapq.heappop(held)[1]))
    return counts


def main(argv: list[str]) -> None:
    if len(argv) != 5 or argv[1] not in ("delay", "reorder"):
        sys.exit("usage: packet_queue.py QUEUE delay|reorder DELAY_MS JITTER_MS|PERCENT SEED")
    counts = run(int(argv[0]), argv[1], float(argv[2]), float(argv[3]), int(argv[4]))
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
