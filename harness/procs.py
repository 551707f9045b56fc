"""Child processes tied to the harness: they die with it, and stop cleanly when asked.

On Linux each child gets PR_SET_PDEATHSIG=SIGKILL, so even `kill -9` of the harness
leaves no broker or proxy running: it is started through launch.py, a tiny launcher that
sets the signal, checks the harness is still its parent, then execs the command (no
`preexec_fn`, which can deadlock a threaded process). Each child also gets its own session
so a terminal's Ctrl-C reaches only the harness, which then stops its children in order.

The kernel sends that signal when the *thread* that forked the child ends, not the
process; so every child is forked from one spawner thread that lives as long as the
harness (a broker restarted by a nemesis thread would otherwise die with it).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

LAUNCHER = str(Path(__file__).with_name("launch.py"))
_spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spawner")


def spawn(cmd: list[str], log_path: Path, env: dict | None = None, talk: bool = False,
          tell: bool = False) -> subprocess.Popen:
    """Start cmd (through the launcher: same pid, tied to the harness) with stdout+stderr appended to log_path;
    talk: stdin and stdout are pipes to the harness instead (text, line-buffered), stderr goes to log_path;
    tell: stdout is a pipe to the harness (bytes, read as they come) and stdin one from it (bytes, unbuffered: the
    answers a Java member asks for, workload/memberlines.py), stderr goes to log_path."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    path = (env or os.environ).get("PATH")
    if shutil.which(cmd[0], path=path) is None:  # as Popen would say, rather than a launcher exiting 1
        raise FileNotFoundError(f"{cmd[0]}: no such executable")
    launch = [sys.executable, "-S", "-I", LAUNCHER, str(os.getpid()), "--", *cmd]

    def start() -> subprocess.Popen:
        with open(log_path, "ab") as log:
            if talk:
                return subprocess.Popen(launch, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.PIPE,
                                        env=env, start_new_session=True, text=True, bufsize=1)
            if tell:
                return subprocess.Popen(launch, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.PIPE,
                                        env=env, start_new_session=True, bufsize=0)
            return subprocess.Popen(launch, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True)

    proc = _spawner.submit(start).result()
    if talk or tell:
        _roomy(proc.stdout)
    return proc


PIPE_ROOM = 1 << 20


def _roomy(pipe) -> None:
    """A child's stdout pipe holds PIPE_ROOM bytes (Linux's default limit; 64 KiB otherwise), so a child that
    reports every send (a Java producer: ~800,000 a second, ~6 bytes each: 64 KiB is 10 ms of them) does not
    block in write() while its reader waits for a core. (Its effect on bench/clients.py was within that bench's
    noise: the 15-round median stayed 0.75.)"""
    try:
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_ROOM)
    except (OSError, AttributeError):  # another OS, or a lower limit (fs.pipe-max-size): the default stays
        pass


class ProbeTimeout(Exception):
    """A probe that did not end in time (its process group was killed)."""


def probe(cmd: list[str], timeout: float = 5.0) -> tuple[int, str]:
    """Run a short command that only answers (`java -version`): (its exit status, stdout and stderr as text,
    bytes that are not UTF-8 replaced). It runs in a session of its own, so when it has not ended within
    `timeout` seconds its whole process group is killed (a wrapper script's children too) and ProbeTimeout
    is raised; OSError when it cannot be started (not executable, not a program)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        proc.stdout.close()  # a child that left the group may still hold the pipe: not read any further
        raise ProbeTimeout(f"{cmd[0]} {' '.join(cmd[1:])} did not answer within {timeout:g} s") from None
    return proc.returncode, out.decode("utf-8", errors="replace")


def stop(proc: subprocess.Popen | None, timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after timeout; also resumes a SIGSTOPped process first."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
    except ProcessLookupError:
        return
    reap(proc, timeout)


def reap(proc: subprocess.Popen, timeout: float) -> None:
    """After its SIGTERM: wait up to timeout for its exit, then SIGKILL. Never a second SIGTERM: one arriving while
    a process exits (a Python one's handlers are reset as it finalizes) would kill it by that signal instead."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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


@contextlib.contextmanager
def tagged(folder: Path):
    """tag_run(folder) for what starts inside the block (a kept cluster's processes), then the tag before it."""
    before = os.environ.get(RUN_ENV)
    tag_run(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(RUN_ENV, None)
        else:
            os.environ[RUN_ENV] = before
