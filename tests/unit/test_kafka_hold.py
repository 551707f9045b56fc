"""The embedded proxy's kafka_hold toxic: held Kafka requests arrive after later ones, whole, even after the
client closed; dropped ones never; a stream it cannot read passes unchanged. Checked on what the upstream
receives (order and bytes), never on how long anything took."""

import socket
import struct
import threading

import requests

from harness.proxy.kafka_frames import FrameTracker
from tests.unit.test_proxy_api import embedded_api


def request(api_key: int, corr: int, body: bytes = b"") -> bytes:
    return struct.pack(">ihhi", 8 + len(body), api_key, 3, corr) + body


class Upstream:
    """Accepts one connection and keeps every byte until it closes."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.server.getsockname()[1]
        self.received = bytearray()
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.server.accept()
        with conn:
            while data := conn.recv(65536):
                self.received += data
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


def test_a_held_produce_arrives_whole_after_the_requests_sent_behind_it_even_once_the_client_left(tmp_path):
    with embedded_api(tmp_path) as port:
        up = Upstream()
        client, base = proxied(port, up, {"api_key": 0, "hold": 1500})
        big = request(0, 1, b"p" * 300_000)  # a Produce larger than a chunk: held whole, then written whole
        client.sendall(big[:1000])
        client.sendall(big[1000:] + request(3, 2) + request(26, 3))  # Metadata, EndTxn
        client.close()  # the client gives up; the held Produce still reaches the broker
        assert up.closed.wait(30)
        assert up.requests() == [2, 3, 1]
        assert bytes(up.received) == request(3, 2) + request(26, 3) + big
        assert requests.get(f"{base}/k/kafka").json() == {"held": 1, "dropped": 0, "unparsed": 0}


def test_a_dropped_request_never_arrives_and_the_rest_pass_in_order(tmp_path):
    with embedded_api(tmp_path) as port:
        up = Upstream()
        client, base = proxied(port, up, {"api_key": 26, "drop": 1})
        client.sendall(request(0, 1, b"x" * 10) + request(26, 2) + request(0, 3))
        client.close()
        assert up.closed.wait(30)
        assert up.requests() == [1, 3]
        assert requests.get(f"{base}/k/kafka").json() == {"held": 0, "dropped": 1, "unparsed": 0}


def test_what_is_no_kafka_request_passes_unchanged_and_is_counted(tmp_path):
    with embedded_api(tmp_path) as port:
        up = Upstream()
        client, base = proxied(port, up, {"api_key": 0, "hold": 60000})
        junk = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 100
        client.sendall(junk)
        client.close()
        assert up.closed.wait(30)
        assert bytes(up.received) == junk
        assert requests.get(f"{base}/k/kafka").json() == {"held": 0, "dropped": 0, "unparsed": 1}
