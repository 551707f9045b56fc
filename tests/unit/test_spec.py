import json
import re
from pathlib import Path

import pytest
import yaml

from harness.faults.registry import KINDS
from harness.schedule import dumps, load, plan
from harness.preflight import check_producer_configs
from harness.spec import SpecError, load_spec
from harness.verdict import Rule

ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "workload": {"messages": 100, "rate": 100},
    "variants": [{"name": "a", "producer": {"enable.idempotence": True}}],
}


def write(tmp_path, doc) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc) if isinstance(doc, dict) else doc)
    return path


def error_of(tmp_path, doc) -> str:
    with pytest.raises(SpecError) as e:
        load_spec(write(tmp_path, doc))
    return str(e.value)


SHIPPED = sorted((ROOT / "experiments").rglob("*.yaml"))  # known-bugs/ included


def shipped_id(path):
    return str(path.relative_to(ROOT / "experiments"))


@pytest.mark.parametrize("path", SHIPPED, ids=shipped_id)
def test_shipped_experiments_are_valid(path):
    load_spec(path)


@pytest.mark.parametrize("path", sorted((ROOT / "experiments" / "known-bugs").glob("librdkafka-*.yaml")),
                         ids=shipped_id)
def test_a_known_bug_experiment_cites_its_bug_and_says_what_each_side_must_show(path):
    text, spec = path.read_text(), load_spec(path)
    issue = path.stem.removeprefix("librdkafka-")
    assert path.stem.startswith("librdkafka-") and f"librdkafka #{issue}" in text.split("\nname:")[0], path.name
    assert spec.name == path.stem and spec.seed is not None  # the same seeded schedule for every variant
    assert spec.faults, "a known bug needs its fault pattern"
    for v in spec.variants:  # every side states what it must show: the bug (affected) or its absence
        assert spec.rules(v.name), v.name
    versions = {v.name: spec.client_version(v) for v in spec.variants}
    # Affected against fixed (or, for a bug still open, against a version before its regression): two client
    # versions, the affected one expecting the bug.
    if len(spec.variants) > 1:
        assert None not in versions.values() and len(set(versions.values())) == len(versions), versions
        assert any(n.startswith("affected") for n in versions)
        assert any(n.startswith(("fixed", "before")) for n in versions)


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "experiments" / "known-bugs").glob("*.yaml")
                                       if not p.stem.startswith("librdkafka-")), ids=shipped_id)
def test_a_broker_side_experiment_cites_its_source_and_its_variants_differ(path):
    text, spec = path.read_text(), load_spec(path)
    assert re.search(r"KIP-\d+|KAFKA-\d+", text.split("\nname:")[0]), f"{path.name} cites no KIP or KAFKA issue"
    assert spec.name == path.stem and spec.faults
    for v in spec.variants:
        assert spec.rules(v.name), v.name
    sides = {json.dumps([v.features, v.broker_config, v.producer], sort_keys=True) for v in spec.variants}
    assert len(sides) == len(spec.variants)  # in features, broker settings or the producer's


def test_minimal_spec_gets_defaults(tmp_path):
    spec = load_spec(write(tmp_path, BASE))
    assert spec.cluster.backend == "local" and spec.cluster.broker == "tansu"
    assert spec.topic.partitions == 3
    assert spec.planning_window == 1.0


