"""Clusters under test. Every backend offers the same small interface (Cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..spec import ClusterSpec


class InfraError(RuntimeError):
    """The cluster or the proxies failed: the run cannot be trusted (exit code 3)."""


class Cluster(Protocol):
    bootstrap: str  # comma-separated proxy addresses: all client traffic goes through them
    description: str  # backend, broker kind and version, for reports

    def up(self) -> None: ...
    def down(self) -> None: ...
    def proxy_names(self, broker: int | None = None) -> list[str]: ...
    def toxiproxy(self): ...  # a ToxiproxyClient
    def check_alive(self) -> None: ...  # raise InfraError when a component died


def make_cluster(spec: ClusterSpec, run_dir: Path) -> Cluster:
    if spec.backend == "local" and spec.broker == "tansu":
        from .local import LocalTansuCluster

        return LocalTansuCluster(spec, run_dir)
    raise InfraError(f"backend {spec.backend!r} with broker {spec.broker!r} is not available")
