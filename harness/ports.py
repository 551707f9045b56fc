"""Free loopback ports for brokers and proxies, reserved across every kafka-chaos process on the machine.

A port is found free by binding it, then handed to a process (a JVM) that binds it seconds later, and binds it
again after every restart. Two harness processes at once (CI's two test workers, two runs) could hand out the
same port in that window: CI saw one run's broker fail to bind a port given to another run's proxy, and a client
of the second run reach the first run's cluster. So each port handed out is written to a machine-wide table,
under a file lock, with its owner's pid and start time; no other process hands it out while that owner lives.
Entries of ended processes are dropped at the next allocation: nothing needs cleaning up.

Ports come from below the kernel's ephemeral range, so no outgoing connection takes one before its process
binds it. (portpicker reserves ports across processes only through its separate portserver daemon.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import tempfile
import threading
from pathlib import Path

FLOOR = 10000
TABLE = Path(tempfile.gettempdir()) / "kafka-chaos-ports"  # lines "port pid start"; its lock is the file itself

_lock = threading.Lock()
_cursor = [0]  # this process's next candidate: a random start, then upwards


def ephemeral_low() -> int:
    """Where the kernel's range for outgoing connections' local ports starts."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152  # the IANA range, used outside Linux


def _start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), None when it does not exist: with the pid, it names one
    process even after its pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        if not Path("/proc/self/stat").exists():  # no /proc: only whether the pid exists
            with contextlib.suppress(OSError):
                os.kill(pid, 0)
                return "?"
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22; the name before ")" may hold spaces


def _live_reservations(text: str) -> dict[int, str]:
    """port → its owner line, for owners that still run."""
    live: dict[int, str] = {}
    for line in text.splitlines():
        try:
            port, pid, start = line.split()
            if _start_time(int(pid)) in (start, "?"):
                live[int(port)] = line
        except ValueError:
            continue  # a damaged line reserves nothing
    return live


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port that nothing binds now and no other live kafka-chaos process was given, reserved for this process."""
    low = ephemeral_low()
    me = f"{os.getpid()} {_start_time(os.getpid())}"
    with _lock, _table() as table:
        taken = _live_reservations(table.read()) if table else {}
        if not _cursor[0]:
            _cursor[0] = random.randrange(FLOOR, low)
        for _ in range(low - FLOOR):
            port = _cursor[0]
            _cursor[0] = port + 1 if port + 1 < low else FLOOR
            if port not in taken and _bindable(host, port):
                if table:
                    table.seek(0)
                    table.truncate()
                    table.write("".join(f"{line}\n" for line in [*taken.values(), f"{port} {me}"]))
                return port
    raise OSError(f"no free port on {host} between {FLOOR} and {low}")


@contextlib.contextmanager
def _table():
    """The reservation table, locked against every other process; None when it cannot be opened (another user's
    file, a read-only /tmp): then ports are only checked free, as before there was a table."""
    try:
        fd = os.open(TABLE, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield None
        return
    with open(fd, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        yield f
