"""The embedded default: Tansu brokers as local processes, each behind its own proxy."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import AdminClient

from .. import procs
from ..spec import ClusterSpec
from . import InfraError
from .brokers import TansuBroker, tansu_version
from .toxiproxy import ToxiproxyClient, ToxiproxyServer


class LocalTansuCluster:
    def __init__(self, spec: ClusterSpec, run_dir: Path):
        self.spec = spec
        self.log_dir = run_dir / "logs"
        self.server = ToxiproxyServer(self.log_dir)
        self.client: ToxiproxyClient | None = None
        self.brokers: list[TansuBroker] = []
        self.proxy_addresses: list[str] = []
        self.bootstrap = ""

    @property
    def description(self) -> str:
        return f"local / tansu {tansu_version()} x{self.spec.brokers} / proxy: {self.server.kind or '-'}"

    def up(self) -> None:
        try:
            self.client = self.server.start()
            for i in range(self.spec.brokers):
                port = procs.free_port()
                listen = self.client.create_proxy(f"broker-{i}", upstream=f"127.0.0.1:{port}")
                broker = TansuBroker(i, advertised=listen, port=port, log_dir=self.log_dir)
                self.brokers.append(broker)
                broker.start()
                self.proxy_addresses.append(listen)
        except (OSError, RuntimeError, TimeoutError) as e:
            self.down()
            raise InfraError(f"could not start the local cluster: {e} (logs in {self.log_dir})") from e
        self.bootstrap = ",".join(self.proxy_addresses)
        self.preflight()

    def preflight(self) -> None:
        """Prove that clients are sent to the proxies: metadata must advertise only proxy addresses."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        try:
            md = admin.list_topics(timeout=15)
        except Exception as e:  # KafkaException: the cluster did not answer through the proxy
            raise InfraError(f"no metadata through the proxies {self.bootstrap}: {e}") from e
        advertised = sorted(f"{b.host}:{b.port}" for b in md.brokers.values())
        if advertised != sorted(self.proxy_addresses):
            raise InfraError(
                f"brokers advertise {advertised} but the proxies listen on {sorted(self.proxy_addresses)}: "
                "client traffic would bypass the proxies, so faults would not reach it")

    def proxy_names(self, broker: int | None = None) -> list[str]:
        if broker is not None:
            return [f"broker-{broker}"]
        return [f"broker-{i}" for i in range(len(self.brokers))]

    def toxiproxy(self) -> ToxiproxyClient:
        assert self.client is not None
        return self.client

    def check_alive(self) -> None:
        if not self.server.alive():
            raise InfraError(f"the proxy server died; see {self.log_dir / 'toxiproxy.log'}")
        for b in self.brokers:
            if not b.alive():
                raise InfraError(f"broker {b.index} died outside the fault schedule; see {b.log_path}")

    def down(self) -> None:
        for b in self.brokers:
            b.stop()
        self.server.stop()
