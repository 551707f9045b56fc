"""A real Kafka distribution judges what the experiment asks of its brokers before anything starts (a variant's
feature levels), and a secret among the broker properties reaches no file of the run folder and not the
terminal, though the brokers get it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cluster.local import kafka_storage
from harness.preflight import check
from harness.spec import SpecError
from tests.integration.test_quickstart import run_dirs
from tests.kafka.conftest import server_log

ROOT = Path(__file__).resolve().parents[2]


def experiment(tmp_path, **over) -> Path:
    doc = {"name": "broker-input", "cluster": {"backend": "local", "broker": "kafka", "brokers": 1},
           "workload": {"messages": 2000, "rate": 4000}, "producer": {"acks": "all"}, "variants": [{"name": "a"}],
           **over}
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(doc))
    return exp


def test_feature_names_and_levels_are_judged_by_the_distribution_before_the_cluster_starts(tmp_path):
    kafka_storage.cache_clear()
    home = os.environ["KAFKA_HOME"]
    ok = [{"name": "off", "features": {"eligible.leader.replicas.version": 0}},
          {"name": "on", "features": {"eligible.leader.replicas.version": 1, "transaction.version": 2}}]
    spec, _ = check(experiment(tmp_path, variants=ok), None, None, None)
    assert spec.notes == []
    with pytest.raises(SpecError) as e:
        check(experiment(tmp_path, variants=[{"name": "a"}, {"name": "b", "features": {"bogus.feature.version": 1}}]),
              None, None, None)
    assert f"variants.1.features.bogus.feature.version (variant b): not a feature this Kafka ({home}) lets a " \
           "variant set; allowed: eligible.leader.replicas.version, " in str(e.value)
    assert "transaction.version" in str(e.value) and "metadata.version" not in str(e.value)
    with pytest.raises(SpecError) as e:
        check(experiment(tmp_path, variants=[{"name": "a", "features": {"transaction.version": 99}}]), None, None, None)
    assert "variants.0.features.transaction.version (variant a): level 99 is not one this Kafka" in str(e.value)


def test_a_broker_secret_reaches_no_file_of_the_run_folder_and_not_the_terminal(tmp_path):
    # Kafka takes SSL secrets on PLAINTEXT listeners and leaves them unused. (A variant's broker_config cannot
    # hold one that Kafka would take: it changes SSL and SASL secrets while running only per listener, and the
    # listeners are the harness's; tests/unit/test_secrets.py covers its refusal and summary.)
    exp = experiment(tmp_path, cluster={"backend": "local", "broker": "kafka", "brokers": 1, "broker_config": {
        "ssl.keystore.password": "hunter2-cluster-keystore", "ssl.key.password": "hunter2-cluster-key",
        # secret-named by the harness, not password-typed for Kafka, which would print it in its configuration dump
        "delegation.token.expiry.time.ms": 86_400_123}})
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "hunter2" not in r.stdout + r.stderr and "86400123" not in r.stdout + r.stderr
    [run_dir] = list(run_dirs(out))
    assert (run_dir / "logs" / "kafka-0" / "server.log").exists()  # Kafka's own logs are among the files searched
    found = [str(p) for p in out.rglob("*") if p.is_file() and (b"hunter2" in p.read_bytes() or
                                                               b"86400123" in p.read_bytes())]
    assert found == []
    assert "Kafka Server started" in server_log(run_dir, 0)  # the rest is logged
    props = (run_dir / "logs" / "kafka-0.properties").read_text()  # the very file the broker read
    assert "ssl.keystore.password=${kafkachaos:KAFKA_CHAOS_SECRET_" in props
