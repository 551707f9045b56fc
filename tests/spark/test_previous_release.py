"""A run folder written by the previous release (no error/sent_at/latency_ms columns, Spark-written
anomaly folders, max_jump_back one higher) is analysed by this one."""

import shutil
from pathlib import Path

from harness.analysis import metrics
from harness.preflight import stored_spec
from harness.report import write_report
from harness.run import reanalyze
from harness.runfolder import RunFolder

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "previous-release-run"


def test_previous_release_folder_is_analysed(spark, tmp_path):
    folder = RunFolder(shutil.copytree(FIXTURE, tmp_path / FIXTURE.name))
    old = folder.read_summary()
    new = reanalyze(folder, stored_spec(folder, partial=False), spark=spark)
    for name, before in old["variants"].items():
        after = new["variants"][name]
        assert set(metrics.KEYS) <= set(after)
        for key in ("sent", "acked", "rejected", "unknown", "received", "unique", "duplicates", "jump_back_runs",
                    "missing", "received_unacked", "reorders"):
            assert after[key] == before[key], (name, key)
        assert after["lost"] + after["unseen"] == before["lost"]
        assert after["max_jump_back"] == max(0, before["max_jump_back"] - 1)  # the article's size now
        assert after["produce_seconds"] == before["produce_seconds"]
    assert old["variants"]["idempotence-off"]["duplicates"] > 0
    assert new["verdict"] == "pass" and new["seed"] == old["seed"]
    assert folder.read_table("idempotence-off", "inconsistent_offsets") is not None  # new tables written
    assert "PASS" in write_report(folder).read_text()


def test_reanalysis_keeps_every_fact_the_run_recorded(spark, tmp_path):
    """What only the run knew (which client ran, how long it produced, ...) survives `kafka-chaos analyze`: the
    last release's reanalysis dropped the variant's `client`."""
    folder = RunFolder(shutil.copytree(FIXTURE, tmp_path / FIXTURE.name))
    old = folder.read_summary()
    for entry in old["variants"].values():  # as a run of the last release records it
        entry["client"] = "confluent-kafka 2.16.1, librdkafka 2.16.0"
    folder.write_summary(old)
    new = reanalyze(folder, stored_spec(folder, partial=False), spark=spark)
    for name, before in old["variants"].items():
        assert set(before) <= set(new["variants"][name]), (name, set(before) - set(new["variants"][name]))
        assert new["variants"][name]["client"] == before["client"]
