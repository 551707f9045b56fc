"""backend: external — a cluster the harness did not start, reached at `bootstrap_servers`.

Client settings (SASL, TLS) come from cluster.client. The harness cannot touch the brokers,
so broker faults are refused; network faults are allowed only when the user's clients
already go through a Toxiproxy whose API is given as `toxiproxy_url` (one proxy per broker,
named in `proxies`, default broker-<i>), and the preflight proves they do.
"""

from __future__ import annotations

from ..faults.kind import MEANS, Means
from ..spec import ExternalClusterSpec
from .base import ProxiedCluster
from .toxiproxy import ToxiproxyClient


class ExternalCluster(ProxiedCluster):
    @classmethod
    def means(cls, spec: ExternalClusterSpec) -> Means:
        if not spec.toxiproxy_url:  # only the faults on the harness's own workload remain
            return Means(**{m: "no cluster.toxiproxy_url: the clients' traffic crosses no proxy the harness controls"
                            for m in MEANS})
        return Means(request_framing="only the embedded proxy (backend local) reads Kafka's request framing",
                     plaintext_broker="the harness leaves a hanging transaction only in brokers it started",
                     broker_process="the harness cannot act on brokers it did not start",
                     log_folders="the harness cannot act on brokers it did not start",
                     peer_traffic="only the clients' traffic crosses its Toxiproxy, not replication or the controller "
                                  "quorum",
                     packets="the harness acts on packets only in network namespaces it made (backend local)",
                     packet_queue="the harness acts on packets only in network namespaces it made (backend local)")

    @property
    def description(self) -> str:
        proxy = f"toxiproxy at {self.spec.toxiproxy_url}" if self.spec.toxiproxy_url else "none (no faults)"
        return f"external · {self.spec.bootstrap_servers} · proxy: {proxy}"

    def _start(self) -> str:
        if self.spec.toxiproxy_url:
            self.toxi = ToxiproxyClient.from_url(self.spec.toxiproxy_url)
            self.proxy_listens = [self.toxi.attach(self.proxy_name(i)) for i in range(self.spec.brokers)]
        return self.spec.bootstrap_servers

    def _stop(self) -> None:
        if self.toxi is not None and self.toxi.answers():
            self.toxi.reset()  # leave the user's proxies healed
