"""A secret named in any section that takes settings reaches no file of the run folder and no message: spec.yaml
and summary.json keep it masked, whatever the section (librdkafka's settings and Kafka broker properties alike)."""

from types import SimpleNamespace

import pytest
import yaml
from confluent_kafka import KafkaError, KafkaException

import harness.run
from harness.exits import InfraError
from harness.run import Run
from harness.runfolder import RunFolder
from harness.spec import MASK, load_spec

# One secret per section, each value distinct, so a leak says where it came from.
DOC = {
    "name": "secrets",
    "workload": {"messages": 100, "rate": 100},
    "cluster": {"backend": "local", "broker": "kafka", "brokers": 1,
                "client": {"sasl.password": "hunter2-cluster-client"},
                "broker_config": {"ssl.keystore.password": "hunter2-cluster-broker",
                                  "sasl.jaas.config": "hunter2-cluster-jaas", "log.flush.interval.messages": 1}},
    "producer": {"sasl.password": "hunter2-producer"},
    "consumer": {"members": 1, "config": {"ssl.key.password": "hunter2-consumer"}},
    "variants": [{"name": "a", "producer": {"ssl.key.password": "hunter2-variant-producer"},
                  "consumer": {"config": {"sasl.password": "hunter2-variant-consumer"}},
                  "broker_config": {"ssl.key.password": "hunter2-variant-broker",
                                    "password.encoder.secret": "hunter2-variant-encoder"}},
                 {"name": "b", "broker_config": {"ssl.truststore.certificates": "hunter2-b-broker"}}],
}


class FakeCluster:
    """Enough of a cluster for a run to reach its first variant's broker settings."""

    description = "fake"
    client = {"bootstrap.servers": "127.0.0.1:9"}

    def __init__(self):
        self.broker_config = []

    def up(self):
        pass

    def down(self):
        pass

    def set_broker_config(self, config):
        self.broker_config.append(config)


def files_holding(root, text: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_no_secret_of_any_section_reaches_spec_yaml_or_summary_json(tmp_path, monkeypatch):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(DOC))
    spec = load_spec(exp)
    cluster = FakeCluster()
    monkeypatch.setattr(harness.run, "_spark", lambda *a: SimpleNamespace(get=lambda: None, stop=lambda **k: None))
    monkeypatch.setattr(harness.run, "make_cluster", lambda *a: cluster)

    def stop_here(*a, **k):  # the variant's broker settings are applied and recorded by now
        raise InfraError("stopped by the test")

    monkeypatch.setattr(harness.run, "create_topic", stop_here)
    folder = RunFolder.create(tmp_path / "reports", spec.name)
    with pytest.raises(InfraError):
        Run(spec, folder, 1, schedule=[]).execute()
    assert cluster.broker_config[0]["ssl.key.password"] == "hunter2-variant-broker"  # the broker gets the value
    written = sorted(str(p.relative_to(folder.path)) for p in folder.path.rglob("*") if p.is_file())
    assert "spec.yaml" in written and "summary.json" in written, written
    assert files_holding(folder.path, "hunter2") == []
    stored = yaml.safe_load((folder.path / "spec.yaml").read_text())
    assert stored["cluster"]["broker_config"] == {"ssl.keystore.password": MASK, "sasl.jaas.config": MASK,
                                                  "log.flush.interval.messages": 1}
    assert stored["variants"][0]["broker_config"] == {"ssl.key.password": MASK, "password.encoder.secret": MASK}
    assert stored["variants"][1]["broker_config"] == {"ssl.truststore.certificates": MASK}
    for section in (stored["cluster"]["client"], stored["producer"], stored["consumer"]["config"],
                    stored["variants"][0]["producer"], stored["variants"][0]["consumer"]["config"]):
        assert set(section.values()) == {MASK}, section
    summary = yaml.safe_load((folder.path / "summary.json").read_text())
    assert summary["broker_config"]["ssl.keystore.password"] == MASK
    assert summary["variants"]["a"]["broker_config"] == {"ssl.key.password": MASK, "password.encoder.secret": MASK}


def test_kafka_refusing_a_variants_broker_settings_says_so_without_their_secret_values():
    from harness.cluster.base import ProxiedCluster

    class Refused:
        def result(self, timeout):
            raise KafkaException(KafkaError(KafkaError.INVALID_CONFIG, "Cannot update these configs dynamically"))

    cluster = ProxiedCluster.__new__(ProxiedCluster)
    cluster._metadata = lambda timeout: SimpleNamespace(brokers={1: None})
    cluster._admin = SimpleNamespace(incremental_alter_configs=lambda resources: {r: Refused() for r in resources})
    with pytest.raises(InfraError) as e:
        cluster.set_broker_config({"ssl.key.password": "hunter2-variant-broker", "log.retention.ms": "5"})
    assert "hunter2" not in str(e.value) and "'log.retention.ms': '5'" in str(e.value), str(e.value)


def test_a_broker_settings_bad_value_is_named_by_its_property_never_shown(tmp_path):
    from harness.spec import SpecError

    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({**DOC, "variants": [{"name": "a", "broker_config": {"ssl.key.password": "hunter2\\x"}}]}))
    with pytest.raises(SpecError) as e:
        load_spec(exp)
    assert "variants.0.broker_config.ssl.key.password: a broker property value cannot hold" in str(e.value)
    assert "hunter2" not in str(e.value)


def test_analyze_masks_the_broker_settings_a_summary_of_an_older_release_kept_in_clear():
    """reanalyze keeps the live run's broker_config facts; one written before they were masked loses its secrets."""
    from harness.run import _mask_broker_config

    facts = {"broker_config": {"ssl.keystore.password": "hunter2-old", "log.flush.interval.messages": 1}}
    _mask_broker_config(facts)
    assert facts == {"broker_config": {"ssl.keystore.password": MASK, "log.flush.interval.messages": 1}}
    damaged = {"broker_config": "not a mapping"}  # typed by the folder's reader; left as it is here
    _mask_broker_config(damaged)
    assert damaged == {"broker_config": "not a mapping"}


@pytest.mark.parametrize("key, secret", [("ssl.key.password", True), ("ssl.key.location", True), ("ssl_key", True),
                                         ("ssl.keystore.password", True), ("ssl.keystore.location", False),
                                         ("ssl.keystore.type", False)])
def test_a_keystore_s_place_and_type_are_not_secrets(key, secret):
    """librdkafka redacts ssl.key.* and ssl_key (the private key); a keystore's file name and type are not secret,
    and Kafka prints them in its own log."""
    from harness.spec import SECRET_KEY

    assert bool(SECRET_KEY.search(key)) == secret
