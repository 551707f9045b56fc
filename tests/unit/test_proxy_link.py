"""Connection handling of the embedded proxy itself (not Toxiproxy conformance, which
tests/integration/test_proxy_toxics.py measures against either server)."""

import socket
import time
from contextlib import contextmanager

import psutil
import requests

from tests.unit.test_proxy_api import embedded_api


@contextmanager
def stuck_upstream():
    """An upstream whose accept queue is full: a new connection to it hangs in the handshake."""
    with socket.socket() as server, socket.socket() as filler:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        filler.connect(server.getsockname())  # takes the one queue slot; never accepted
        yield "127.0.0.1:%d" % server.getsockname()[1]


def test_disabling_closes_connections_still_dialling_upstream(tmp_path):
    with embedded_api(tmp_path) as port, stuck_upstream() as upstream:
        base = f"http://127.0.0.1:{port}/proxies"
        listen = requests.post(base, json={"name": "p", "upstream": upstream}).json()["listen"]
        host, proxy_port = listen.rsplit(":", 1)
        # The dial would hang for minutes (the kernel resends the SYN to a full accept queue for ~2 min):
        # a connection that ends within 30 s was closed by the disabling.
        with socket.create_connection((host, int(proxy_port)), timeout=30) as s:
            dialling(upstream)  # accepted: the proxy is dialling the upstream
            requests.post(f"{base}/p", json={"enabled": False}).raise_for_status()
            assert s.recv(10) == b""


def dialling(upstream: str) -> None:
    """Until some process is connecting to `upstream` (SYN sent, no answer); 60 s is a deadlock guard."""
    host, port = upstream.rsplit(":", 1)
    deadline = time.monotonic() + 60
    while not any(c.status == psutil.CONN_SYN_SENT and c.raddr and c.raddr == (host, int(port))
                  for c in psutil.net_connections("tcp4")):
        assert time.monotonic() < deadline, f"nothing dials {upstream}"
        time.sleep(0.01)