@pytest.mark.parametrize("patch, where, says", [
    ({"workload": {"messages": 0}}, "workload.messages", "greater than or equal to 1"),
    ({"workload": {"messages": 10, "rate": -1}}, "workload.rate", "greater than 0"),
    ({"bogus": 1}, "bogus", "unknown field"),
    ({"variants": []}, "variants", "at least 1"),
    ({"variants": [{"name": "a"}, {"name": "a"}]}, "variants", "repeated: a"),
    ({"faults": [{"kind": "meteor", "at": 1}]}, "faults.0", "meteor"),
    ({"faults": [{"kind": "lost-acks"}]}, "faults.0", "exactly one of 'at'"),
    ({"faults": [{"kind": "lost-acks", "at": 1, "target": {"broker": 3}}]}, "faults.0.target", "broker 3 does not exist"),
    ({"expectations": {"nope": {"duplicates": 0}}}, "expectations", "unknown variant 'nope'"),
    ({"expectations": {"a": {"dupes": 0}}}, "expectations", "unknown metric 'dupes'"),
    ({"expectations": {"a": {"duplicates": "about 3"}}}, "expectations", "comparison"),
    ({"cluster": {"broker": "tansu", "brokers": 3}}, "cluster.brokers", "exactly 1 broker"),
    ({"cluster": {"backend": "compose", "broker": "tansu"}}, "cluster.broker", "needs broker: kafka"),
    ({"cluster": {"backend": "external", "broker": "kafka"}}, "cluster.bootstrap_servers", "needs the cluster"),
    ({"cluster": {"backend": "local", "compose_file": "x.yml"}}, "cluster.compose_file", "not used by backend local"),
    ({"cluster": {"backend": "mainframe"}}, "cluster.backend", "'mainframe' is not a backend"),
    ({"cluster": {"backend": "external", "broker": "kafka", "bootstrap_servers": "h:1", "kafka_home": "/k"}},
     "cluster.kafka_home", "it reads: backend, broker, brokers, bootstrap_servers"),
    ({"cluster": {"backend": "compose", "broker": "kafka", "brokers": 3, "services": ["a", "b"]}},
     "cluster.services", "3 distinct names"),
    ({"cluster": {"backend": "external", "broker": "kafka", "bootstrap_servers": "h:1", "proxies": ["p"]}},
     "cluster.proxies", "toxiproxy_url"),
    ({"cluster": {"backend": "external", "broker": "kafka", "bootstrap_servers": "h:1", "toxiproxy_url": "ftp://x"}},
     "cluster.toxiproxy_url", "http://HOST:PORT"),
    ({"cluster": {"client": {"sasl.password": "${KAFKA_CHAOS_TEST_UNSET_VAR}"}}}, "cluster.client.sasl.password",
     "KAFKA_CHAOS_TEST_UNSET_VAR is not set"),
    ({"cluster": {"client": {"bootstrap.servers": "h:1"}}}, "cluster.client.bootstrap.servers", "set by the backend"),
    ({"topic": {"replication_factor": 3}}, "topic.replication_factor", "more than the 1 broker"),
])
def test_bad_fields_are_named(tmp_path, patch, where, says):
    message = error_of(tmp_path, {**BASE, **patch})
    assert f"exp.yaml: {where}" in message
    assert says in message


def test_librdkafka_rejects_idempotence_with_acks_1_in_the_preflight(tmp_path):
    from harness.preflight import prepare

    doc = {**BASE, "variants": [{"name": "a", "producer": {"enable.idempotence": True, "acks": 1}}]}
    path = write(tmp_path, doc)
    load_spec(path)  # the file itself is fine; librdkafka's judgement belongs to this machine's preflight
    with pytest.raises(SpecError) as e:
        prepare(path, None, None, None)
    assert "variants.0.producer (a)" in str(e.value) and "acks" in str(e.value)


def test_unreadable_or_non_mapping_files(tmp_path):
    assert "file not found" in str(pytest.raises(SpecError, load_spec, tmp_path / "none.yaml").value)
    assert "not valid YAML" in error_of(tmp_path, "name: [unclosed")
    assert "must be a YAML mapping" in error_of(tmp_path, "- 1\n- 2\n")


def test_rules_are_parsed_once_into_typed_values_and_saved_as_text(tmp_path):
    doc = {**BASE, "expectations": {"a": {"duplicates": 0, "jump_back_runs": "> 0"}}}
    spec = load_spec(write(tmp_path, doc))
    assert spec.rules("a") == {"duplicates": Rule("==", 0), "jump_back_runs": Rule(">", 0)}
    assert spec.public_dict()["expectations"] == {"a": {"duplicates": "== 0", "jump_back_runs": "> 0"}}


