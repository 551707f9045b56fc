"""bench/compare_clients.py's translation of an experiment into one variant per client implementation: each
implementation's own setting names, what it has no name for left out and said, every child under the producer
faults; the derived experiment is one the harness accepts."""

import importlib.util
from pathlib import Path

import yaml

from harness.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compare_clients", ROOT / "bench" / "compare_clients.py")
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)


def derived(name, cluster=None):
    return compare.derive(yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text()), cluster)


def test_each_implementation_gets_the_variants_in_its_own_names(tmp_path):
    doc, left_out = derived("lost-acks")
    by = {v["name"]: v for v in doc["variants"]}
    assert len(by) == 8
    assert by["librdkafka-idempotence-on"]["producer"] == {"acks": "all", "retries": 10000000, "linger.ms": 5,
                                                           "enable.idempotence": True}
    assert by["kafka-python-idempotence-on"]["client"] == {"kafka-python": "3.0.12"}
    assert by["kafka-python-idempotence-on"]["producer"] == {"acks": "all", "retries": 10000000, "linger_ms": 5,
                                                             "enable_idempotence": True}
    assert by["aiokafka-idempotence-off"]["producer"] == {"acks": "all", "linger_ms": 5, "enable_idempotence": False}
    assert left_out == {"aiokafka-idempotence-off": "left out, no such setting: retries",
                        "aiokafka-idempotence-on": "left out, no such setting: retries"}
    path = tmp_path / "derived.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert [v.name for v in load_spec(path).variants] == list(by)


def test_every_child_takes_a_producer_pause_plain_idempotent_and_transactional(tmp_path):
    doc, left_out = derived("zombie-fencing")
    assert [v["name"] for v in doc["variants"]] == [f"{impl}-{v}" for impl in ("librdkafka", "java", "kafka-python",
                                                                               "aiokafka")
                                                    for v in ("idempotent", "transactional")]
    assert not [why for why in left_out.values() if why.startswith("not run")]
    path = tmp_path / "derived.yaml"
    path.write_text(yaml.safe_dump(doc))
    load_spec(path)


def test_every_child_takes_producer_restarts_plain_idempotent_and_transactional(tmp_path):
    doc, left_out = derived("producer-restart")
    names = [v["name"] for v in doc["variants"]]
    assert names == ["librdkafka-idempotence-off", "librdkafka-idempotence-on", "librdkafka-transactional",
                     "java-idempotence-off", "java-idempotence-on", "java-transactional",
                     "kafka-python-idempotence-off", "kafka-python-idempotence-on", "kafka-python-transactional",
                     "aiokafka-idempotence-off", "aiokafka-idempotence-on", "aiokafka-transactional"]
    assert not [why for why in left_out.values() if why.startswith("not run")]  # every child restarts every producer
    path = tmp_path / "derived.yaml"
    path.write_text(yaml.safe_dump(doc))
    load_spec(path)  # the harness accepts it: no variant it would refuse is left in


def test_the_kafka_cluster_replaces_the_experiments_own():
    doc, _ = derived("broker-failover", compare.LOCAL_KAFKA)
    assert doc["cluster"] == {"backend": "local", "broker": "kafka", "brokers": 3, "proxy": "toxiproxy"}
    assert doc["expectations"]["java-idempotence-on"] == {"duplicates": 0, "jump_back_runs": 0, "lost": 0}
