"""The Compose cluster for real: 3 apache/kafka brokers behind the Toxiproxy container.

Run where Docker exists (the nightly workflow's machines, a laptop):  python -m pytest tests/compose
The first test lets testcontainers bring the file up and checks the wiring the harness relies on;
the second runs a short experiment with leader kills, pauses and lost acks through the CLI,
on a cluster the harness brings up and takes down itself.
"""

import json
import subprocess
import sys
from pathlib import Path

import yaml
from confluent_kafka.admin import AdminClient

from harness.cluster.base import peer_proxy_names
from harness.cluster.toxiproxy import ToxiproxyClient

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "harness" / "compose"
PROXIES = ["127.0.0.1:29091", "127.0.0.1:29092", "127.0.0.1:29093"]


def test_brokers_advertise_their_proxies_and_a_disabled_proxy_cuts_its_broker_off():
    from testcontainers.compose import DockerCompose

    with DockerCompose(COMPOSE, compose_file_name="docker-compose.yml", wait=True):
        md = AdminClient({"bootstrap.servers": ",".join(PROXIES)}).list_topics(timeout=60)
        assert sorted(f"{b.host}:{b.port}" for b in md.brokers.values()) == PROXIES
        assert sorted(md.brokers) == [1, 2, 3]
        toxi = ToxiproxyClient("127.0.0.1", 8474)
        assert toxi.attach("broker-0").endswith(":29091")
        for name in peer_proxy_names(0, 3):  # what isolate disables: replication and controller, both ways
            toxi.attach(name)
        toxi.set_enabled("broker-0", False)
        try:
            md = AdminClient({"bootstrap.servers": PROXIES[1]}).list_topics(timeout=30)
            assert len(md.brokers) == 3  # the cluster itself is whole: only clients lost broker 1
        finally:
            toxi.reset()


def test_short_failover_experiment_through_the_cli(tmp_path):
    doc = yaml.safe_load((ROOT / "experiments" / "broker-failover.yaml").read_text())
    doc["workload"] = {"messages": 150000, "rate": 5000}
    doc["cluster"]["compose_file"] = str(COMPOSE / "docker-compose.yml")
    exp = tmp_path / "failover.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out),
                        "--junit", str(tmp_path / "junit.xml")], cwd=ROOT, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode in (0, 1), r.stdout + r.stderr  # 3 would mean the cluster or harness failed
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["cluster"].startswith("compose · apache/kafka:4.")
    on = summary["variants"]["idempotence-on"]
    assert on["duplicates"] == 0 and on["lost"] == 0, on
    faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    assert {f["kind"] for f in faults} >= {"broker-kill", "broker-pause", "lost-acks"}
    assert all(f["outcome"] != "failed" for f in faults), [f for f in faults if f["outcome"] == "failed"]
    ps = subprocess.run(["docker", "compose", "-f", str(COMPOSE / "docker-compose.yml"), "ps", "-q"],
                        capture_output=True, text=True)
    assert ps.stdout.strip() == ""  # the run brought the cluster up, so it took it down