@pytest.mark.parametrize("patch, where, says", [
    ({"variants": [{"name": "a", "allow": ["duplicates"]}]}, "variants.0.allow", "not a fatal anomaly"),
    ({"variants": [{"name": "a", "allow": ["meteors"]}]}, "variants.0.allow", "not a metric"),
    ({"expectations": {"a": {"lost": "> 0"}}}, "expectations.a.lost", "add lost to variant a's allow list"),
    ({"expectations": {"a": {"duplicates": True}}}, "expectations.a.duplicates", "whole number or a comparison"),
])
def test_allow_lists_and_rules_on_fatal_anomalies(tmp_path, patch, where, says):
    message = error_of(tmp_path, {**BASE, **patch})
    assert f"exp.yaml: {where}" in message and says in message, message


def test_an_allowed_fatal_anomaly_may_have_a_rule(tmp_path):
    doc = {**BASE, "variants": [{"name": "a", "allow": ["lost"]}], "expectations": {"a": {"lost": "> 0"}}}
    spec = load_spec(write(tmp_path, doc))
    assert spec.variants[0].allow == ["lost"] and spec.rules("a") == {"lost": Rule(">", 0)}


def test_external_cluster_client_settings_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KC_TEST_SECRET", "s3cr3t")
    doc = {**BASE, "cluster": {"backend": "external", "broker": "kafka", "brokers": 3,
                               "bootstrap_servers": "kafka.example:9092",
                               "client": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                          "sasl.username": "u", "sasl.password": "${KC_TEST_SECRET}"}}}
    spec = load_spec(write(tmp_path, doc))
    assert spec.cluster.client_settings()["sasl.password"] == "s3cr3t"
    assert spec.public_dict()["cluster"]["client"]["sasl.password"] == "${KC_TEST_SECRET}"
    assert spec.cluster.proxy_names == ["broker-0", "broker-1", "broker-2"]


def test_literal_secrets_are_hidden_from_the_run_folder(tmp_path):
    doc = {**BASE, "cluster": {"client": {"sasl.password": "hunter2", "client.id": "me"}}}
    public = load_spec(write(tmp_path, doc)).public_dict()["cluster"]["client"]
    assert public == {"sasl.password": "***", "client.id": "me"}


