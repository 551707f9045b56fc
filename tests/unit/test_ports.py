"""Ports handed out to brokers and proxies: free, below the ephemeral range, and never the same in two live
kafka-chaos processes (CI's two test workers once gave one port to two runs)."""

import socket
import subprocess
import sys

import pytest

from harness import ports


@pytest.fixture
def table(tmp_path, monkeypatch):
    path = tmp_path / "ports"
    monkeypatch.setattr(ports, "TABLE", path)
    return path


def test_free_ports_are_distinct_free_and_below_the_ephemeral_range(table):
    given = [ports.free_port() for _ in range(50)]
    assert len(set(given)) == 50
    assert all(ports.FLOOR <= p < ports.ephemeral_low() for p in given)  # never an outgoing connection's port
    for p in given[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def _reserve_in_child(table, n: int, then: str = "") -> subprocess.Popen:
    """A second process that reserves n ports (printing them) and then stays alive until its stdin closes."""
    code = (f"import sys, pathlib; from harness import ports; ports.TABLE = pathlib.Path({str(table)!r}); "
            f"print(*[ports.free_port() for _ in range({n})], flush=True); {then}sys.stdin.read()")
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_a_port_given_to_a_live_process_is_not_given_to_another_even_on_the_same_cursor(table, monkeypatch):
    child = _reserve_in_child(table, 20)
    try:
        theirs = [int(p) for p in child.stdout.readline().split()]
        # this process walks the very ports the other was given (and has not bound: a JVM binds them later)
        monkeypatch.setattr(ports, "_cursor", [theirs[0]])
        mine = [ports.free_port() for _ in range(20)]
        assert not set(mine) & set(theirs)
    finally:
        child.stdin.close()
        child.wait(30)


def test_the_ports_of_an_ended_process_are_free_again_and_its_lines_dropped(table, monkeypatch):
    child = _reserve_in_child(table, 3)
    theirs = [int(p) for p in child.stdout.readline().split()]
    child.stdin.close()
    assert child.wait(30) == 0
    monkeypatch.setattr(ports, "_cursor", [theirs[0]])
    assert ports.free_port() == theirs[0]
    owners = {line.split()[1] for line in table.read_text().splitlines()}
    assert owners == {str(__import__("os").getpid())}


def test_a_reused_pid_does_not_keep_a_reservation(table, monkeypatch):
    import os

    port = ports.free_port()  # a port nothing binds
    table.write_text(f"{port} {os.getpid()} 1\n")  # this pid, but a process started at another time
    monkeypatch.setattr(ports, "_cursor", [port])
    assert ports.free_port() == port


def test_a_damaged_table_reserves_nothing_and_is_rewritten(table, monkeypatch):
    port = ports.free_port()  # a port nothing binds
    table.write_text("garbage\n12 x\n")
    monkeypatch.setattr(ports, "_cursor", [port])
    assert ports.free_port() == port
    assert [line.split()[0] for line in table.read_text().splitlines()] == [str(port)]


def test_an_unwritable_table_still_gives_free_ports(tmp_path, monkeypatch):
    monkeypatch.setattr(ports, "TABLE", tmp_path / "no-such-folder" / "ports")
    p = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", p))
