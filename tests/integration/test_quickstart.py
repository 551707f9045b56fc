"""End to end through the CLI: own Tansu broker and proxy, real faults, Spark analysis."""

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import psutil
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = [
    {"name": "idempotence-off", "producer": {"enable.idempotence": False}},
    # Tansu answers a deduplicated retry with base offset -1 (experiments/quickstart.yaml says more).
    {"name": "idempotence-on", "producer": {"enable.idempotence": True}, "allow": ["base_offset_minus_one"]},
]
SMALL = {
    "name": "small-quickstart",
    "seed": 11,
    "topic": {"partitions": 3},
    "workload": {"messages": 20000, "rate": 8000},
    "producer": {"acks": "all", "retries": 10000000, "linger.ms": 5},
    "variants": VARIANTS,
    "faults": [
        {"kind": "lost-acks", "every": 0.4, "jitter": 0.1, "duration": 0.25, "start": 0.3},
        {"kind": "reset-connections", "at": 1.3},
    ],
    "expectations": {"idempotence-on": {"duplicates": 0, "jump_back_runs": 0, "lost": 0}},
}
CONTROL = {  # no faults, nothing allowed: every anomaly must be 0
    **SMALL,
    "name": "control",
    "variants": [{k: x for k, x in v.items() if k != "allow"} for v in VARIANTS],
    "faults": [],
    "expectations": {v["name"]: {"duplicates": 0, "jump_back_runs": 0, "missing": 0, "unseen": 0,
                                 "nonmonotonic_sends": 0} for v in VARIANTS},
}


def run_dirs(out: Path):
    """Run folders in an --out folder (which also holds index.html, the list of runs)."""
    return (p for p in sorted(out.iterdir()) if p.is_dir())


def kafka_chaos(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=300)


def run_experiment(tmp_path, doc, out_name="reports"):
    exp = tmp_path / f"{doc['name']}.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = tmp_path / out_name
    result = kafka_chaos("run", str(exp), "--out", str(out))
    runs = list(run_dirs(out))
    assert (out / "index.html").exists()  # the folder's list of runs
    assert len(runs) == 1, result.stdout + result.stderr
    return result, runs[0], json.loads((runs[0] / "summary.json").read_text())


def java_said(stderr: str) -> list[str]:
    """Lines of the JVM's own on a terminal: a JDK warning (`WARNING: Using incubator modules`), a stack."""
    return [line for line in stderr.splitlines() if line.startswith(("WARNING: ", "\tat ", "Exception in thread"))]