def test_faults_each_backend_can_inject_and_why_not(monkeypatch):
    from harness.cluster import local, unsupported_faults
    from harness.faults.registry import KINDS, names

    FAULT_KINDS = tuple(KINDS)
    LINK_FAULTS = names("link")
    WORKLOAD_FAULTS = names("producer") + names("consumer")
    from tests.specs import cluster_spec as ClusterSpec

    def supported_faults(spec):
        return set(FAULT_KINDS) - {k.split(" ")[0] for k in unsupported_faults(spec, set(FAULT_KINDS))}

    assert supported_faults(ClusterSpec()) == set(FAULT_KINDS) - {"isolate", "lose-unflushed", "stray-produce",
                                                                   *LINK_FAULTS}
    assert unsupported_faults(ClusterSpec(), {"isolate", "lost-acks"}) == [
        "isolate (Tansu runs one broker with no replication or controller quorum to cut it off from; "
        "use broker: kafka)"]
    assert unsupported_faults(ClusterSpec(), {"lose-unflushed"}) == [
        "lose-unflushed (Tansu keeps its log in memory: a kill already loses all of it; use broker: kafka)"]
    # only the local Kafka backend owns its brokers' log folders
    assert supported_faults(ClusterSpec(backend="compose", broker="kafka", brokers=3)) == set(FAULT_KINDS) - {
        "lose-unflushed", "delay-requests", "stray-produce", *LINK_FAULTS}
    # only the embedded proxy reads Kafka's request framing
    assert "delay-requests" not in supported_faults(ClusterSpec(backend="local", broker="kafka", brokers=3,
                                                                proxy="toxiproxy"))
    assert supported_faults(ClusterSpec(backend="local", broker="kafka", brokers=3)) == set(FAULT_KINDS) - set(LINK_FAULTS)
    # packets: only in network namespaces; delay and reordering only where iptables can queue them
    spaced = ClusterSpec(backend="local", broker="kafka", brokers=3, network="namespaces")
    monkeypatch.setattr(local, "queue_available", lambda: True)
    assert supported_faults(spaced) == set(FAULT_KINDS)
    monkeypatch.setattr(local, "queue_available", lambda: False)
    assert supported_faults(spaced) == set(FAULT_KINDS) - {"packet-reorder", "packet-delay"}
    assert "NFQUEUE" in unsupported_faults(spaced, {"packet-delay"})[0]
    [why] = unsupported_faults(ClusterSpec(backend="local", broker="kafka", brokers=1), {"isolate"})
    assert "one broker" in why
    ext = dict(backend="external", broker="kafka", bootstrap_servers="h:1")
    assert supported_faults(ClusterSpec(**ext)) == set(WORKLOAD_FAULTS)  # the harness's own clients: no proxy needed
    assert supported_faults(ClusterSpec(**ext, toxiproxy_url="http://h:8474")) == {
        "lost-acks", "lost-requests", "reset-connections", "latency", "bandwidth", "slow-close", "partition",
        *WORKLOAD_FAULTS}
    assert unsupported_faults(ClusterSpec(**ext, toxiproxy_url="http://h:8474"), {"stray-produce"}) == [
        "stray-produce (the harness leaves a hanging transaction only in brokers it started)"]
    assert unsupported_faults(ClusterSpec(**ext, toxiproxy_url="http://h:8474"), {"lose-unflushed"}) == [
        "lose-unflushed (the harness cannot act on brokers it did not start)"]
    assert unsupported_faults(ClusterSpec(**ext, toxiproxy_url="http://h:8474"), {"isolate", "broker-kill"}) == [
        "broker-kill (the harness cannot act on brokers it did not start)",
        "isolate (only the clients' traffic crosses its Toxiproxy, not replication or the controller quorum)"]


def test_compose_file_is_found_from_the_experiment_folder(tmp_path):
    doc = {**BASE, "cluster": {"backend": "compose", "broker": "kafka"}}
    shipped = load_spec(write(tmp_path, doc)).cluster
    assert shipped.compose_file is None and shipped.compose_path == ROOT / "compose" / "docker-compose.yml"
    doc["cluster"]["compose_file"] = "mine/compose.yml"
    assert load_spec(write(tmp_path, doc)).cluster.compose_path == tmp_path / "mine" / "compose.yml"


def test_machine_dependent_problems_name_the_field(tmp_path, monkeypatch):
    from harness.cluster import input_problems
    from tests.specs import cluster_spec as ClusterSpec

    monkeypatch.delenv("KAFKA_HOME", raising=False)
    [msg] = input_problems(ClusterSpec(backend="local", broker="kafka", brokers=3))
    assert msg.startswith("cluster.kafka_home:") and "KAFKA_HOME" in msg
    [msg] = input_problems(ClusterSpec(backend="local", broker="kafka", kafka_home=str(tmp_path)))
    assert "bin/kafka-server-start.sh not found" in msg
    [msg] = input_problems(ClusterSpec(backend="compose", broker="kafka", compose_file=str(tmp_path / "no.yml")))
    assert msg.startswith("cluster.compose_file:") and "not found" in msg
    compose = str(ROOT / "compose" / "docker-compose.yml")
    assert input_problems(ClusterSpec(backend="compose", broker="kafka", brokers=3, compose_file=compose)) == []
    [msg] = input_problems(ClusterSpec(backend="compose", broker="kafka", brokers=1, compose_file=compose,
                                       services=["zookeeper"]))
    assert "no service 'zookeeper'" in msg


