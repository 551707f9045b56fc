"""Clusters under test. Every backend offers the same small interface (Cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..faults.registry import cannot_inject
from ..spec import BaseClusterSpec as ClusterSpec  # any backend's section


class Cluster(Protocol):
    """What the runner and the nemesis need of any backend. Brokers are numbered 0..N-1.

    Every backend is a base.ProxiedCluster; this protocol is the part the rest of the harness uses.
    """

    client: dict  # librdkafka connection settings (bootstrap.servers through the proxies, security)
    bootstrap: str
    description: str  # backend, broker kind and version, for reports
    broker_count: int

    def up(self) -> None: ...  # start everything and run the preflight; InfraError on failure
    def down(self) -> None: ...  # stop everything it started; safe to call twice
    keep_data: bool  # True: down() leaves the brokers' log folders (data_folder) for the owner to keep or discard
    data_folder: Path | None  # where they are on this machine (a local Kafka's kafka-data/), else None
    def discard_data(self) -> None: ...
    def toxiproxy(self): ...  # a ToxiproxyClient
    def proxy_name(self, broker: int) -> str: ...
    def leader_of(self, topic: str, partition: int) -> int: ...
    def follower_of(self, topic: str, partition: int) -> int: ...
    def broker_state(self, broker: int) -> str: ...  # running, paused, down or starting
    def wait_running(self, broker: int, give_up) -> bool: ...
    def cut(self, proxies: list[str]) -> None: ...  # disable proxies (counted: overlapping faults heal right)
    def reconnect(self, proxies: list[str]) -> None: ...
    def isolate_broker(self, broker: int) -> None: ...  # cut it off from its peers and the controller quorum
    def rejoin_broker(self, broker: int) -> None: ...
    def pause_broker(self, broker: int) -> None: ...
    def resume_broker(self, broker: int) -> None: ...
    def kill_broker(self, broker: int) -> None: ...
    def stop_broker(self, broker: int) -> None: ...
    def lose_unflushed(self, broker: int, topic: str, drop_batches: int | None) -> dict: ...  # kill, cut the page cache's part
    def feature_levels(self) -> dict[str, int]: ...  # the cluster's numeric feature levels
    def set_features(self, levels: dict[str, int]) -> None: ...
    def set_broker_config(self, config: dict[str, str | None]) -> None: ...  # dynamic settings, on every broker
    def start_broker(self, broker: int) -> None: ...
    def settle(self, topic: str, partitions: int) -> None: ...  # heal all; wait until the topic is readable
    def check_alive(self) -> None: ...  # raise InfraError when a component died outside the schedule
    # what a cluster kept for many runs needs (kept.py)
    files: object  # runfolder.RunFolder of the folder the cluster was made with: its logs, its data
    def heal_all(self) -> None: ...  # heal every fault, resume paused and start stopped brokers
    def reset_settings(self) -> None: ...  # variants' broker settings and feature levels put back
    def metadata(self, timeout: float = 10, topic: str | None = None): ...  # InfraError when none
    def admin(self): ...  # the cluster's own AdminClient


def _backend(spec: ClusterSpec):
    """The one place that maps an experiment's cluster section to its backend class."""
    if spec.backend == "local":
        from .local import LocalKafkaCluster, LocalTansuCluster

        return LocalTansuCluster if spec.broker == "tansu" else LocalKafkaCluster
    if spec.backend == "compose":
        from .compose import ComposeCluster

        return ComposeCluster
    from .external import ExternalCluster

    return ExternalCluster


def unsupported_faults(spec: ClusterSpec, kinds: set[str]) -> list[str]:
    """Fault kinds this backend cannot inject, each with the reason, e.g. "isolate (...)" (before anything
    starts: exit 2)."""
    return cannot_inject(_backend(spec).means(spec), kinds)


def input_problems(spec: ClusterSpec) -> list[str]:
    """Problems with the cluster section this machine reveals (missing KAFKA_HOME, Compose file): exit 2."""
    return _backend(spec).problems(spec)


def make_cluster(spec: ClusterSpec, run_dir: Path) -> Cluster:
    return _backend(spec)(spec, run_dir)
