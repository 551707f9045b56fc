"""kafka_answers: what the preflight asks at a disabled proxy's address. Only a Kafka ApiVersions answer counts:
Docker's published ports accept every connection (docker-proxy) and close it when nothing listens behind."""

import socket
import struct
import threading

from harness.cluster.apiversions import API_VERSIONS, kafka_answers


def serve_once(reply):
    """A loopback listener that accepts one connection and hands it to `reply`; returns its port."""
    server = socket.create_server(("127.0.0.1", 0))

    def run():
        conn, _ = server.accept()
        with conn, server:
            reply(conn)

    threading.Thread(target=run, daemon=True).start()
    return server.getsockname()[1]


def api_versions_answer(conn):
    size = struct.unpack(">i", conn.recv(4))[0]
    request = conn.recv(size)
    correlation = struct.unpack_from(">i", request, 4)[0]
    body = struct.pack(">ihi", correlation, 0, 1) + struct.pack(">hhh", API_VERSIONS, 0, 3)
    conn.sendall(struct.pack(">i", len(body)) + body)


def test_a_broker_answering_api_versions_answers():
    assert kafka_answers("127.0.0.1", serve_once(api_versions_answer))


def test_an_accept_then_close_like_docker_proxy_is_not_an_answer():
    assert not kafka_answers("127.0.0.1", serve_once(lambda conn: None))


def test_nothing_listening_is_not_an_answer():
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    assert not kafka_answers("127.0.0.1", port)
