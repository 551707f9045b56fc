"""Packet faults on the links of network namespaces (netns.py), without a broker: numbered UDP datagrams
from one namespace to another across the run's bridge, while a fault acts on the sender's link. Root
only, with iptables' NFQUEUE target; otherwise they skip, saying so."""

import json
import os
import subprocess
import sys

import pytest

from harness.cluster.netns import Network, problems, queue_available

why = "; ".join(problems()) or ("" if queue_available() else "iptables cannot queue packets here (NFQUEUE)")
pytestmark = pytest.mark.skipif(bool(why), reason=why or "-")

COUNT = 2000
RECEIVE = """
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind((sys.argv[1], 9000)); s.settimeout(60)
print("ready", flush=True)
got = []
while len(got) < int(sys.argv[2]):
    got.append(int(s.recv(64)))
    s.settimeout(5)
print(json.dumps(got), flush=True)
"""
SEND = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[2])):
    s.sendto(str(i).encode(), (sys.argv[1], 9000))
"""


@pytest.fixture
def net(tmp_path):
    network = Network(os.urandom(3).hex(), 2, tmp_path / "network.log")
    try:
        network.up()
        yield network
    finally:
        network.heal_all()
        network.down()


def _send_through(net) -> list[int]:
    """Send COUNT numbered datagrams from broker 0's namespace to broker 1's; the numbers as they arrived."""
    receiver = subprocess.Popen([*net.exec_prefix(1), sys.executable, "-c", RECEIVE, net.address(1), str(COUNT)],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout.readline().strip() == "ready"
        subprocess.run([*net.exec_prefix(0), sys.executable, "-c", SEND, net.address(1), str(COUNT)], check=True,
                       timeout=60)
        out, _ = receiver.communicate(timeout=120)
    finally:
        receiver.kill()
    return json.loads(out)


def test_reordering_lets_some_packets_overtake_others_and_loses_none(net):
    net.link_fault(0, "packet-reorder-0", "reorder", {"percent": 50, "delay_ms": 200})
    got = _send_through(net)
    counts = net.heal_link(0, "packet-reorder-0")
    assert sorted(got) == list(range(COUNT))  # every datagram, once
    overtaken = sum(1 for a, b in zip(got, got[1:]) if b < a)
    assert overtaken > 0, "no datagram arrived before one sent earlier"
    assert counts["packets"] >= COUNT and counts["held"] > 0 and counts["sent_at_once"] > 0, counts
    assert counts["held"] + counts["sent_at_once"] == counts["packets"]
    assert "iptables -t mangle -D POSTROUTING" in (net.log.read_text())
    assert _send_through(net) == list(range(COUNT))  # healed: in order again


def test_delay_holds_every_packet_and_keeps_their_order(net):
    net.link_fault(0, "packet-delay-0", "delay", {"delay_ms": 30, "jitter_ms": 0})
    got = _send_through(net)
    counts = net.heal_link(0, "packet-delay-0")
    assert got == list(range(COUNT))
    assert counts["held"] == counts["packets"] >= COUNT and counts["sent_at_once"] == 0, counts


def test_heal_all_stops_a_queue_that_was_never_healed(net):
    net.link_fault(1, "packet-delay-1", "delay", {"delay_ms": 30, "jitter_ms": 0})
    [(_, proc)] = net._queues.values()
    net.heal_all()
    assert proc.poll() is not None and not net._queues
    rules = subprocess.run(["ip", "netns", "exec", net.bridge, "iptables", "-t", "mangle", "-S"],
                           capture_output=True, text=True).stdout
    assert "NFQUEUE" not in rules