def test_the_spec_a_run_keeps_loads_again(tmp_path):
    for cluster in ({}, {"backend": "compose", "broker": "kafka", "brokers": 3},
                    {"backend": "external", "broker": "kafka", "bootstrap_servers": "h:1"}):
        doc = {**BASE, "cluster": cluster}
        kept = load_spec(write(tmp_path, doc)).public_dict()
        again = tmp_path / "again.yaml"
        again.write_text(yaml.safe_dump({**kept, "seed": 5}))
        assert load_spec(again).cluster == load_spec(write(tmp_path, doc)).cluster


def test_the_compose_file_ships_inside_the_package():
    import fnmatch
    import tomllib

    import harness
    from harness.spec import SHIPPED_COMPOSE_FILE

    assert SHIPPED_COMPOSE_FILE.is_file() and SHIPPED_COMPOSE_FILE.parent == ROOT / "compose"  # the top-level folder
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert tool["package-dir"]["harness.compose"] == "compose"  # ... installed as the package harness.compose
    data = tool["package-data"]["harness.compose"]
    for name in ("docker-compose.yml", "toxiproxy.json", "build-images.sh", "kafka-entrypoint.sh"):
        assert any(fnmatch.fnmatch(name, pattern) for pattern in data), name  # what `pip install .` copies
    # every package of the source tree is listed (the list is explicit because of the mapping above)
    package = Path(harness.__file__).resolve().parent
    found = {".".join(p.parent.relative_to(package.parent).parts) for p in package.rglob("__init__.py")}
    assert found | {"harness.compose"} == set(tool["packages"])


MATRIX = {"name": "m", "workload": {"messages": 10}, "producer": {"acks": "all"},
          "matrix": {"acks": [1, "all"], "enable.idempotence": [False, True], "linger.ms": [0, 100]},
          "allow": {"enable.idempotence=true": ["inconsistent_offsets"]},
          "expectations": {"enable.idempotence=true": {"duplicates": 0},
                           "acks-all_idem-true_linger-100": {"duplicates": "<= 3", "jump_back_runs": 0}}}


def test_matrix_expands_into_named_variants_and_selectors_address_them(tmp_path):
    from harness.preflight import check_producer_configs
    from harness.spec import ExperimentSpec

    spec = load_spec(write(tmp_path, MATRIX))
    assert [v.name for v in spec.variants] == [
        "acks-1_idem-false_linger-0", "acks-1_idem-false_linger-100", "acks-1_idem-true_linger-0",
        "acks-1_idem-true_linger-100", "acks-all_idem-false_linger-0", "acks-all_idem-false_linger-100",
        "acks-all_idem-true_linger-0", "acks-all_idem-true_linger-100"]
    assert spec.producer_config(spec.variants[1]) == {"acks": 1, "enable.idempotence": False, "linger.ms": 100}
    check_producer_configs(spec, Path("m.yaml"))  # librdkafka refuses idempotence with acks=1: left out, said
    assert len(spec.variants) == 6 and len(spec.notes) == 2
    assert spec.notes[0].startswith("matrix: acks-1_idem-true_linger-0 skipped: librdkafka refuses it:")
    allowed = {v.name: v.allow for v in spec.variants}
    assert allowed["acks-all_idem-true_linger-0"] == ["inconsistent_offsets"] and allowed["acks-1_idem-false_linger-0"] == []
    assert spec.rules("acks-all_idem-true_linger-0") == {"duplicates": Rule("==", 0)}
    assert spec.rules("acks-all_idem-true_linger-100") == {"duplicates": Rule("<=", 3), "jump_back_runs": Rule("==", 0)}
    assert spec.rules("acks-1_idem-false_linger-0") == {}
    stored = ExperimentSpec.model_validate(spec.public_dict())  # the run folder's spec.yaml: variants, no matrix
    assert [v.name for v in stored.variants] == [v.name for v in spec.variants]
    assert stored.rules("acks-all_idem-true_linger-0") == {"duplicates": Rule("==", 0)}


