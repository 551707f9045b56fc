"""A Spark error ends the run as an infrastructure failure whose words were taken while the JVM still ran: pyspark
asks the JVM for an error's text, and the run stops Spark before the CLI prints the reason (a --repeat series
once ended in an AssertionError traceback here instead of going on to its next run)."""

import json

import pytest
from click.testing import CliRunner

import harness.run as run_mod
from harness.cli import main

from tests.unit.test_keep_data import _KafkaStandIn

pytestmark = pytest.mark.usefixtures("signal_handlers_restored")

jvm = {"running": True}


class FakeSparkError(Exception):
    """Like pyspark's captured exceptions: its text needs the JVM."""

    def __str__(self):
        assert jvm["running"], "SparkContext._gateway is not None"
        return "An exception was thrown from the Python worker: boom"


FakeSparkError.__module__ = "pyspark.errors.exceptions.captured"


class _Spark:
    def get(self):
        return None

    def stop(self, keep_classes=True):
        jvm["running"] = False


def test_a_spark_error_is_exit_3_with_its_words_after_spark_stopped(tmp_path, monkeypatch):
    jvm["running"] = True
    sent = {"sent": 10, "acked": 10, "rejected": 0, "unknown": 0}
    monkeypatch.setattr(run_mod, "_spark", lambda master, log: _Spark())
    monkeypatch.setattr(run_mod, "make_cluster", lambda spec, path: _KafkaStandIn(path))
    monkeypatch.setattr(run_mod.Run, "_run_variant",
                        lambda self, v: self.produced.setdefault(v.name, {"topic": "kc-a", **sent}))

    def failing(spark, folder, names, **k):
        raise FakeSparkError()

    monkeypatch.setattr(run_mod, "analyze_folder", failing)
    exp = tmp_path / "exp.yaml"
    exp.write_text("name: sparkfail\nworkload: {messages: 10, rate: 100}\nvariants: [{name: a}]\n")
    out = tmp_path / "reports"
    result = CliRunner().invoke(main, ["run", str(exp), "--out", str(out)])
    assert not jvm["running"]  # the words below were taken before the stop
    assert result.exit_code == 3, result.output
    assert "Spark failed: An exception was thrown from the Python worker: boom" in result.output
    assert "Traceback" not in result.output and "AssertionError" not in result.output
    run_dir = next(p for p in out.iterdir() if p.is_dir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "error" and "boom" in summary["reason"]
    assert "FakeSparkError" in (run_dir / "logs" / "harness-error.log").read_text()  # the traceback is kept
