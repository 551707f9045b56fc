"""Network namespaces (cluster/netns.py) without root: the commands a run gives, the rules a fault adds, which
leftovers a start removes, and what the experiment file accepts."""

import re

import pytest

from harness.cluster import unsupported_faults
from harness.cluster.netns import NAMESPACE, QUEUE_ARGS, Network, run_id, stale_ids
from harness.spec import load_spec

from tests.unit.test_spec import BASE, error_of, write

KAFKA = {"backend": "local", "broker": "kafka", "brokers": 3}


def test_every_name_fits_a_linux_interface_and_every_broker_gets_its_own_address():
    net = Network("0a1b2c", 3)
    cmds = net.setup_commands()
    links = {c[c.index("add") + 1] for c in cmds if c[:3] == ["ip", "link", "add"]}
    links |= {c[c.index("name") + 1] for c in cmds if "name" in c}
    assert links and all(len(name) <= 15 for name in links), links  # IFNAMSIZ - 1
    namespaces = [c[3] for c in cmds if c[:3] == ["ip", "netns", "add"]]
    assert namespaces == ["kc0a1b2c-br", "kc0a1b2c-b0", "kc0a1b2c-b1", "kc0a1b2c-b2"]
    assert all(NAMESPACE.match(n) for n in namespaces)
    addresses = [net.address(i) for i in range(3)] + [net.host_address]
    assert len(set(addresses)) == 4 and all(re.fullmatch(r"10\.(2[0-4]\d)\.\d+\.\d+", a) for a in addresses)
    assert ["ip", "addr", "add", f"{net.host_address}/24", "dev", "kc0a1b2ch"] in cmds
    assert net.exec_prefix(1) == ["ip", "netns", "exec", "kc0a1b2c-b1"]


def test_loss_and_duplication_are_nft_rules_on_both_ends_of_the_link_each_with_its_own_table():
    net = Network("0a1b2c", 3)
    loss = net.link_commands(1, "packet-loss-4", "drop", {"percent": 2.5})
    assert [(cmd[3], "kc_packet_loss_4" in text) for cmd, text in loss] == [("kc0a1b2c-b1", True),
                                                                          ("kc0a1b2c-br", True)]
    assert 'hook egress device "eth0"' in loss[0][1] and 'hook egress device "kc0a1b2cp1"' in loss[1][1]
    assert "numgen random mod 10000 < 250 drop" in loss[0][1]
    [(_, dup), _] = net.link_commands(0, "packet-duplicate-0", "duplicate", {"percent": 10})
    # a copy is marked, so that it is not copied again on its way out
    assert 'meta mark != 0x4b43 numgen random mod 10000 < 1000 meta mark set 0x4b43 dup to "eth0"' in dup
    heal = net.heal_commands(1, "packet-loss-4")
    assert heal == [["ip", "netns", "exec", "kc0a1b2c-b1", "nft", "delete", "table", "netdev", "kc_packet_loss_4"],
                    ["ip", "netns", "exec", "kc0a1b2c-br", "nft", "delete", "table", "netdev", "kc_packet_loss_4"]]


def test_delay_and_reordering_queue_what_enters_and_leaves_the_bridge_by_the_brokers_port():
    net = Network("0a1b2c", 2)
    add, out = net.queue_commands(1, 3, "-A")
    # in the bridge's namespace (the broker's own kernel would count held packets against its sockets)
    assert add[:4] == ["ip", "netns", "exec", "kc0a1b2c-br"] and out[:4] == add[:4]
    assert add[4:9] == ["iptables", "-t", "mangle", "-A", "PREROUTING"]
    assert add[add.index("--physdev-in") + 1] == "kc0a1b2cp1"  # what the broker sends
    assert out[out.index("--physdev-out") + 1] == "kc0a1b2cp1" and "--physdev-is-bridged" in out  # what it gets
    for rule in (add, out):  # to this fault's queue; packets pass when nothing listens
        assert rule[-5:] == ["-j", "NFQUEUE", "--queue-num", "3", "--queue-bypass"]
    assert [r[7] for r in net.queue_commands(1, 3, "-D")] == ["-D", "-D"]
    assert QUEUE_ARGS["reorder"]({"percent": 25, "delay_ms": 10}) == ["reorder", "10", "25"]
    assert QUEUE_ARGS["delay"]({"delay_ms": 50, "jitter_ms": 5}) == ["delay", "50", "5"]