def test_a_secret_in_the_matrix_or_a_selector_never_reaches_a_name_or_the_stored_spec(tmp_path):
    from harness.spec import ExperimentSpec

    doc = {"name": "m", "workload": {"messages": 10}, "matrix": {"sasl.password": ["hunter2", "swordfish"],
                                                                "acks": [1, "all"]},
           "allow": {"sasl.password=hunter2": ["lost"]},
           "expectations": {"sasl.password=swordfish,acks=all": {"duplicates": "<= 3"}, "acks=1": {"lost": "> 0"}}}
    spec = load_spec(write(tmp_path, {**doc, "allow": {**doc["allow"], "acks=1": ["lost"]}}))
    assert [v.name for v in spec.variants] == ["acks-1_sasl-password-1", "acks-1_sasl-password-2",
                                               "acks-all_sasl-password-1", "acks-all_sasl-password-2"]
    public = spec.public_dict()
    text = yaml.safe_dump(public)
    assert "hunter2" not in text and "swordfish" not in text
    assert public["allow"] == {"acks=1": ["lost"]}  # the secret selector's allow lists live in the variants
    assert public["expectations"] == {"acks-all_sasl-password-2": {"duplicates": "<= 3"}, "acks=1": {"lost": "> 0"}}
    stored = ExperimentSpec.model_validate(public, context={"stored": True})
    for v in spec.variants:  # judged the same from the stored spec
        assert stored.rules(v.name) == spec.rules(v.name)
        assert next(s.allow for s in stored.variants if s.name == v.name) == v.allow


@pytest.mark.parametrize("change, where, what", [
    ({"expectations": {"linger.ms=5": {"duplicates": 0}}}, "expectations.linger.ms=5", "selects no variant"),
    ({"allow": {"acks=1": ["duplicates"]}}, "allow", "not a fatal anomaly"),
    ({"expectations": {"acks=1": {"lost": "> 0"}}}, "expectations.acks=1.lost", "add lost to variant acks-1_"),
    ({"matrix": {"linger.ms": []}}, "matrix.linger.ms", "at least 1"),
])
def test_matrix_errors_name_the_field(tmp_path, change, where, what):
    message = error_of(tmp_path, {**MATRIX, **change})
    assert f"{where}" in message and what in message, message


@pytest.mark.parametrize("path", SHIPPED, ids=shipped_id)
def test_every_shipped_experiment_writes_a_spec_that_analyze_reads_back_the_same(path):
    from harness.preflight import check_producer_configs
    from harness.spec import ExperimentSpec

    spec = load_spec(path)
    check_producer_configs(spec, path)  # what the run does before writing spec.yaml (matrix combinations left out)
    doc = yaml.safe_load(yaml.safe_dump({**spec.public_dict(), "seed": spec.seed}, sort_keys=False))
    stored = ExperimentSpec.model_validate(doc, context={"stored": True})
    assert [v.name for v in stored.variants] == [v.name for v in spec.variants]
    for v, w in zip(spec.variants, stored.variants):
        assert (w.allow, stored.rules(w.name)) == (v.allow, spec.rules(v.name)), v.name


@pytest.mark.parametrize("path", SHIPPED, ids=shipped_id)
def test_every_shipped_experiments_plan_replays_as_planned(path, tmp_path):
    """--replay of a run's plan passes the same checks as the file's own faults (broker stops' downtime included)
    and gives the same schedule back."""
    spec = load_spec(path)
    planned = plan(spec, spec.seed)
    if not planned:  # a fault space only (experiments/explore/): each try plans its own, tested there
        assert spec.explore is not None
        return
    journal = tmp_path / "faults.jsonl"
    journal.write_text(dumps(planned))
    assert load(journal, spec) == planned
    assert [KINDS[f.kind].problem(spec) for f in planned] == [""] * len(planned)


def test_a_stored_broker_stop_of_an_earlier_release_with_its_duration_still_reads():
    from harness.spec import ExperimentSpec

    doc = {"name": "m", "workload": {"messages": 10, "rate": 10}, "variants": [{"name": "a"}],
           "faults": [{"kind": "broker-kill", "at": 1.0, "downtime": 5.0, "duration": 5.0, "target": {"broker": 0}}]}
    assert ExperimentSpec.model_validate(doc, context={"stored": True}).faults[0].duration == 5.0
    with pytest.raises(Exception, match="takes 'downtime'"):  # in an experiment file, still a mistake
        ExperimentSpec.model_validate(doc)


