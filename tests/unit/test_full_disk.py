"""A full disk while summary.json is written: a minimal summary is kept and the run exits 3 saying
"no space left on the device holding <run folder>", in one line (the device is simulated: the first
write of the summary fails with ENOSPC; everything the run would start is replaced by stand-ins)."""

import errno
import json

import pytest
from click.testing import CliRunner

import harness.run as run_mod
from harness.analysis.metrics import KEYS
from harness.cli import main
from harness.runfolder import RunFolder


class _Spark:
    def get(self):
        return None

    def stop(self, keep_classes=True):
        self.kept = keep_classes


class _Cluster:
    description = "stand-in"

    def up(self):
        pass

    def down(self):
        pass


pytestmark = pytest.mark.usefixtures("signal_handlers_restored")


def test_full_disk_keeps_a_minimal_summary_and_exits_3(tmp_path, monkeypatch):
    sent = {"sent": 10, "acked": 10, "rejected": 0, "unknown": 0}
    monkeypatch.setattr(run_mod, "_spark", lambda master, log: _Spark())
    monkeypatch.setattr(run_mod, "make_cluster", lambda spec, path: _Cluster())
    monkeypatch.setattr(run_mod.Run, "_run_variant",
                        lambda self, v: self.produced.setdefault(v.name, {"topic": "t", **sent}))
    monkeypatch.setattr(run_mod, "analyze_folder",
                        lambda spark, folder, names, **k: {n: {**{key: 0 for key in KEYS}, **sent} for n in names})
    writes = []
    real = RunFolder.write_summary

    def full_once(self, summary):
        writes.append(summary)
        if len(writes) == 1:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path / "summary.json"))
        real(self, summary)

    monkeypatch.setattr(RunFolder, "write_summary", full_once)
    exp = tmp_path / "exp.yaml"
    exp.write_text("name: full\nworkload: {messages: 10, rate: 100}\nvariants: [{name: a}]\n")
    out = tmp_path / "reports"
    result = CliRunner().invoke(main, ["run", str(exp), "--out", str(out)])

    run_dir = next(p for p in out.iterdir() if p.is_dir())
    assert result.exit_code == 3, result.output
    assert f"error: no space left on the device holding {run_dir}" in result.output
    assert "Traceback" not in result.output
    assert writes[0]["status"] == "complete" and writes[0]["variants"]["a"]["verdict"] == "pass"  # what did not fit
    kept = json.loads((run_dir / "summary.json").read_text())
    assert kept["status"] == kept["verdict"] == "error"
    assert kept["reason"] == f"no space left on the device holding {run_dir}"
