"""The embedded proxy's kafka_hold toxic: a held Kafka request and what follows it on its connection arrive
later, whole and in order, even after the client closed, while a new connection's requests overtake them;
a dropped one and what follows it never arrive; a stream it cannot read passes unchanged. Checked on what
the upstream receives (order and bytes), never on how long anything took."""

import socket
import struct
import threading
import time

import requests

from harness.proxy.kafka_frames import FrameTracker
from tests.unit.test_proxy_api import embedded_api


def request(api_key: int, corr: int, body: bytes = b"") -> bytes:
    return struct.pack(">ihhi", 8 + len(body), api_key, 3, corr) + body


class Upstream:
    """Accepts `connections` connections and keeps every byte until they close; `arrivals` lists each request's
    correlation id as its first bytes arrived, across connections."""

    def __init__(self, connections: int = 1):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.server.getsockname()[1]
        self.received = bytearray()  # the first connection's bytes
        self.arrivals: list[int] = []
        self.closed = threading.Event()
        self._open = connections
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, args=(connections,), daemon=True).start()

    def _accept(self, connections):
        for n in range(connections):
            conn, _ = self.server.accept()
            threading.Thread(target=self._serve, args=(conn, n == 0), daemon=True).start()

    def _serve(self, conn, first):
        tracker = FrameTracker()
        with conn:
            while data := conn.recv(65536):
                with self._lock:
                    if first:
                        self.received += data
                    self.arrivals += [p.header.correlation_id for p in tracker.feed(data) if p.first]
        with self._lock:
            self._open -= 1
            if not self._open:
                self.closed.set()

    def requests(self) -> list[int]:
        return [p.header.correlation_id for p in FrameTracker().feed(bytes(self.received)) if p.first]


def proxied(port, upstream, toxic):
    base = f"http://127.0.0.1:{port}/proxies"
    requests.post(base, json={"name": "k", "upstream": upstream.address}).raise_for_status()
    requests.post(f"{base}/k/toxics", json={"name": "hold", "type": "kafka_hold", "stream": "upstream",
                                            "attributes": toxic}).raise_for_status()
    host, p = requests.get(f"{base}/k").json()["listen"].rsplit(":", 1)
    return socket.create_connection((host, int(p)), timeout=30), base


def test_a_held_produce_and_what_follows_it_arrive_whole_and_in_order_even_once_the_client_left(tmp_path):
    with embedded_api(tmp_path) as port:
        up = Upstream()
        client, base = proxied(port, up, {"api_key": 0, "hold": 1500})
        big = request(0, 1, b"p" * 300_000)  # a Produce larger than a chunk: held whole, then written whole
        client.sendall(big[:1000])
        client.sendall(big[1000:] + request(3, 2) + request(26, 3))  # Metadata, EndTxn: behind it, as in TCP
        client.close()  # the client gives up; the held Produce still reaches the broker
        assert up.closed.wait(30)
        assert bytes(up.received) == big + request(3, 2) + request(26, 3)
        assert requests.get(f"{base}/k/kafka").json() == {"held": 1, "dropped": 0, "unparsed": 0,
                                                          "toxics": {"hold": {"held": 1, "dropped": 0}}}
        # The toxic's name used again (the next variant's fault of the same id) counts afresh; the proxy's
        # own counts go on.
        requests.delete(f"{base}/k/toxics/hold").raise_for_status()
        requests.post(f"{base}/k/toxics", json={"name": "hold", "type": "kafka_hold", "stream": "upstream",
                                                "attributes": {"api_key": 26, "hold": 10}}).raise_for_status()
        assert requests.get(f"{base}/k/kafka").json() == {"held": 1, "dropped": 0, "unparsed": 0, "toxics": {}}


def test_a_new_connections_requests_overtake_the_held_ones_of_an_abandoned_connection(tmp_path):
    with embedded_api(tmp_path) as port:
        up = Upstream(connections=2)
        old, base = proxied(port, up, {"api_key": 26, "hold": 600_000})  # held far longer than the test lasts
        old.sendall(request(26, 1) + request(3, 2))  # EndTxn held, the Metadata behind it waits
        for _ in range(1200):  # until the proxy holds it (sent is not yet read): a deadlock guard, not a timing check
            if requests.get(f"{base}/k/kafka").json()["held"] == 1:
                break
            time.sleep(0.05)
        requests.delete(f"{base}/k/toxics/hold").raise_for_status()  # the fault ends: held ones stay held
        host, p = requests.get(f"{base}/k").json()["listen"].rsplit(":", 1)
        new = socket.create_connection((host, int(p)), timeout=30)
        new.sendall(request(26, 10))  # the client retries on a new connection
        new.close()
        for _ in range(1200):  # a deadlock guard (60 s), not a timing check
            if 10 in up.arrivals:
                break
            time.sleep(0.05)
        assert up.arrivals == [10]  # the retry arrived; the old connection's requests are still held
        old.close()
        assert requests.get(f"{base}/k/kafka").json()["held"] == 1


def test_a_dropped_request_and_what_follows_it_never_arrive(tmp_path):
    with embedded_api(tmp_path) as port:
        up = Upstream()
        client, base = proxied(port, up, {"api_key": 26, "drop": 1})
        client.sendall(request(0, 1, b"x" * 10) + request(26, 2) + request(0, 3))
        client.close()
        assert up.closed.wait(30)
        assert up.requests() == [1]  # what follows a lost request on its connection is lost with it
        assert requests.get(f"{base}/k/kafka").json() == {"held": 0, "dropped": 2, "unparsed": 0,
                                                          "toxics": {"hold": {"held": 0, "dropped": 2}}}


def test_what_is_no_kafka_request_passes_unchanged_and_is_counted(tmp_path):
    with embedded_api(tmp_path) as port:
        up = Upstream()
        client, base = proxied(port, up, {"api_key": 0, "hold": 60000})
        junk = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 100
        client.sendall(junk)
        client.close()
        assert up.closed.wait(30)
        assert bytes(up.received) == junk
        assert requests.get(f"{base}/k/kafka").json() == {"held": 0, "dropped": 0, "unparsed": 1, "toxics": {}}


def test_a_gap_spaces_a_connections_matched_requests_and_what_follows_waits_behind_them():
    import asyncio

    from harness.proxy.link import Link
    from harness.proxy.toxics import Toxic

    toxic = Toxic("pace", "kafka_hold", "upstream", attributes={"api_key": 0, "hold": 1, "drop": 0, "gap": 100})

    class Proxy:  # what a link asks of its proxy
        toxics = {"pace": toxic}
        kafka_requests = {"held": 0, "dropped": 0, "unparsed": 0}

        def count_request(self, name, what):
            self.kafka_requests[what] += 1

    async def hold():
        link = Link(Proxy(), None)
        link.active[id(toxic)] = True
        out = link._hold_requests(10.0, request(0, 1) + request(0, 2) + request(3, 3) + request(0, 4), None)
        link._pump.cancel()  # nothing is written: the test reads when each would be
        return out, [(round(due, 3), FrameTracker().feed(bytes(frame))[0].header.correlation_id)
                     for due, frame, _ in link._queue]

    out, dues = asyncio.run(hold())
    assert out == b""  # all of it held
    # each Produce 100 ms after the previous one; the Metadata request behind the second goes with it
    assert dues == [(10.001, 1), (10.101, 2), (10.101, 3), (10.201, 4)]