SECRET_SELECTOR_ERRORS = {  # a message naming an expectations/allow key that selects by a secret's value
    "selects nothing": ({"expectations": {"sasl.password=hunter2": {"duplicates": 0}}},
                        "expectations.sasl.password=***: selects no variant"),
    "allow selects nothing": ({"allow": {"sasl.password=hunter2,acks=all": ["lost"]}},
                              "allow.sasl.password=***,acks=all: selects no variant"),
    "not a selector": ({"expectations": {"sasl.password=hunter2,": {"duplicates": 0}}},
                       "'sasl.password=***,': a selector is SETTING=VALUE"),
    "unknown metric": ({"variants": [{"name": "a", "producer": {"sasl.password": "hunter2"}}],
                        "expectations": {"sasl.password=hunter2": {"nonsense": 0}}},
                       "expectations.sasl.password=***.nonsense: unknown metric"),
}


@pytest.mark.parametrize("case", sorted(SECRET_SELECTOR_ERRORS))
def test_a_message_naming_a_secret_selector_masks_its_value(tmp_path, case):
    extra, says = SECRET_SELECTOR_ERRORS[case]
    message = error_of(tmp_path, {**BASE, **extra})
    assert says in message and "hunter2" not in message, message


def test_a_selector_by_an_environment_reference_is_named_as_written(tmp_path, monkeypatch):
    monkeypatch.setenv("KC_PW", "hunter2")
    message = error_of(tmp_path, {**BASE, "expectations": {"sasl.password=${KC_PW}": {"duplicates": 0}}})
    assert "expectations.sasl.password=${KC_PW}: selects no variant" in message, message


def test_a_rule_on_refused_combinations_masks_the_secret_it_selects_by(tmp_path):
    path = write(tmp_path, {**BASE, "variants": [{"name": "a"}],
                            "matrix": {"acks": [1, "all"], "enable.idempotence": [True, False]},
                            "producer": {"sasl.password": "hunter2"},
                            "expectations": {"sasl.password=hunter2,acks=1,enable.idempotence=true": {"lost": 0}}})
    spec = load_spec(path)
    with pytest.raises(SpecError) as e:
        check_producer_configs(spec, path)
    assert "expectations.sasl.password=***,acks=1,enable.idempotence=true: selects only acks-1_idem-true" in str(e.value)
    assert "hunter2" not in str(e.value)


def test_a_matrix_ranges_over_client_versions_and_selectors_pick_them(tmp_path):
    doc = {**BASE, "matrix": {"confluent-kafka": ["2.2.0", "2.3.0"], "enable.idempotence": [True, False]},
           "expectations": {"confluent-kafka=2.2.0": {"duplicates": "<= 10"}},
           "allow": {"confluent-kafka=2.3.0,enable.idempotence=true": ["base_offset_minus_one"]}}
    doc.pop("variants", None)
    spec = load_spec(write(tmp_path, doc))
    got = {v.name: (spec.client_version(v), v.producer, v.allow, spec.rules(v.name)) for v in spec.variants}
    assert list(got) == ["confluent-kafka-2.2.0_idem-true", "confluent-kafka-2.2.0_idem-false",
                         "confluent-kafka-2.3.0_idem-true", "confluent-kafka-2.3.0_idem-false"]
    assert got["confluent-kafka-2.2.0_idem-false"][:2] == ("2.2.0", {"enable.idempotence": False})  # not a setting
    assert got["confluent-kafka-2.3.0_idem-true"][2] == ["base_offset_minus_one"]
    assert [n for n, g in got.items() if g[3]] == ["confluent-kafka-2.2.0_idem-true", "confluent-kafka-2.2.0_idem-false"]