def processes_of(run_dir: Path):
    """Processes started by the run: they inherit KAFKA_CHAOS_RUN=<run dir>."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.environ().get("KAFKA_CHAOS_RUN") == str(run_dir.resolve()):
                found.append(p.info["cmdline"])
        except psutil.Error:
            pass
    return found


def accounting(v):
    return v["sent"] == v["acked"] + v["rejected"] + v["unknown"]


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    return run_experiment(tmp_path_factory.mktemp("faulty"), SMALL)


def test_idempotence_off_duplicates_on_does_not(faulty_run):
    result, run_dir, summary = faulty_run
    assert result.returncode == 0, result.stdout + result.stderr
    off, on = summary["variants"]["idempotence-off"], summary["variants"]["idempotence-on"]
    assert off["duplicates"] > 0 and off["jump_back_runs"] >= 1
    assert (on["duplicates"], on["jump_back_runs"], on["lost"]) == (0, 0, 0)
    for v in (off, on):
        assert accounting(v) and v["sent"] == 20000
        assert v["unexpected"] == 0
    assert "idempotence-off" in result.stdout and "report:" in result.stdout
    faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    applied = [f for f in faults if f["outcome"] == "healed"]
    assert {f["variant"] for f in applied} == {"idempotence-off", "idempotence-on"}
    assert all(f["applied_at"] and f["healed_at"] for f in applied)
    html = (run_dir / "index.html").read_text()
    assert f">{off['duplicates']:,}<" in html and "lost-acks" in html
    assert java_said(result.stderr) == [] and (run_dir / "logs" / "spark.log").exists()  # the JVM's output: its log


def test_the_summary_says_where_the_run_s_time_went(faulty_run):
    _, _, summary = faulty_run
    seconds = summary["seconds"]
    stages = {"cluster up", "analysis", "analysing", "cluster down"} | {  # every variant analysed in one Spark job
        f"{v}: {stage}" for v in ("idempotence-off", "idempotence-on")
        for stage in ("setting up", "producing", "healing", "reading back")}
    assert stages <= set(seconds) and all(s >= 0 for s in seconds.values()), seconds
    # producing is the workload (the producer's own clock), give or take the faults' last heal
    for v in ("idempotence-off", "idempotence-on"):
        assert seconds[f"{v}: producing"] >= summary["variants"][v]["produce_seconds"] - 0.5, (seconds, v)
    wall = (datetime.fromisoformat(summary["ended_at"]) - datetime.fromisoformat(summary["started_at"])).total_seconds()
    assert sum(seconds.values()) <= wall + 2, (seconds, wall)  # started_at and ended_at are to the second


def test_run_leaves_no_process_behind(faulty_run):
    _, run_dir, _ = faulty_run
    assert processes_of(run_dir) == []


def test_analyze_reproduces_the_summary_from_parquet_alone(faulty_run, tmp_path):
    from harness.analysis.metrics import KEYS

    _, run_dir, summary = faulty_run
    bare = tmp_path / "bare"
    for variant in summary["variants"]:
        (bare / variant).mkdir(parents=True)
        shutil.copy(run_dir / variant / "acks.parquet", bare / variant / "acks.parquet")
        shutil.copytree(run_dir / variant / "log.parquet", bare / variant / "log.parquet")
    result = kafka_chaos("analyze", str(bare))
    assert result.returncode == 2 and "spec.yaml is missing" in result.stderr, result.stdout + result.stderr
    assert not (bare / "summary.json").exists()  # nothing rewritten on a refusal
    shutil.copy(run_dir / "spec.yaml", bare / "spec.yaml")
    result = kafka_chaos("analyze", str(bare))
    assert result.returncode == 0, result.stdout + result.stderr
    assert java_said(result.stderr) == [] and (bare / "logs" / "spark.log").exists()
    again = json.loads((bare / "summary.json").read_text())
    for name, v in summary["variants"].items():
        assert {k: again["variants"][name][k] for k in KEYS} == {k: v[k] for k in KEYS}
        assert again["variants"][name]["expectations"] == v["expectations"]
    assert (bare / "index.html").exists()


def test_no_fault_control_is_clean(tmp_path):
    # An output folder Spark would read as a glob, to show every path is used literally.
    result, _, summary = run_experiment(tmp_path, CONTROL, out_name="reports[1]{a}*?")
    assert result.returncode == 0, result.stdout + result.stderr
    for name, v in summary["variants"].items():
        from harness.analysis.metrics import METRICS

        assert all(v[m.key] == 0 for m in METRICS if m.anomaly or m.key in ("missing", "reorders")), (name, v)
        assert v["received"] == v["unique"] == v["acked"] == v["sent"] == 20000


def test_bad_experiment_exits_2_and_starts_nothing(tmp_path):
    exp = tmp_path / "bad.yaml"
    exp.write_text(yaml.safe_dump({**SMALL, "workload": {"messages": -5}}))
    result = kafka_chaos("run", str(exp), "--out", str(tmp_path / "reports"))
    assert result.returncode == 2
    assert "workload.messages" in result.stderr
    assert not (tmp_path / "reports").exists()


ACTUAL = {"applied_at", "applied_offset", "healed_at", "healed_offset", "outcome", "brokers", "error",
          "late_s", "held_s", "heal_s", "deviation"}  # what happened, as opposed to what was planned


def planned(path: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in ACTUAL} for line in path.read_text().splitlines()]


def test_replay_applies_the_recorded_schedule_again(faulty_run, tmp_path):
    _, run_dir, _ = faulty_run
    doc = {**SMALL, "seed": 999}  # another seed: only the replayed file can give the same faults
    exp = tmp_path / "replay.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = tmp_path / "reports"
    r = kafka_chaos("run", str(exp), "--out", str(out), "--replay", str(run_dir / "faults.jsonl"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "replayed from" in r.stdout
    again = next(run_dirs(out)) / "faults.jsonl"
    assert planned(again) == planned(run_dir / "faults.jsonl")


BROKER_PAUSE = {
    **SMALL,
    "name": "small-broker-pause",
    "workload": {"messages": 30000, "rate": 8000},
    "producer": {**SMALL["producer"], "request.timeout.ms": 600, "socket.timeout.ms": 600},
    "faults": [{"kind": "broker-pause", "every": 1.5, "start": 0.5, "duration": 0.9, "target": {"leader-of": 0}}],
}


def test_broker_pause_leaves_idempotent_variant_clean(tmp_path):
    result, run_dir, summary = run_experiment(tmp_path, BROKER_PAUSE)
    assert result.returncode == 0, result.stdout + result.stderr
    on = summary["variants"]["idempotence-on"]
    assert (on["duplicates"], on["lost"]) == (0, 0) and accounting(on)
    faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    assert any(f["outcome"] == "healed" and f["brokers"] == [0] for f in faults)
    assert processes_of(run_dir) == []


def test_spark_submit_job_reproduces_the_cli_summary_byte_for_byte(faulty_run, tmp_path):
    _, run_dir, _ = faulty_run
    spark_submit = Path(sys.executable).parent / "spark-submit"
    if not spark_submit.exists():
        pytest.skip(f"pyspark's spark-submit is not next to {sys.executable}")
    by_cli, by_submit = tmp_path / "cli", tmp_path / "submit"
    shutil.copytree(run_dir, by_cli)
    shutil.copytree(run_dir, by_submit)
    r = kafka_chaos("analyze", str(by_cli))
    assert r.returncode == 0, r.stdout + r.stderr
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    r = subprocess.run([str(spark_submit), "--master", "local[2]", str(ROOT / "harness/job.py"),
                        "--run", str(by_submit)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    cli_bytes = (by_cli / "summary.json").read_bytes()
    assert (by_submit / "summary.json").read_bytes() == cli_bytes
    assert json.loads(r.stdout[r.stdout.index("{"):]) == json.loads(cli_bytes)
    for name in ("jump_back_runs", "duplicates", "lost", "gaps", "series", "partitions"):
        assert (by_submit / "idempotence-off" / "anomalies" / f"{name}.parquet").exists()
