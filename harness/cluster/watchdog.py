"""Checks every half second that the cluster's processes are alive; stops the workload if one died."""

from __future__ import annotations

import threading

from ..exits import InfraError
from . import Cluster


class Watchdog:
    def __init__(self, cluster: Cluster, stop_workload: threading.Event):
        self.cluster, self.stop_workload = cluster, stop_workload
        self.error = ""  # why it stopped the workload
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            try:
                self.cluster.check_alive()
            except InfraError as e:
                self.error = str(e)
                self.stop_workload.set()
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
