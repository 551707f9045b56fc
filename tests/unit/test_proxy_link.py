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


def test_both_sides_of_a_link_send_without_nagle():
    """Toxiproxy (Go) sets TCP_NODELAY on every connection. asyncio sets it only on sockets whose proto says TCP,
    which an accepted socket's does not: the client's side kept Nagle, and a response written while the one
    before was unacknowledged waited for the client's delayed ACK (40 ms a pipelined request)."""
    import asyncio

    from harness.proxy.link import Proxy

    async def scenario() -> tuple[int, int]:
        upstream = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        proxy = Proxy("p", "127.0.0.1:0", "127.0.0.1:%d" % upstream.sockets[0].getsockname()[1])
        await proxy.start()
        host, port = proxy.listen.rsplit(":", 1)
        _, writer = await asyncio.open_connection(host, int(port))
        for _ in range(3000):  # until the link is connected upstream (a deadlock guard, not a timing)
            if proxy.links:
                break
            await asyncio.sleep(0.01)
        link = next(iter(proxy.links))
        sides = (link.client_w.get_extra_info("socket"), link.server_w.get_extra_info("socket"))
        options = tuple(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in sides)
        writer.close()
        await proxy.stop()
        upstream.close()
        return options

    client_side, upstream_side = asyncio.run(scenario())
    assert client_side and upstream_side
