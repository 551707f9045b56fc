"""`isolate` of the active KRaft controller must cut the quorum's traffic to it: the other two elect a new leader.

A KRaft follower fetches from the address the leader advertises for the follower's own controller listener
(BeginQuorumEpoch), not from its voters setting. With one CONTROLLER listener a node advertised itself
directly, every follower reached the active controller past the proxies, and isolating it changed nothing:
it stayed leader for 230 s (2026-11-27). Each node now has a controller listener per peer (cluster/kraft.py).
"""

import os
import re
import subprocess
import time

from harness.cluster import make_cluster
from harness.spec import LocalClusterSpec


def quorum_leader(home: str, bootstrap: str) -> int | None:
    """The KRaft leader's node id as the brokers at `bootstrap` know it (None when none answers in time)."""
    try:
        done = subprocess.run([f"{home}/bin/kafka-metadata-quorum.sh", "--bootstrap-server", bootstrap, "describe",
                               "--status"], capture_output=True, text=True, timeout=40)
    except subprocess.TimeoutExpired:
        return None
    found = re.search(r"LeaderId:\s+(\d+)", done.stdout)
    return int(found.group(1)) if found else None


def test_isolating_the_active_controller_makes_the_others_elect_a_new_one(tmp_path):
    home = os.environ["KAFKA_HOME"]
    cluster = make_cluster(LocalClusterSpec(backend="local", broker="kafka", brokers=3), tmp_path / "run")
    cluster.up()
    try:
        leader = None
        for _ in range(10):
            leader = quorum_leader(home, cluster.bootstrap)
            if leader is not None:
                break
        assert leader is not None, "no quorum leader before the fault"
        isolated = leader - 1  # node ids are index + 1
        cluster.isolate_broker(isolated)
        others = ",".join(a for i, a in enumerate(cluster.proxy_listens) if i != isolated)
        deadline, now_leader = time.monotonic() + 120, leader
        while time.monotonic() < deadline and now_leader in (leader, None):
            now_leader = quorum_leader(home, others)
        assert now_leader not in (leader, None), f"node {leader} isolated and still the KRaft leader after 120 s"
        # the isolated node took no part: a follower's log says which leader it follows now, and through what
        follows = [line for i in range(3) if i != isolated
                   for line in cluster.files.broker_log(i).read_text().splitlines()
                   if "transition to FollowerState" in line and f"leader={now_leader}," in line]
        assert follows, f"no follower of node {now_leader} logged its transition"
        for line in follows:  # the leader's address a follower took: a proxy, never the leader's own listener
            # The leader advertises one endpoint per controller listener, in no fixed order (its own-named one is its
            # real port); the follower connects through the one named after itself (CONTROLLER_<its id>).
            follower = re.search(r"\[RaftManager id=(\d+)\]", line).group(1)
            endpoints = dict(re.findall(r"ListenerName\((\w+)\)=[^,}]*:(\d+)", line))
            port = int(endpoints[f"CONTROLLER_{follower}"])
            assert port not in {p for i in range(3) for p in _controller_ports(cluster, i)}, line
        cluster.rejoin_broker(isolated)
    finally:
        cluster.down()


def _controller_ports(cluster, i: int) -> set[int]:
    listeners = next(line for line in cluster.files.broker_config(i).read_text().splitlines()
                     if line.startswith("listeners="))
    return {int(p) for p in re.findall(r"CONTROLLER_\d://[^:,]+:(\d+)", listeners)}