def test_a_client_version_runs_a_consumer_group_too(tmp_path):
    doc = {**BASE, "consumer": {"members": 2}, "client": {"confluent-kafka": "2.1.0"},
           "faults": [{"kind": "consumer-kill", "at": 0.2}]}
    spec = load_spec(write(tmp_path, doc))
    assert [(spec.client_version(v), spec.consumer_spec(v).members) for v in spec.variants] == [("2.1.0", 2)] * len(
        spec.variants)


def test_broker_settings_and_feature_levels_go_where_a_backend_can_apply_them(tmp_path):
    kafka = {"backend": "local", "broker": "kafka", "brokers": 3}
    doc = {**BASE, "cluster": {**kafka, "broker_config": {"log.flush.interval.messages": 1, "x.enable": True}},
           "variants": [{"name": "off", "features": {"eligible.leader.replicas.version": 0}}, {"name": "on"}]}
    spec = load_spec(write(tmp_path, doc))
    assert spec.cluster.broker_config == {"log.flush.interval.messages": 1, "x.enable": True}
    assert [v.features for v in spec.variants] == [{"eligible.leader.replicas.version": 0}, {}]
    compose = {**doc, "cluster": {"backend": "compose", "broker": "kafka", "brokers": 3},
               "variants": [{"name": "v", "broker_config": {"transaction.partition.verification.enable": False}}]}
    assert load_spec(write(tmp_path, compose)).variants[0].broker_config == {
        "transaction.partition.verification.enable": False}  # changed through the admin API: any Kafka
    refused = [
        ({**doc, "cluster": {"broker_config": {"a.b": 1}}}, "cluster.broker_config", "Tansu takes no Kafka broker"),
        ({**doc, "cluster": {**kafka, "broker_config": {"Bad Key": 1}}}, "Bad Key", "not a Kafka broker property"),
        ({**doc, "cluster": {**kafka, "broker_config": {"a.b": "x\ny"}}}, "a.b", "line break"),
        ({**doc, "cluster": {"broker": "tansu"}}, "variants", "only backend local with broker kafka"),
        ({**doc, "variants": [{"name": "v", "features": {"eligible.leader.replicas.version": -1}}]},
         "variants.0.features", "greater than or equal to 0"),
        ({**doc, "cluster": {"broker": "tansu"}, "variants": [{"name": "v", "broker_config": {"a.b": 1}}]},
         "variants", "v sets broker_config, which needs Apache Kafka"),
    ]
    for bad, field, what in refused:
        with pytest.raises(SpecError) as e:
            load_spec(write(tmp_path, bad))
        assert field in str(e.value) and what in str(e.value), str(e.value)


@pytest.mark.parametrize("key", ["broker.id", "node.id", "security.inter.broker.protocol", "listeners",
                                 "advertised.listeners", "listener.security.protocol.map",
                                 "listener.name.client.ssl.keystore.location", "controller.quorum.voters",
                                 "inter.broker.listener.name", "process.roles", "log.dir", "metadata.log.dir"])
def test_the_harness_keeps_the_listener_layout_in_every_broker_config(tmp_path, key):
    # These started Spark and the brokers, then failed with exit 3 and a Java stack (or were refused only at
    # cluster start, for cluster.broker_config); now the file's own validation names them.
    kafka = {"backend": "local", "broker": "kafka", "brokers": 3}
    for doc, field in [({**BASE, "cluster": {**kafka, "broker_config": {key: 99}}}, f"cluster.broker_config.{key}"),
                       ({**BASE, "cluster": kafka, "variants": [{"name": "a"}, {"name": "b", "broker_config": {key: 1}}]},
                        f"variants.1.broker_config.{key}")]:
        message = error_of(tmp_path, doc)
        assert f"exp.yaml: {field}: set by the harness" in message and "any other Kafka broker property" in message
        assert len(message.splitlines()) == 1, message
    kept = {**BASE, "cluster": kafka, "variants": [{"name": "a", "broker_config": {"controller.quorum.fetch.timeout.ms": 1}}]}
    assert load_spec(write(tmp_path, kept)).variants[0].broker_config  # a quorum timing is the user's
