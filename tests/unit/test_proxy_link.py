"""Connection handling of the embedded proxy itself (not Toxiproxy conformance, which
tests/integration/test_proxy_toxics.py measures against either server)."""

import socket
import time
from contextlib import contextmanager

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
        with socket.create_connection((host, int(proxy_port)), timeout=5) as s:
            time.sleep(0.2)  # accepted: the proxy is dialling the upstream
            requests.post(f"{base}/p", json={"enabled": False}).raise_for_status()
            t = time.monotonic()
            assert s.recv(10) == b""
            assert time.monotonic() - t < 1
