"""The Spark start's priority (engine/session.py): the JVM is started niced so that it yields to the first
variant's workload, then every thread of it and of the processes below it (the Python workers it forked) is
set back. The walk is tested on a process tree of our own, raising the nice value (allowed to anyone)."""

import os
import subprocess
import sys
import threading

from harness.engine.session import _descendants, _set_priority

TREE = ("import subprocess, sys, threading, time\n"
        "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "print(kid.pid, flush=True)\n"
        "time.sleep(60)\n")


def _nices(pid: int) -> set[int]:
    return {os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir(f"/proc/{pid}/task")}


def test_every_thread_of_a_process_and_its_descendants_gets_the_priority():
    top = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    grandchild = None
    try:
        grandchild = int(top.stdout.readline())
        assert _descendants(top.pid) == [grandchild]
        assert len(os.listdir(f"/proc/{top.pid}/task")) >= 2  # a second thread, which must be reached too
        before = _nices(top.pid) | _nices(grandchild)
        target = max(before) + 3
        _set_priority([top.pid, *_descendants(top.pid)], target)
        assert _nices(top.pid) == {target} and _nices(grandchild) == {target}
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != target or before == {target}  # ours untouched
    finally:
        for pid in [grandchild] if grandchild else []:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        top.kill()
        top.wait()


def test_a_process_gone_meanwhile_is_skipped():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _set_priority([gone.pid], 5)  # no error: it is not there any more
    assert _descendants(gone.pid) == []
