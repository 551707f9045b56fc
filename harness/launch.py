"""Exec a command tied to the process that spawned it:  python -S -I launch.py PARENT_PID -- CMD...

procs.spawn starts every child through this file instead of running a `preexec_fn`: Python code
between fork and exec in a threaded process can deadlock. Here, in a fresh single-threaded
interpreter, the child asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG, kept across
exec), checks that the parent is still the one that spawned it (it may have died before the
prctl, and then no signal would ever come), and execs CMD in its own place (same pid).
It uses only the standard library and is run by path, so it starts in milliseconds.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: launch.py PARENT_PID -- CMD [ARGS...]")
    parent, cmd = int(argv[0]), argv[2:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            sys.exit(f"launch: prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}")
    if os.getppid() != parent:
        sys.exit(f"launch: parent {parent} is gone; not starting {cmd[0]}")
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        sys.exit(f"launch: cannot run {cmd[0]}: {e.strerror or e}")


if __name__ == "__main__":
    main(sys.argv[1:])
