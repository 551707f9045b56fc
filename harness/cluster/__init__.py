"""Clusters under test. Every backend offers the same small interface (Cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..spec import ClusterSpec


class InfraError(RuntimeError):
    """The cluster or the proxies failed: the run cannot be trusted (exit code 3)."""


class Cluster(Protocol):
    """What the runner and the nemesis need of any backend. Brokers are numbered 0..N-1."""

    bootstrap: str  # comma-separated proxy addresses: all client traffic goes through them
    description: str  # backend, broker kind and version, for reports
    broker_count: int
    supported_faults: frozenset[str]  # fault kinds this backend can inject

    def up(self) -> None: ...  # start everything and run the preflight; InfraError on failure
    def down(self) -> None: ...  # stop everything it started; safe to call twice
    def toxiproxy(self): ...  # a ToxiproxyClient
    def proxy_name(self, broker: int) -> str: ...
    def leader_of(self, topic: str, partition: int) -> int: ...
    def pause_broker(self, broker: int) -> None: ...
    def resume_broker(self, broker: int) -> None: ...
    def kill_broker(self, broker: int) -> None: ...
    def stop_broker(self, broker: int) -> None: ...
    def start_broker(self, broker: int) -> None: ...
    def settle(self, topic: str, partitions: int) -> None: ...  # heal all; wait until the topic is readable
    def check_alive(self) -> None: ...  # raise InfraError when a component died outside the schedule


def _backend(spec: ClusterSpec):
    """The one place that maps an experiment's cluster section to its backend class."""
    if spec.backend == "local" and spec.broker == "tansu":
        from .local import LocalTansuCluster

        return LocalTansuCluster
    return None


def supported_faults(spec: ClusterSpec) -> frozenset[str]:
    backend = _backend(spec)
    return backend.supported_faults if backend else frozenset()


def unsupported_faults(spec: ClusterSpec, kinds: set[str]) -> list[str]:
    """Fault kinds this backend cannot inject (checked before anything starts: exit 2)."""
    return sorted(kinds - supported_faults(spec))


def make_cluster(spec: ClusterSpec, run_dir: Path) -> Cluster:
    backend = _backend(spec)
    if backend is None:
        raise InfraError(f"backend {spec.backend!r} with broker {spec.broker!r} is not available")
    return backend(spec, run_dir)
