"""Child processes tied to the harness: they die with it, and stop cleanly when asked.

On Linux each child gets PR_SET_PDEATHSIG=SIGKILL, so even `kill -9` of the harness
leaves no broker or proxy running; it also gets its own session so a terminal's
Ctrl-C reaches only the harness, which then stops its children in order.

The kernel sends that signal when the *thread* that forked the child ends, not the
process; so every child is forked from one spawner thread that lives as long as the
harness (a broker restarted by the nemesis thread would otherwise die with it).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spawner")


def spawn(cmd: list[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
    """Start cmd with stdout+stderr appended to log_path."""
    log_path.parent.mkdir(parents=True, exist_ok=True)

    def start() -> subprocess.Popen:
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True, preexec_fn=_die_with_parent,
            )

    return _spawner.submit(start).result()


def stop(proc: subprocess.Popen | None, timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after timeout; also resumes a SIGSTOPped process first."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except ProcessLookupError:
        pass


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the kernel picks it; races are retried by callers)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with code {proc.returncode} before listening on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout:.0f}s")


RUN_ENV = "KAFKA_CHAOS_RUN"


def tag_run(folder: Path) -> None:
    """Every process started from now on (brokers, proxy, Spark's JVM and workers) inherits
    KAFKA_CHAOS_RUN=<run folder>, so a test or a user can find what a run left behind."""
    os.environ[RUN_ENV] = str(Path(folder).resolve())
