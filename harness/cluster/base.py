"""What every backend shares: clients through Toxiproxy proxies, the preflight, leader lookup, healing.

A backend subclass only says how its brokers and proxies come to exist (`_start`, `_stop`)
and whether its proxy server still answers (`_proxy_alive`); everything faults and the
runner rely on is here, so the embedded default exercises the same code as Docker Compose,
KAFKA_HOME processes and external clusters.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Protocol

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from ..spec import BROKER_FAULTS, FAULT_KINDS, ClusterSpec
from ..workload.topic import restore_topic
from . import InfraError
from .metadata import client_addresses, leader_index, split_address, unreachable_proxies
from .toxiproxy import ToxiproxyClient

ALL_FAULTS = frozenset(FAULT_KINDS)
PROXY_FAULTS = ALL_FAULTS - frozenset(BROKER_FAULTS)  # what a Toxiproxy alone can inject


class BrokerHandle(Protocol):
    """One broker the harness controls: a local process or a container."""

    log_path: Path | str  # where to look when it misbehaves

    def start(self) -> None: ...  # start (again) and wait until it listens
    def stop(self) -> None: ...  # graceful
    def kill(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def alive(self) -> bool: ...  # running or paused


class ProxiedCluster:
    """Brokers 0..N-1, broker i reached by clients only through Toxiproxy proxy `proxy_names[i]`."""

    memory_storage = False  # True when a killed broker comes back empty (Tansu's memory storage)
    start_errors: tuple[type[BaseException], ...] = (OSError, RuntimeError, TimeoutError)

    def __init__(self, spec: ClusterSpec, run_dir: Path):
        self.spec = spec
        self.log_dir = run_dir / "logs"
        self.toxi: ToxiproxyClient | None = None
        self.brokers: list[BrokerHandle] = []
        self.proxy_listens: list[str] = []  # as the Toxiproxy API reports them (may be wildcards)
        self.endpoints: list[str] = []  # where clients reach broker i (its proxy), found by the preflight
        self.client: dict = {}  # librdkafka connection settings: bootstrap.servers plus security
        self._stopped: set[int] = set()  # brokers down on purpose (the schedule killed or stopped them)
        self._restarted = False  # a broker started again since the last settle

    # -- what a backend provides ----------------------------------------------
    @classmethod
    def faults_for(cls, spec: ClusterSpec) -> frozenset[str]:
        return ALL_FAULTS

    @classmethod
    def problems(cls, spec: ClusterSpec) -> list[str]:
        """Input mistakes found before anything starts (the CLI exits 2 on them)."""
        return []

    def _start(self) -> str:
        """Start or attach to brokers and proxies; set toxi, brokers, proxy_listens; return bootstrap servers."""
        raise NotImplementedError

    def _stop(self) -> None:
        raise NotImplementedError

    def _proxy_alive(self) -> bool:
        return self.toxi is None or self.toxi.answers()

    @property
    def description(self) -> str:
        raise NotImplementedError

    # -- lifecycle ---------------------------------------------------------------
    @property
    def broker_count(self) -> int:
        return self.spec.brokers

    @property
    def bootstrap(self) -> str:
        return self.client.get("bootstrap.servers", "")

    def up(self) -> None:
        try:
            bootstrap = self._start()
        except self.start_errors as e:
            self.down()
            raise InfraError(f"could not start the {self.spec.backend} cluster: {e} (logs in {self.log_dir})") from e
        self.client = {**self.spec.client_settings(), "bootstrap.servers": bootstrap}
        try:
            self.preflight()
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stop what this run started; safe to call twice."""
        self._stop()

    def preflight(self) -> None:
        """Prove that all client traffic crosses the proxies, before any workload.

        1. metadata fetched through the proxies advertises only addresses the proxies serve,
           one proxy per broker;
        2. with a proxy disabled, nothing answers at its address (no other listener there).
        Without proxies (an external cluster with no Toxiproxy) only metadata is checked.
        """
        md = self._metadata(timeout=30)
        advertised = [f"{b.host}:{b.port}" for b in md.brokers.values()]
        if self.toxi is None:
            self.endpoints = sorted(advertised)
            return
        self.endpoints = client_addresses(self.proxy_listens, advertised)
        bypass = unreachable_proxies(advertised, self.endpoints)
        if bypass or None in self.endpoints or len(advertised) != len(self.proxy_listens):
            raise InfraError(
                f"preflight failed: brokers advertise {sorted(advertised)} but the proxies listen on "
                f"{self.proxy_listens}; clients would connect to {bypass or 'other brokers'} directly, "
                "bypassing the proxies, so no network fault would reach them")
        for i, address in enumerate(self.endpoints):
            self.toxi.set_enabled(self.proxy_name(i), False)
            try:
                with socket.create_connection(split_address(address), timeout=1):
                    raise InfraError(f"preflight failed: {address} still answers with its proxy disabled")
            except OSError:
                pass
            finally:
                self.toxi.set_enabled(self.proxy_name(i), True)

    def _metadata(self, timeout: float, topic: str | None = None):
        admin = AdminClient(self.client)
        try:
            return admin.list_topics(topic, timeout=timeout)
        except KafkaException as e:
            raise InfraError(f"no metadata from {self.bootstrap}: {e.args[0].str()}") from e

    # -- what faults act on --------------------------------------------------------
    def toxiproxy(self) -> ToxiproxyClient:
        if self.toxi is None:
            raise InfraError("this cluster has no Toxiproxy: network faults cannot be injected")
        return self.toxi

    def proxy_name(self, broker: int) -> str:
        return self.spec.proxy_names[broker]

    def leader_of(self, topic: str, partition: int) -> int:
        md = self._metadata(timeout=5, topic=topic)
        advertised = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        leaders = {p.id: p.leader for p in md.topics[topic].partitions.values()}
        return leader_index(advertised, leaders, partition, self.endpoints)

    def _broker(self, broker: int) -> BrokerHandle:
        if not self.brokers:
            raise InfraError(f"backend {self.spec.backend} cannot act on brokers")
        return self.brokers[broker]

    def pause_broker(self, broker: int) -> None:
        self._broker(broker).pause()

    def resume_broker(self, broker: int) -> None:
        self._broker(broker).resume()

    def kill_broker(self, broker: int) -> None:
        self._stopped.add(broker)
        self._broker(broker).kill()

    def stop_broker(self, broker: int) -> None:
        self._stopped.add(broker)
        self._broker(broker).stop()

    def start_broker(self, broker: int) -> None:
        self._broker(broker).start()
        self._stopped.discard(broker)
        self._restarted = True

    def settle(self, topic: str, partitions: int, timeout: float = 120) -> None:
        """Heal every fault, start stopped brokers, wait until every broker is back and every partition led."""
        if self.toxi is not None:
            self.toxi.reset()
        for i, b in enumerate(self.brokers):
            if b.alive():
                b.resume()
            elif i in self._stopped:
                self.start_broker(i)
        if self._restarted and self.memory_storage:
            # A restarted memory-storage broker comes back without the topic (or with one the
            # producer auto-created): give it its partitions back so the final read can count the loss.
            restore_topic(self.client, topic, partitions)
        self._restarted = False
        deadline = time.monotonic() + timeout
        while True:
            md = self._metadata(timeout=10, topic=topic)
            t = md.topics.get(topic)
            leaders = {p.id: p.leader for p in t.partitions.values()} if t is not None and t.error is None else {}
            brokers_back = not self.brokers or len(md.brokers) == len(self.brokers)
            if brokers_back and all(leaders.get(p, -1) >= 0 for p in range(partitions)):
                return
            if time.monotonic() > deadline:
                raise InfraError(f"topic {topic} not readable {timeout:.0f}s after healing: "
                                 f"{len(md.brokers)} broker(s) in metadata, "
                                 f"{t.error if t is not None and t.error else 'partitions without a leader'}")
            time.sleep(0.5)

    def check_alive(self) -> None:
        if not self._proxy_alive():
            raise InfraError(f"the Toxiproxy server stopped answering; see {self.log_dir}")
        for i, b in enumerate(self.brokers):
            if i not in self._stopped and not b.alive():
                raise InfraError(f"broker {i} died outside the fault schedule; see {b.log_path}")
