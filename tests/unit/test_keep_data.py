"""A run's own local-Kafka cluster leaves its brokers' log folders until the run is judged (run.py): kept when the
verdict is fail or --keep-data asked, and summary.json and the printed summary say so; removed otherwise (the
cluster, the workload and the analysis are stand-ins: the decision is what is tested)."""

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

import harness.run as run_mod
from harness.analysis.metrics import KEYS
from harness.cli import main

pytestmark = pytest.mark.usefixtures("signal_handlers_restored")


class _Spark:
    def get(self):
        return None

    def stop(self, keep_classes=True):
        pass


class _KafkaStandIn:
    """Writes a broker's log folder where a local Kafka keeps it; removes it when down() is not told to keep it."""

    description = "local · kafka stand-in"
    keep_data = False

    def __init__(self, run_dir):
        self.data_folder = run_dir / "kafka-data"
        self.files = SimpleNamespace(logs=run_dir / "logs")

    def up(self):
        (self.data_folder / "node-0" / "kc-a-0").mkdir(parents=True)
        (self.data_folder / "node-0" / "kc-a-0" / "00000000000000000000.log").write_bytes(b"x" * 1000)

    def down(self):
        if not self.keep_data:
            self.discard_data()

    def discard_data(self):
        import shutil

        shutil.rmtree(self.data_folder, ignore_errors=True)


def run(tmp_path, monkeypatch, lost: int, *options):
    sent = {"sent": 10, "acked": 10, "rejected": 0, "unknown": 0}
    monkeypatch.setattr(run_mod, "_spark", lambda master, log: _Spark())
    monkeypatch.setattr(run_mod, "make_cluster", lambda spec, path: _KafkaStandIn(path))
    monkeypatch.setattr(run_mod.Run, "_run_variant",
                        lambda self, v: self.produced.setdefault(v.name, {"topic": "kc-a", **sent}))
    monkeypatch.setattr(run_mod, "analyze_folder", lambda spark, folder, names, **k: {
        n: {**{key: 0 for key in KEYS}, **sent, "lost": lost} for n in names})
    exp = tmp_path / "exp.yaml"
    tmp_path.mkdir(exist_ok=True)
    exp.write_text("name: keep\nworkload: {messages: 10, rate: 100}\nvariants: [{name: a}]\n")
    out = tmp_path / "reports"
    result = CliRunner().invoke(main, ["run", str(exp), "--out", str(out), *options])
    run_dir = next(p for p in out.iterdir() if p.is_dir())
    return result, run_dir, json.loads((run_dir / "summary.json").read_text())


def test_a_passed_run_removes_its_brokers_logs(tmp_path, monkeypatch):
    result, run_dir, summary = run(tmp_path, monkeypatch, 0)
    assert result.exit_code == 0, result.output
    assert not (run_dir / "kafka-data").exists() and "broker_data" not in summary
    assert "brokers' logs kept" not in result.output


def test_a_failed_run_keeps_them_and_says_where_and_why(tmp_path, monkeypatch):
    result, run_dir, summary = run(tmp_path, monkeypatch, 3)
    assert result.exit_code == 1, result.output
    assert (run_dir / "kafka-data" / "node-0" / "kc-a-0" / "00000000000000000000.log").is_file()
    assert summary["broker_data"] == {"path": str(run_dir / "kafka-data"), "why": "the verdict is fail", "bytes": 1000}
    text = " ".join(result.output.split())
    assert f"brokers' logs kept (the verdict is fail, 0.0 MiB): {run_dir / 'kafka-data'}" in text
    assert f"kafka-chaos evidence {run_dir} --partition P --offsets A-B" in text


def test_keep_data_keeps_them_whatever_the_verdict(tmp_path, monkeypatch):
    result, run_dir, summary = run(tmp_path, monkeypatch, 0, "--keep-data")
    assert result.exit_code == 0, result.output
    assert (run_dir / "kafka-data").is_dir() and summary["broker_data"]["why"] == "--keep-data"
    _, run_dir, summary = run(tmp_path / "again", monkeypatch, 2, "--keep-data")
    assert summary["broker_data"]["why"] == "the verdict is fail and --keep-data"


def test_a_series_cluster_is_told_to_keep_them_by_a_failed_run_and_left_alone_by_a_passed_one(tmp_path, monkeypatch):
    from harness.runfolder import RunFolder
    from harness.spec import load_spec

    sent = {"sent": 10, "acked": 10, "rejected": 0, "unknown": 0}
    monkeypatch.setattr(run_mod.Run, "_run_variant",
                        lambda self, v: self.produced.setdefault(v.name, {"topic": "kc-a", **sent}))
    exp = tmp_path / "exp.yaml"
    exp.write_text("name: keep\nworkload: {messages: 10, rate: 100}\nvariants: [{name: a}]\n")
    spec = load_spec(exp)
    shared = _KafkaStandIn(tmp_path / "series" / "cluster-abc123")
    shared.up()
    for lost, kept in ((0, False), (4, True)):
        monkeypatch.setattr(run_mod, "analyze_folder", lambda spark, folder, names, lost=lost, **k: {
            n: {**{key: 0 for key in KEYS}, **sent, "lost": lost} for n in names})
        folder = RunFolder.create(tmp_path / "reports", "keep")
        summary = run_mod.Run(spec, folder, 1, spark=_Spark(), cluster=shared).execute()
        assert shared.keep_data is kept and shared.data_folder.is_dir()  # the series stops it; never removed here
        assert ("broker_data" in summary) is kept
    assert summary["broker_data"]["path"] == str(shared.data_folder.resolve())


def test_a_failed_run_names_the_evidence_command_at_its_first_affected_offset(tmp_path, monkeypatch):
    import pyarrow as pa

    from harness.analysis.anomalies import TABLES

    real = run_mod.Run._write_summary

    def with_tables(self, status, reason):  # what the analysis would have written: two lost values
        schema = pa.schema(TABLES["lost"])
        self.folder.write_tables("a", {"lost": pa.Table.from_pylist(
            [{"partition": 0, "value": 9, "offset": 341}, {"partition": 0, "value": 8, "offset": 340}], schema)})
        return real(self, status, reason)

    monkeypatch.setattr(run_mod.Run, "_write_summary", with_tables)
    result, run_dir, _ = run(tmp_path, monkeypatch, 2)
    assert result.exit_code == 1, result.output
    assert (f"a: first lost at partition 0 offset 340: kafka-chaos evidence {run_dir} --variant a --partition 0 "
            "--offsets 338-342") in " ".join(result.output.split())
