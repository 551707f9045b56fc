"""backend: local with broker: kafka — Apache Kafka KRaft nodes from KAFKA_HOME.

The real distribution is tests/kafka/'s job (they run when KAFKA_HOME is set).
test_stand_in_kafka_home runs everywhere: a KAFKA_HOME whose kafka-storage.sh checks and records the
format call and whose kafka-server-start.sh reads the generated server.properties and starts a Tansu
broker on the CLIENT listener, advertising what the properties advertise. It proves the harness's
side (generated configs, format before start, LOG_DIR, proxies, faults, clean-up), not Kafka's.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cluster.brokers import tansu_binary
from tests.integration.test_quickstart import SMALL, run_dirs

ROOT = Path(__file__).resolve().parents[2]

STORAGE = """#!{python}
import sys, os
args = sys.argv[1:]
assert args[0] == "format", args
cid, config = args[args.index("--cluster-id") + 1], args[args.index("--config") + 1]
props = dict(l.split("=", 1) for l in open(config).read().splitlines() if l)
for key in ("process.roles", "node.id", "controller.quorum.voters", "listeners", "advertised.listeners", "log.dirs"):
    assert key in props, key
os.makedirs(props["log.dirs"])
with open(os.path.join(props["log.dirs"], "meta.properties"), "w") as f:
    f.write(f"cluster.id={{cid}}\\nnode.id={{props['node.id']}}\\nversion=1\\n")
with open({calls!r}, "a") as f:
    f.write(f"{{props['node.id']}} {{cid}}\\n")
"""

START = """#!{python}
import os, sys
props = dict(l.split("=", 1) for l in open(sys.argv[1]).read().splitlines() if l)
meta = dict(l.split("=", 1) for l in open(os.path.join(props["log.dirs"], "meta.properties")).read().splitlines())
assert meta["node.id"] == props["node.id"], "started before kafka-storage.sh format"
listeners = dict(x.split("://") for x in props["listeners"].split(","))
advertised = dict(x.split("://") for x in props["advertised.listeners"].split(","))
os.makedirs(os.environ["LOG_DIR"], exist_ok=True)
open(os.path.join(os.environ["LOG_DIR"], "server.log"), "w").write(f"node {{props['node.id']}} starting\\n")
os.execv({tansu!r}, [{tansu!r}, "broker", "--listener-url", "tcp://" + listeners["CLIENT"],
                     "--advertised-listener-url", "tcp://" + advertised["CLIENT"],
                     "--storage-engine", "memory://node-" + props["node.id"] + "/"])
"""


@pytest.fixture
def stand_in_home(tmp_path):
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    (home / "libs").mkdir()
    (home / "libs" / "kafka-clients-4.1.0.jar").write_bytes(b"")
    calls = tmp_path / "format-calls.txt"
    for name, text in (("kafka-storage.sh", STORAGE.format(python=sys.executable, calls=str(calls))),
                       ("kafka-server-start.sh", START.format(python=sys.executable, tansu=tansu_binary()))):
        (home / "bin" / name).write_text(text)
        (home / "bin" / name).chmod(0o755)
    return home, calls


def run(tmp_path, doc):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=1200)
    [run_dir] = list(run_dirs(out))
    return r, run_dir, json.loads((run_dir / "summary.json").read_text())


def test_stand_in_kafka_home(tmp_path, stand_in_home):
    home, calls = stand_in_home
    doc = {**SMALL, "cluster": {"backend": "local", "broker": "kafka", "brokers": 1, "kafka_home": str(home)},
           "faults": SMALL["faults"] + [{"kind": "broker-pause", "at": 1.0, "duration": 0.5,
                                         "target": {"leader-of": 0}}]}
    r, run_dir, summary = run(tmp_path, doc)
    assert r.returncode == 0, r.stdout + r.stderr
    assert summary["cluster"].startswith("local · kafka 4.1.0 × 1")
    assert summary["variants"]["idempotence-off"]["duplicates"] > 0
    assert summary["variants"]["idempotence-on"]["duplicates"] == 0
    props = dict(l.split("=", 1) for l in (run_dir / "logs" / "kafka-0.properties").read_text().splitlines())
    advertised_client = props["advertised.listeners"].split(",")[0]
    bound_client = props["listeners"].split(",")[0]
    assert advertised_client.startswith("CLIENT://127.0.0.1:") and advertised_client != bound_client
    assert len(calls.read_text().splitlines()) == 1  # formatted once, before the only start
    assert (run_dir / "logs" / "kafka-0" / "server.log").exists()  # LOG_DIR points into the run folder
    assert not (run_dir / "kafka-data").exists()  # broker data removed once the log was read
