"""backend: external, for real: the test starts a Tansu broker behind a Toxiproxy-API proxy and the
harness attaches to them as it would to a user's cluster (bootstrap_servers + toxiproxy_url)."""

import pytest

from harness.cluster.local import LocalTansuCluster
from harness.spec import LocalClusterSpec
from tests.integration.test_quickstart import CONTROL, SMALL, run_experiment


@pytest.fixture
def users_cluster(tmp_path):
    cluster = LocalTansuCluster(LocalClusterSpec(), tmp_path / "users-cluster")
    cluster.up()
    yield cluster
    cluster.down()


def external(cluster, proxied: bool) -> dict:
    section = {"backend": "external", "broker": "kafka", "brokers": 1, "bootstrap_servers": cluster.bootstrap}
    if proxied:
        section.update(toxiproxy_url=f"http://127.0.0.1:{cluster.server.port}", proxies=["broker-0"])
    return section


def test_network_faults_through_the_users_toxiproxy(tmp_path, users_cluster):
    result, run_dir, summary = run_experiment(tmp_path, {**SMALL, "cluster": external(users_cluster, True)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert summary["cluster"].startswith("external · ")
    off, on = summary["variants"]["idempotence-off"], summary["variants"]["idempotence-on"]
    assert off["duplicates"] > 0 and off["jump_back_runs"] > 0
    assert on["duplicates"] == 0 and on["lost"] == 0
    assert users_cluster.toxiproxy().toxics("broker-0") == []  # the user's proxy is left healed


def test_without_toxiproxy_only_a_clean_run_is_possible(tmp_path, users_cluster):
    result, _, summary = run_experiment(tmp_path, {**CONTROL, "cluster": external(users_cluster, False)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(v["duplicates"] == 0 and v["lost"] == 0 for v in summary["variants"].values())
    assert "proxy: none" in summary["cluster"]