@pytest.mark.parametrize("direction,chains", [("in", ["cut_in"]), ("out", ["cut_out"]),
                                              ("both", ["cut_in", "cut_out"])])
def test_a_cut_drops_the_peers_packets_one_way_or_both_and_never_the_clients(direction, chains):
    net = Network("0a1b2c", 3)
    rules = net.cut_ruleset(1, direction)
    assert re.findall(r"chain (\w+)", rules) == chains
    peers = f"{{ {net.address(0)}, {net.address(2)} }}"
    assert ("ip saddr " + peers in rules) == (direction != "out")
    assert ("ip daddr " + peers in rules) == (direction != "in")
    assert net.host_address not in rules and net.address(1) not in rules


def test_a_start_removes_only_what_runs_whose_harness_is_gone_left():
    namespaces = ["kc0a1b2c-b0", "kc0a1b2c-br", "kcffffff-b0", "mine", "kc0a1b2c-bx"]
    links = ["lo", "eth0", "kc0a1b2ch", "kc123456h", "kc0a1b2cb0"]
    alive = {"ffffff"}
    assert stale_ids(namespaces, links, lambda rid: rid in alive) == ["0a1b2c", "123456"]
    assert stale_ids(namespaces, links, lambda rid: True) == []


def test_the_run_id_is_the_run_folders_own(tmp_path):
    assert run_id(tmp_path / "20261126T030812Z-packet-faults-743692") == "743692"
    assert re.fullmatch(r"[0-9a-f]{6}", run_id(tmp_path / "renamed"))


def test_namespaces_run_kafka_nodes_only(tmp_path):
    doc = {**BASE, "cluster": {"backend": "local", "broker": "tansu", "network": "namespaces"}}
    assert "cluster.network" in error_of(tmp_path, doc) and "use broker: kafka" in error_of(tmp_path, doc)


def test_a_one_way_isolation_needs_namespaces(tmp_path):
    fault = {"kind": "isolate", "at": 0.5, "duration": 0.2, "direction": "in", "target": {"broker": 1}}
    message = error_of(tmp_path, {**BASE, "cluster": KAFKA, "faults": [fault]})
    assert "faults.0.direction: in" in message and "cluster.network: namespaces" in message
    spec = load_spec(write(tmp_path, {**BASE, "cluster": {**KAFKA, "network": "namespaces"}, "faults": [fault]}))
    assert spec.faults[0].direction == "in"


def test_packet_faults_are_refused_before_anything_starts_without_namespaces(tmp_path):
    for cluster in ({"backend": "local"}, KAFKA, {"backend": "compose"}):
        spec = load_spec(write(tmp_path, {**BASE, "cluster": cluster}))
        refused = unsupported_faults(spec.cluster, {"packet-loss", "packet-duplicate"})
        assert [r.split(" ")[0] for r in refused] == ["packet-duplicate", "packet-loss"], refused
        assert all("network: namespaces" in r for r in refused)


def test_two_queued_faults_that_could_meet_on_one_link_are_refused(tmp_path):
    faults = [{"kind": "packet-delay", "at": 0.2, "duration": 0.4, "target": {"broker": 1}},
              {"kind": "packet-reorder", "at": 0.4, "duration": 0.2, "target": {"leader-of": 0}}]
    doc = {**BASE, "cluster": {**KAFKA, "network": "namespaces"}, "faults": faults}
    from harness.schedule import ScheduleError, plan

    spec = load_spec(write(tmp_path, doc))
    with pytest.raises(ScheduleError) as e:
        plan(spec, 1)
    assert "one packet-delay or packet-reorder at a time on a broker" in str(e.value)
    faults[1]["kind"] = "packet-loss"  # an nft table of its own: it adds up with the queue
    assert len(plan(load_spec(write(tmp_path, doc)), 1)) == 2
