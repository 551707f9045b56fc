"""The client axis end to end on the embedded default: a variant of confluent-kafka 2.2.0 (librdkafka
2.2.0) runs in a child process beside one of the harness's own client, under the same faults.

The version is installed into the user's cache by pip on first use; where it cannot be (no package
registry reachable), the tests skip and say why."""

import signal
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from harness.workload.clientenv import ClientEnvError, ensure, running
from tests.integration.test_interrupts import assert_clean_stop, delivering, run_dir_of, start, wait_until_delivered
from tests.integration.test_quickstart import run_experiment

OLD = "2.2.0"


@pytest.fixture(scope="module")
def old_client():
    try:
        return ensure(OLD)
    except ClientEnvError as e:
        pytest.skip(f"confluent-kafka {OLD} cannot be installed on this machine: {e}")


EXPERIMENT = {
    "name": "client-axis",
    "topic": {"partitions": 3},
    "workload": {"messages": 40000, "rate": 20000},
    "producer": {"acks": "all", "retries": 10000000, "linger.ms": 5, "enable.idempotence": False},
    "variants": [{"name": "old", "client": {"confluent-kafka": OLD}}, {"name": "current"}],
    "faults": [{"kind": "lost-acks", "every": 0.4, "duration": 0.2, "cut_after_ms": 100, "target": "all"}],
}


def test_an_old_client_runs_in_its_child_and_is_judged_like_the_harness_own(tmp_path, old_client):
    result, run_dir, summary = run_experiment(tmp_path, EXPERIMENT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    old, current = summary["variants"]["old"], summary["variants"]["current"]
    assert old["client"] == f"confluent-kafka {OLD}, librdkafka {old_client.librdkafka}"
    assert current["client"] == running() and OLD not in current["client"]
    for v in (old, current):  # judged alike: the same accounting, the same faults applied
        assert v["sent"] == 40000 == v["acked"] + v["rejected"] + v["unknown"]
        assert v["lost"] == 0 and v["unexpected"] == 0 and v["faults_not_applied"] == 0
        assert v["received"] == v["unique"] + v["duplicates"]  # (duplicates under lost acks depend on timing)
    assert (run_dir / "old" / "acks.parquet").exists() and (run_dir / "logs" / "producer-old.log").exists()


def test_a_stopped_run_stops_the_client_child_and_keeps_its_log(tmp_path, old_client):
    # 80 s of sends, interrupted after the first batch delivered: the interrupt lands mid-workload however loaded
    # the machine (40,000 once all went out between the first delivery seen and the SIGINT, in a loaded CI).
    doc = delivering({**EXPERIMENT, "workload": {"messages": 400_000, "rate": 5000}})
    proc, out = start(tmp_path, doc)
    run_dir = run_dir_of(out)
    wait_until_delivered(run_dir, "old")  # the child's librdkafka logs to the run folder too
    proc.send_signal(signal.SIGINT)
    summary = assert_clean_stop(proc, run_dir, 130)  # every process of the run gone, the child included
    old = summary["variants"]["old"]
    assert 0 < old["sent"] < 400_000 and old["sent"] == old["acked"] + old["rejected"] + old["unknown"]
    assert pq.read_table(run_dir / "old" / "acks.parquet").num_rows == old["sent"]


def test_the_child_imports_the_version_asked_for(old_client):
    out = subprocess.run([sys.executable, "-c", "import confluent_kafka as c; print(c.version())"],
                         env=old_client.environ(), capture_output=True, text=True, check=True).stdout
    assert OLD in out


def test_an_old_clients_consumer_group_runs_that_version_too(tmp_path, old_client):
    doc = {"name": "client-axis-group", "seed": 3, "topic": {"partitions": 3},
           "workload": {"messages": 6000, "rate": 6000},
           "producer": {"acks": "all", "enable.idempotence": True, "linger.ms": 5},
           "consumer": {"members": 2, "when": "after", "batch": 200},
           "variants": [{"name": "old", "client": {"confluent-kafka": OLD}}]}
    result, run_dir, summary = run_experiment(tmp_path, doc)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    v = summary["variants"]["old"]
    assert v["client"] == f"confluent-kafka {OLD}, librdkafka {old_client.librdkafka}"
    assert v["received"] == 6000 and v["unconsumed"] == 0 and v["processed"] >= 6000
    members = sorted((run_dir / "logs").glob("consumer-old-m*.log"))
    assert len(members) == 2
    for log in members:  # each member imported the variant's version, not the harness's own
        assert f"confluent-kafka {OLD}, librdkafka {old_client.librdkafka}" in log.read_text(), log
