"""The embedded default: Tansu brokers as local processes, each behind its own proxy."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from .. import procs
from ..spec import ClusterSpec
from . import InfraError
from .brokers import TansuBroker, tansu_version
from .metadata import leader_index, unreachable_proxies
from ..workload.topic import restore_topic
from .toxiproxy import ToxiproxyClient, ToxiproxyServer

ALL_FAULTS = frozenset({"lost-acks", "reset-connections", "latency", "bandwidth", "slow-close", "partition",
                        "broker-pause", "broker-kill", "broker-restart"})


class LocalTansuCluster:
    supported_faults = ALL_FAULTS
    # Tansu's memory storage lives in the process: a killed or restarted broker comes back empty.
    memory_storage = True

    def __init__(self, spec: ClusterSpec, run_dir: Path):
        self.spec = spec
        self.log_dir = run_dir / "logs"
        self.server = ToxiproxyServer(self.log_dir)
        self.client: ToxiproxyClient | None = None
        self.brokers: list[TansuBroker] = []
        self.proxy_addresses: list[str] = []
        self.bootstrap = ""
        self._stopped: set[int] = set()  # brokers down on purpose (the schedule killed or stopped them)
        self._restarted = False  # a broker started again since the last settle

    @property
    def broker_count(self) -> int:
        return self.spec.brokers

    @property
    def description(self) -> str:
        return f"local · tansu {tansu_version()} × {self.spec.brokers} · proxy: {self.server.kind or '-'}"

    # -- lifecycle -----------------------------------------------------------
    def up(self) -> None:
        try:
            self.client = self.server.start()
            for i in range(self.spec.brokers):
                port = procs.free_port()
                listen = self.client.create_proxy(self.proxy_name(i), upstream=f"127.0.0.1:{port}")
                broker = TansuBroker(i, advertised=listen, port=port, log_dir=self.log_dir)
                self.brokers.append(broker)
                broker.start()
                self.proxy_addresses.append(listen)
        except (OSError, RuntimeError, TimeoutError) as e:
            self.down()
            raise InfraError(f"could not start the local cluster: {e} (logs in {self.log_dir})") from e
        self.bootstrap = ",".join(self.proxy_addresses)
        try:
            self.preflight()
        except InfraError:
            self.down()
            raise

    def down(self) -> None:
        for b in self.brokers:
            b.stop()
        self.server.stop()

    def preflight(self) -> None:
        """Prove that all client traffic crosses the proxies, before any workload.

        1. metadata fetched through the proxies advertises only proxy addresses;
        2. with a proxy disabled, nothing answers at its address (no other listener there).
        """
        md = self._metadata(timeout=15)
        advertised = [f"{b.host}:{b.port}" for b in md.brokers.values()]
        bypass = unreachable_proxies(advertised, self.proxy_addresses)
        if bypass or len(advertised) != len(self.proxy_addresses):
            raise InfraError(
                f"preflight failed: brokers advertise {sorted(advertised)} but the proxies listen on "
                f"{sorted(self.proxy_addresses)}; clients would connect to {bypass or 'other brokers'} directly, "
                "bypassing the proxies, so no network fault would reach them")
        for i, address in enumerate(self.proxy_addresses):
            self.client.set_enabled(self.proxy_name(i), False)
            try:
                host, port = address.rsplit(":", 1)
                with socket.create_connection((host, int(port)), timeout=1):
                    raise InfraError(f"preflight failed: {address} still answers with its proxy disabled")
            except OSError:
                pass
            finally:
                self.client.set_enabled(self.proxy_name(i), True)

    def _metadata(self, timeout: float, topic: str | None = None):
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        try:
            return admin.list_topics(topic, timeout=timeout)
        except KafkaException as e:
            raise InfraError(f"no metadata through the proxies {self.bootstrap}: {e.args[0].str()}") from e

    # -- what faults act on --------------------------------------------------
    def toxiproxy(self) -> ToxiproxyClient:
        assert self.client is not None
        return self.client

    def proxy_name(self, broker: int) -> str:
        return f"broker-{broker}"

    def leader_of(self, topic: str, partition: int) -> int:
        md = self._metadata(timeout=5, topic=topic)
        advertised = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        leaders = {p.id: p.leader for p in md.topics[topic].partitions.values()}
        return leader_index(advertised, leaders, partition, self.proxy_addresses)

    def pause_broker(self, broker: int) -> None:
        self.brokers[broker].pause()

    def resume_broker(self, broker: int) -> None:
        self.brokers[broker].resume()

    def kill_broker(self, broker: int) -> None:
        self._stopped.add(broker)
        self.brokers[broker].kill()

    def stop_broker(self, broker: int) -> None:
        self._stopped.add(broker)
        self.brokers[broker].stop()

    def start_broker(self, broker: int) -> None:
        self.brokers[broker].start()
        self._stopped.discard(broker)
        self._restarted = True

    def settle(self, topic: str, partitions: int, timeout: float = 60) -> None:
        """Heal every fault, start stopped brokers, wait until every partition of topic has a leader."""
        self.toxiproxy().reset()
        for i, b in enumerate(self.brokers):
            if b.alive():
                b.resume()
            elif i in self._stopped:
                self.start_broker(i)
        if self._restarted:
            # A restarted memory-storage broker comes back without the topic (or with one the
            # producer auto-created): give it its partitions back so the final read can count the loss.
            restore_topic(self.bootstrap, topic, partitions)
            self._restarted = False
        deadline = time.monotonic() + timeout
        while True:
            md = self._metadata(timeout=10, topic=topic)
            t = md.topics.get(topic)
            leaders = {p.id: p.leader for p in t.partitions.values()} if t is not None and t.error is None else {}
            if all(leaders.get(p, -1) >= 0 for p in range(partitions)):
                return
            if time.monotonic() > deadline:
                raise InfraError(f"topic {topic} not readable {timeout:.0f}s after healing: "
                                 f"{t.error if t is not None else 'missing'}")
            time.sleep(0.5)

    def check_alive(self) -> None:
        if not self.server.alive():
            raise InfraError(f"the proxy server died; see {self.log_dir / 'toxiproxy.log'}")
        for i, b in enumerate(self.brokers):
            if not b.alive() and i not in self._stopped:
                raise InfraError(f"broker {i} died outside the fault schedule; see {b.log_path}")
