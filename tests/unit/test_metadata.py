import pytest

from harness.cluster.metadata import broker_index, leader_index, unreachable_proxies

PROXIES = ["127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"]
ADVERTISED = {111: "127.0.0.1:9002", 7: "127.0.0.1:9001", 3: "127.0.0.1:9003"}


def test_broker_ids_map_to_indexes_through_their_proxy_address():
    assert broker_index(ADVERTISED, 111, PROXIES) == 1
    assert broker_index(ADVERTISED, 7, PROXIES) == 0


def test_leader_of_partition():
    leaders = {0: 3, 1: 111, 2: -1}
    assert leader_index(ADVERTISED, leaders, 0, PROXIES) == 2
    assert leader_index(ADVERTISED, leaders, 1, PROXIES) == 1
    with pytest.raises(LookupError, match="no leader"):
        leader_index(ADVERTISED, leaders, 2, PROXIES)
    with pytest.raises(LookupError, match="partition 5"):
        leader_index(ADVERTISED, leaders, 5, PROXIES)


def test_a_broker_advertising_itself_is_caught():
    with pytest.raises(LookupError, match="none of the proxies"):
        broker_index({1: "127.0.0.1:5555"}, 1, PROXIES)
    assert unreachable_proxies(["127.0.0.1:5555", PROXIES[0]], PROXIES) == ["127.0.0.1:5555"]
    assert unreachable_proxies(PROXIES, PROXIES) == []


def test_wildcard_listeners_serve_the_published_address():
    from harness.cluster.metadata import client_addresses, reachable_address, serves

    assert serves("[::]:29091", "127.0.0.1:29091") and serves("0.0.0.0:29091", "localhost:29091")
    assert serves("127.0.0.1:29091", "127.0.0.1:29091")
    assert not serves("127.0.0.1:29091", "10.0.0.5:29091") and not serves("[::]:29091", "127.0.0.1:29092")
    advertised = ["127.0.0.1:29093", "127.0.0.1:29091"]
    assert client_addresses(["[::]:29091", "[::]:29092", "[::]:29093"], advertised) == \
        ["127.0.0.1:29091", None, "127.0.0.1:29093"]
    assert reachable_address("[::]:29091", "127.0.0.1") == "127.0.0.1:29091"
    assert reachable_address("10.1.2.3:29091", "127.0.0.1") == "10.1.2.3:29091"


def test_the_preflight_waits_until_every_broker_has_registered_then_gives_up_at_its_timeout():
    from types import SimpleNamespace

    from harness.cluster.metadata import every_broker_registered

    now = [0.0]
    answers = iter([{1: "a"}, {1: "a", 2: "b"}, {1: "a", 2: "b", 3: "c"}])
    md = every_broker_registered(lambda: SimpleNamespace(brokers=next(answers)), 3, timeout=30,
                                 sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    assert len(md.brokers) == 3 and now[0] == 0.5  # two short waits, no more
    now[0] = 0.0
    md = every_broker_registered(lambda: SimpleNamespace(brokers={1: "a"}), 3, timeout=2,
                                 sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    assert len(md.brokers) == 1 and now[0] == 2.0  # the caller then says which broker is missing


def test_a_preflight_failure_names_the_broker_that_exited_and_the_error_its_log_gives(tmp_path):
    from types import SimpleNamespace

    from harness.cluster.base import ProxiedCluster

    dead = tmp_path / "broker-0.log"
    dead.write_text("[..] INFO starting\n[..] ERROR Unable to start acceptor for INTERNAL_3\n"
                    "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:10218: "
                    "Address already in use.\n")
    cluster = ProxiedCluster.__new__(ProxiedCluster)
    cluster.brokers = [SimpleNamespace(alive=lambda: False, log_path=dead),
                       SimpleNamespace(alive=lambda: True, log_path=tmp_path / "broker-1.log"),
                       SimpleNamespace(alive=lambda: False, log_path=tmp_path / "no-such.log")]
    note = cluster._exited_brokers()
    assert "broker 0 exited: Socket server failed to bind to 127.0.0.1:10218: Address already in use." in note
    assert "broker 1" not in note
    assert f"broker 2 exited (its log: {tmp_path / 'no-such.log'})" in note
    cluster.brokers = cluster.brokers[1:2]
    assert cluster._exited_brokers() == ""
