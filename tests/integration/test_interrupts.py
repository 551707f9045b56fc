"""Interrupts and crashes: the run stops, keeps what it recorded, and leaves no process behind."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

from harness import signals
from tests.integration.test_quickstart import ROOT, SMALL, processes_of, run_dirs

EXPERIMENT = {
    "name": "interruptible",
    "topic": {"partitions": 3},
    "workload": {"messages": 40000, "rate": 5000},
    "producer": {"acks": "all", "linger.ms": 5},
    "variants": [{"name": "a", "producer": {"enable.idempotence": False}},
                 {"name": "b", "producer": {"enable.idempotence": True}}],
    "faults": [{"kind": "lost-acks", "every": 1.0, "duration": 0.3}],
}


def delivering(doc=EXPERIMENT):
    """The experiment with librdkafka's `debug: msg` on: its log then says when a batch was delivered."""
    return {**doc, "producer": {**doc["producer"], "debug": "msg"}}


def wait_until_delivered(run_dir: Path, variant: str) -> None:
    """Until the variant's producer (run with `delivering`) had a batch delivered: the state a test needs before
    it interrupts a workload that must have recorded something (a fixed sleep would guess at it)."""
    log = run_dir / "logs" / f"producer-{variant}.log"
    wait_for(lambda: log.exists() and ") delivered" in log.read_text(), what=f"a batch of {variant} delivered")


class Output:
    """A running harness's output, read as it comes (its stdout, with stderr on it): what a test waits on to
    learn that a signal was heard."""

    def __init__(self, proc):
        self.proc, self.lines = proc, []
        self._reader = threading.Thread(target=lambda: self.lines.extend(iter(proc.stdout.readline, "")),
                                        daemon=True)
        self._reader.start()

    def says(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def wait_for(self, text: str) -> None:
        wait_for(lambda: self.says(text), what=f"the harness to say {text!r}")

    def finish(self, timeout=120) -> str:
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=30)
        return "".join(self.lines)


def start(tmp_path, doc=EXPERIMENT):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, out


def wait_for(condition, timeout=120, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def run_dir_of(out: Path):
    return wait_for(lambda: next(run_dirs(out), None) if out.exists() else None, what="the run folder")


def tansu_of(run_dir):
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if p.environ().get("KAFKA_CHAOS_RUN") == str(run_dir.resolve()) and "tansu" in " ".join(p.info["cmdline"]):
                return p
        except psutil.Error:
            pass
    return None


def assert_clean_stop(proc, run_dir, code, status="interrupted"):
    out, _ = proc.communicate(timeout=120)
    return assert_stopped(proc.returncode, out, run_dir, code, status)


def assert_stopped(returncode, out, run_dir, code, status="interrupted"):
    assert returncode == code, out[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == status, summary
    wait_for(lambda: processes_of(run_dir) == [], timeout=60, what="every process of the run to exit")
    return summary


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_workload(tmp_path, sig, code):
    proc, out = start(tmp_path, delivering())
    run_dir = run_dir_of(out)
    wait_until_delivered(run_dir, "a")
    proc.send_signal(sig)
    summary = assert_clean_stop(proc, run_dir, code)
    a = summary["variants"]["a"]
    assert 0 < a["sent"] < 40000 and a["sent"] == a["acked"] + a["rejected"] + a["unknown"]
    assert (run_dir / "a" / "acks.parquet").exists() and (run_dir / "faults.jsonl").exists()


def test_sigint_during_startup(tmp_path):
    proc, out = start(tmp_path)
    run_dir = run_dir_of(out)
    wait_for(lambda: tansu_of(run_dir), what="the broker to start")
    proc.send_signal(signal.SIGINT)
    assert_clean_stop(proc, run_dir, 130)


def test_sigint_during_analysis(tmp_path):
    doc = {**EXPERIMENT, "workload": {"messages": 6000, "rate": 6000}, "faults": []}
    proc, out = start(tmp_path, doc)
    run_dir = run_dir_of(out)
    wait_for(lambda: (run_dir / "b" / "log.parquet" / "_SUCCESS").exists(), what="the final read of the last variant")
    proc.send_signal(signal.SIGINT)
    assert_clean_stop(proc, run_dir, 130)


def test_kill_9_of_the_harness_leaves_no_orphan(tmp_path):
    proc, out = start(tmp_path, delivering())
    run_dir = run_dir_of(out)
    wait_until_delivered(run_dir, "a")
    assert processes_of(run_dir)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    # nothing kills an orphan later: one still there after a minute would be there for good
    wait_for(lambda: processes_of(run_dir) == [], timeout=60, what="no orphan after kill -9")


def test_broker_dying_outside_the_schedule_is_an_error(tmp_path):
    proc, out = start(tmp_path, delivering())
    run_dir = run_dir_of(out)
    wait_until_delivered(run_dir, "a")
    wait_for(lambda: tansu_of(run_dir), what="the broker").kill()
    summary = assert_clean_stop(proc, run_dir, 3, status="error")
    assert "broker 0 died outside the fault schedule" in summary["reason"]


def test_two_runs_at_once_do_not_collide(tmp_path):
    doc = {**SMALL, "workload": {"messages": 8000, "rate": 5000}}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    runs = [start(tmp_path / "one", doc), start(tmp_path / "two", doc)]
    for proc, out in runs:
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, output[-3000:]
        run_dir = next(run_dirs(out))
        s = json.loads((run_dir / "summary.json").read_text())
        off, on = s["variants"]["idempotence-off"], s["variants"]["idempotence-on"]
        assert s["status"] == "complete"
        assert (on["duplicates"], on["lost"], on["unexpected"]) == (0, 0, 0)
        assert on["received"] == on["sent"] == 8000
        # Whether a lost ack catches a request in flight depends on timing (two runs share 2 cores),
        # so the off variant's count varies; it must still add up, with nothing lost or foreign.
        assert off["received"] == off["unique"] + off["duplicates"] and off["unique"] == 8000
        assert (off["lost"], off["unexpected"]) == (0, 0)
        faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
        assert faults and all(f["outcome"] in ("healed", "not-reached") for f in faults)
        assert processes_of(run_dir) == []


def test_second_sigint_does_not_cut_clean_up_short_and_a_third_quits(tmp_path):
    # Each signal is sent once the harness said it heard the one before (signals sent back to back may reach
    # its handler as one), so the second and third are really the second and third.
    proc, out = start(tmp_path, delivering())
    output, run_dir = Output(proc), run_dir_of(out)
    wait_until_delivered(run_dir, "a")
    proc.send_signal(signal.SIGINT)
    output.wait_for(signals.FIRST)
    proc.send_signal(signal.SIGINT)
    text = output.finish()
    summary = assert_stopped(proc.returncode, text, run_dir, 130)
    assert signals.SECOND in text and summary["variants"]["a"]["sent"] > 0

    (tmp_path / "again").mkdir()
    proc, out = start(tmp_path / "again")
    output, run_dir = Output(proc), run_dir_of(out)
    wait_for(lambda: (run_dir / "a").exists(), what="the first variant to start")
    for said in (signals.FIRST, signals.SECOND):
        proc.send_signal(signal.SIGINT)
        output.wait_for(said)
    proc.send_signal(signal.SIGINT)
    text = output.finish(timeout=30)
    assert proc.returncode == 130, text[-2000:]
    wait_for(lambda: processes_of(run_dir) == [], timeout=60, what="the brokers and proxy to die with the harness")
