"""Runs behind a real toxiproxy-server (`cluster.proxy: toxiproxy`): the same verdicts as behind the embedded
proxy, the cluster line naming the server's version, and no process of either left behind after a run, a
Ctrl-C or a kill -9 of the harness. Skips, saying why, when no toxiproxy-server is found."""

import os
import signal

import pytest

from harness.cluster.toxiproxy import find_toxiproxy_server
from tests.integration.test_interrupts import EXPERIMENT, assert_clean_stop, run_dir_of, start, wait_for
from tests.integration.test_quickstart import SMALL, accounting, processes_of, run_experiment

pytestmark = pytest.mark.skipif(find_toxiproxy_server() is None,
                                reason="no toxiproxy-server on PATH or in $TOXIPROXY_SERVER")
REAL = {"backend": "local", "broker": "tansu", "brokers": 1, "proxy": "toxiproxy"}


def toxiproxy_of(run_dir):
    return [c for c in processes_of(run_dir) if any(os.path.basename(a) == "toxiproxy-server" for a in c)]


def test_quickstart_behind_the_real_toxiproxy_gives_the_same_verdicts(tmp_path):
    result, run_dir, summary = run_experiment(tmp_path, {**SMALL, "name": "small-quickstart-toxiproxy",
                                                         "cluster": REAL})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " · proxy: toxiproxy-server 2." in summary["cluster"], summary["cluster"]
    off, on = summary["variants"]["idempotence-off"], summary["variants"]["idempotence-on"]
    assert off["duplicates"] > 0, off
    assert (on["duplicates"], on["jump_back_runs"], on["lost"]) == (0, 0, 0), on
    assert accounting(off) and accounting(on)
    assert "Starting Toxiproxy" in (run_dir / "logs" / "toxiproxy.log").read_text()
    assert processes_of(run_dir) == []


def test_ctrl_c_and_kill_9_leave_no_toxiproxy_server_behind(tmp_path):
    doc = {**EXPERIMENT, "cluster": REAL}
    for sub in ("int", "kill"):
        (tmp_path / sub).mkdir()
    proc, out = start(tmp_path / "int", doc)
    run_dir = run_dir_of(out)
    wait_for(lambda: (run_dir / "a").exists(), what="the first variant to start")
    assert toxiproxy_of(run_dir), processes_of(run_dir)
    proc.send_signal(signal.SIGINT)
    assert_clean_stop(proc, run_dir, 130)

    proc, out = start(tmp_path / "kill", doc)
    run_dir = run_dir_of(out)
    wait_for(lambda: (run_dir / "a").exists(), what="the first variant to start")
    assert toxiproxy_of(run_dir), processes_of(run_dir)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    wait_for(lambda: processes_of(run_dir) == [], timeout=60, what="no orphan after kill -9")
