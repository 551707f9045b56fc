"""A hostile user's run, end to end: secrets never reach the run folder, and a Ctrl-C while the report
renders leaves a summary that says so and a folder `kafka-chaos report` renders afterwards."""

import json
import signal
import subprocess
import sys
import textwrap

import yaml

from tests.integration.test_interrupts import wait_for
from tests.integration.test_quickstart import ROOT, kafka_chaos, processes_of, run_dirs

SECRET = "LITERAL-SECRET"
TINY = {
    "name": "tiny",
    "topic": {"partitions": 2},
    "workload": {"messages": 2000, "rate": 4000},
    "producer": {"acks": "all", "linger.ms": 5},
    "variants": [{"name": "a"}, {"name": "b", "producer": {"enable.idempotence": True}}],
}


def test_a_secret_in_a_matrix_or_a_selector_reaches_no_name_no_file_and_not_the_terminal(tmp_path):
    doc = {**TINY, "variants": [], "matrix": {"sasl.password": [f"{SECRET}-1", f"{SECRET}-2"]},
           "allow": {f"sasl.password={SECRET}-1": ["lost"]},
           "expectations": {f"sasl.password={SECRET}-2": {"duplicates": ">= 0"}}}
    exp = tmp_path / "secret.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out, junit = tmp_path / "reports", tmp_path / "junit.xml"
    result = kafka_chaos("run", str(exp), "--out", str(out), "--junit", str(junit))
    assert result.returncode == 0, result.stdout + result.stderr
    assert SECRET not in result.stdout + result.stderr  # the terminal
    run_dir = next(run_dirs(out))
    found = [str(p) for p in [*out.rglob("*"), junit] if SECRET.encode() in p.name.encode() + (
        p.read_bytes() if p.is_file() else b"")]
    assert found == []  # no file holds it, no file or folder is named after it
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text())
    assert [v["name"] for v in spec["variants"]] == ["sasl-password-1", "sasl-password-2"]
    # Selectors by a secret's value are kept as the variants they selected, by name.
    assert spec.get("allow", {}) == {} and spec["variants"][0]["allow"] == ["lost"] and spec["variants"][1]["allow"] == []
    assert list(spec["expectations"]) == ["sasl-password-2"]
    before = json.loads((run_dir / "summary.json").read_text())["variants"]
    assert kafka_chaos("analyze", str(run_dir)).returncode == 0  # the folder it wrote is analysable, the same
    after = json.loads((run_dir / "summary.json").read_text())["variants"]
    assert {n: (v["allowed"], v["expectations"]) for n, v in after.items()} == {
        n: (v["allowed"], v["expectations"]) for n, v in before.items()}


def test_a_literal_secret_is_written_nowhere_in_the_run_folder(tmp_path):
    # librdkafka accepts SASL and SSL secrets on a PLAINTEXT connection and ignores them.
    doc = {**TINY, "producer": {**TINY["producer"], "sasl.password": SECRET, "ssl.key.password": SECRET},
           "variants": [{"name": "a", "producer": {"sasl.password": SECRET}},
                        {"name": "b", "producer": {"enable.idempotence": True, "sasl.oauthbearer.client.secret": SECRET}}],
           "cluster": {"client": {"sasl.password": SECRET}}}
    exp = tmp_path / "secret.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out, junit = tmp_path / "reports", tmp_path / "junit.xml"
    result = kafka_chaos("run", str(exp), "--out", str(out), "--junit", str(junit))
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = next(run_dirs(out))
    assert list((run_dir / "logs").glob("producer-*.log"))  # librdkafka's own logs are among the files searched
    found = [str(p) for p in [*out.rglob("*"), junit] if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert found == []  # grep -r LITERAL-SECRET finds nothing
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text())
    assert spec["producer"]["sasl.password"] == spec["variants"][0]["producer"]["sasl.password"] == "***"
    assert spec["cluster"]["client"]["sasl.password"] == "***"
    assert "***" in (run_dir / "index.html").read_text()  # the settings table shows the secret masked


SLOW_RENDERING = textwrap.dedent('''
    """kafka-chaos with a report that takes a minute to render, and says when it starts."""
    import sys
    import time
    from pathlib import Path

    import harness.report

    marker = Path(sys.argv.pop(1))


    def slow_write_report(folder):
        marker.write_text(str(folder.path))
        time.sleep(60)
        raise AssertionError("the Ctrl-C did not stop the rendering")


    harness.report.write_report = slow_write_report
    from harness.cli import main

    main(prog_name="kafka-chaos")
''')


def test_sigint_during_report_rendering_marks_the_run_interrupted(tmp_path):
    wrapper, marker = tmp_path / "slow_report.py", tmp_path / "rendering"
    wrapper.write_text(SLOW_RENDERING)
    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, str(wrapper), str(marker), "run", str(exp), "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(marker.exists, timeout=240, what="the report to start rendering")
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    run_dir = next(run_dirs(out))
    assert proc.returncode == 130, output[-3000:]
    assert "interrupted while rendering the report" in output and "Traceback" not in output, output[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == summary["verdict"] == "interrupted", summary
    assert summary["variants"]["a"]["verdict"] == summary["variants"]["b"]["verdict"] == "pass"
    assert not (run_dir / "index.html").exists()  # the rendering was stopped, not finished
    result = kafka_chaos("report", str(run_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "interrupted" in (run_dir / "index.html").read_text().lower()
    assert processes_of(run_dir) == []
