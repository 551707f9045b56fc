"""Children are tied to the harness through the launcher (no preexec_fn): they die with it, even on kill -9."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from harness import procs

HARNESS = """
import sys, threading, time
from pathlib import Path
from harness import procs
def spawn():  # from a thread that ends at once: the child must outlive it (one spawner thread)
    print(procs.spawn(["sleep", "60"], Path(sys.argv[1])).pid, flush=True)
t = threading.Thread(target=spawn); t.start(); t.join()
time.sleep(60)
"""


def gone(pid: int, timeout: float = 60) -> bool:  # a deadlock guard: a gone child is seen at once
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_a_child_dies_with_a_kill_9_of_the_harness(tmp_path):
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(tmp_path / "child.log")],
                               stdout=subprocess.PIPE, text=True)
    try:
        child = int(harness.stdout.readline())
        proc = psutil.Process(child)
        deadline = time.monotonic() + 60  # a deadlock guard: the launcher execs at once
        while proc.cmdline() != ["sleep", "60"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.cmdline() == ["sleep", "60"]  # the launcher exec'd the command in its own place
        assert proc.ppid() == harness.pid
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    assert gone(child), "the child outlived kill -9 of the harness"


def test_the_launcher_refuses_when_its_parent_is_not_the_spawner(tmp_path):
    r = subprocess.run([sys.executable, procs.LAUNCHER, str(os.getpid() + 999999), "--", "true"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "is gone" in r.stderr


def test_a_missing_executable_is_said_in_the_parent(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such-broker"):
        procs.spawn(["no-such-broker"], tmp_path / "x.log")


def test_spawn_passes_env_and_log(tmp_path):
    p = procs.spawn(["sh", "-c", "echo $KC_PROBE"], tmp_path / "out.log", env={**os.environ, "KC_PROBE": "hello"})
    assert p.wait(10) == 0
    assert (tmp_path / "out.log").read_text() == "hello\n"
