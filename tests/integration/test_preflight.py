"""A broker that advertises its own address instead of its proxy's: the run must refuse (exit 3)."""

import json
import subprocess
import sys

import yaml

from tests.integration.test_quickstart import run_dirs

MISCONFIGURED = """
from harness.cluster import local

command = local.tansu_command

def advertise_itself(index, port, advertised):
    return command(index, port, f"127.0.0.1:{port}")  # the misconfiguration under test

local.tansu_command = advertise_itself
from harness.cli import main
main()
"""


def test_broker_bypassing_its_proxy_fails_the_preflight(tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"name": "preflight", "workload": {"messages": 100, "rate": 100},
                                   "variants": [{"name": "a"}]}))
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-c", MISCONFIGURED, "run", str(exp), "--out", str(out)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "preflight failed" in r.stderr and "bypassing the proxies" in r.stderr
    summary = json.loads(next(run_dirs(out)).joinpath("summary.json").read_text())
    assert summary["status"] == "error" and "preflight failed" in summary["reason"]
