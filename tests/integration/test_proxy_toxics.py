"""Conformance, side by side: every check drives the embedded proxy and a real toxiproxy-server the same way
(toxiproxy-python and raw HTTP) and measures each toxic on a real TCP stream. Each test runs against both
(`[embedded]`, `[toxiproxy]`); a difference is a bug of the embedded proxy, fixed there (the differences found
so far are listed in harness/proxy/CONFORMANCE.md). Without a toxiproxy-server on PATH or in
$TOXIPROXY_SERVER the `[toxiproxy]` half skips, saying so.
"""

import re
import socket
import socketserver
import threading
import time

import pytest
import requests
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
from toxiproxy.server import Toxiproxy

from harness.cluster.toxiproxy import ToxiproxyServer, find_toxiproxy_server

PROXIES = ["embedded", "toxiproxy"]


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
        except ConnectionResetError:  # a toxic (reset_peer, a cut) closing the connection is what is tested
            pass


@pytest.fixture(scope="module")
def echo():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module", params=PROXIES)
def server(request, tmp_path_factory):
    """One server of each kind per module: (kind, host, port)."""
    if request.param == "embedded":
        program = None
    else:
        program = find_toxiproxy_server()
        if program is None:
            pytest.skip("no toxiproxy-server on PATH or in $TOXIPROXY_SERVER: only the embedded proxy is checked")
    server = ToxiproxyServer(tmp_path_factory.mktemp(request.param) / "toxiproxy.log", program)
    client = server.start()
    yield request.param, client.host, client.port
    server.stop()
    assert server.proc.returncode is not None


@pytest.fixture
def api(server):
    _, host, port = server
    APIConsumer.host, APIConsumer.port = host, port  # toxiproxy-python keeps its address here
    return Toxiproxy()


@pytest.fixture
def proxy(api, echo, request):
    p = api.create(upstream=echo, name=re.sub(r"\W", "_", request.node.name)[:60])
    yield p
    p.destroy()


def connect(proxy) -> socket.socket:
    host, port = proxy.listen.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def roundtrip(sock, payload=b"ping") -> float:
    t = time.monotonic()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        got += chunk
    assert got == payload
    return time.monotonic() - t


def test_plain_proxy_passes_data(proxy):
    with connect(proxy) as s:
        roundtrip(s, b"x" * 100_000)  # every byte back (the socket's timeout is the deadline)


@pytest.mark.parametrize("stream", ["downstream", "upstream"])
def test_latency_adds_delay_then_goes_away(proxy, stream):
    with connect(proxy) as s:
        proxy.add_toxic(type="latency", stream=stream, name="lat", attributes={"latency": 200})
        assert roundtrip(s) >= 0.2  # a lower bound: a loaded machine only adds to it
        proxy.destroy_toxic("lat")
        # gone: a minute's latency, removed, delays nothing (held, the socket's 5 s timeout would fail this)
        proxy.add_toxic(type="latency", stream=stream, name="lat", attributes={"latency": 60_000})
        proxy.destroy_toxic("lat")
        roundtrip(s)


# reset_peer follows toxics/reset_peer.go and link.go: the next chunk on its stream is dropped, `timeout` ms
# later the connection closes; with a reset (RST) only when the toxic was there when the connection opened.

def test_reset_peer_added_to_an_open_connection_closes_it_on_the_next_data(proxy):
    with connect(proxy) as s:
        roundtrip(s)
        proxy.add_toxic(type="reset_peer", name="rst", attributes={"timeout": 0})
        assert stays_open(s, 0.3) == b""  # no data, no close
        s.sendall(b"x")  # its echo reaches the toxic (downstream): dropped, then the close
        got, _ = until_closed(s)
        assert got == b""  # an ordinary close (FIN), not a reset
    proxy.destroy_toxic("rst")
    with connect(proxy) as s:
        roundtrip(s)


def test_reset_peer_present_when_the_connection_opens_resets_it_after_its_timeout(proxy):
    proxy.add_toxic(type="reset_peer", name="rst", stream="upstream", attributes={"timeout": 300})
    with connect(proxy) as s:
        t = time.monotonic()
        s.sendall(b"x")  # reaches the upstream toxic: dropped, never echoed
        with pytest.raises(ConnectionResetError):
            until_closed(s)
        assert time.monotonic() - t >= 0.25  # a lower bound: a loaded machine only adds to it


def until_closed(sock, timeout=5) -> tuple[bytes, float]:
    """Everything the proxy still delivers, and the seconds until it closed the connection."""
    t = time.monotonic()
    sock.settimeout(timeout)
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got, time.monotonic() - t


def stays_open(sock, seconds) -> bytes:
    """Wait `seconds`; fail if the proxy closes the connection meanwhile. Returns what arrived."""
    sock.settimeout(seconds)
    try:
        chunk = sock.recv(65536)
    except socket.timeout:
        return b""
    assert chunk, "connection closed"
    return chunk


# timeout follows Toxiproxy's toxics/timeout.go: data reaching it is dropped; the connection
# closes after `timeout` ms without data reaching it (never when 0) and when the toxic is removed.

def test_timeout_drops_data_then_closes(proxy):
    with connect(proxy) as s:
        roundtrip(s)
        proxy.add_toxic(type="timeout", name="to", attributes={"timeout": 300})
        s.sendall(b"dropped")
        got, waited = until_closed(s)
        assert got == b""
        assert waited >= 0.25


class Recording(socketserver.BaseRequestHandler):
    """An echo server that keeps every byte it received (server.received)."""

    def handle(self):
        while data := self.request.recv(65536):
            self.server.received.append(data)
            self.request.sendall(data)


def test_timeout_upstream_keeps_requests_from_the_server_then_closes(api, request):
    # The lost-requests fault: what the client sends while the toxic is there never reaches the server.
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Recording)
    server.daemon_threads, server.received = True, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    p = api.create(upstream=f"127.0.0.1:{server.server_address[1]}", name=re.sub(r"\W", "_", request.node.name)[:60])
    try:
        with connect(p) as s:
            roundtrip(s)
            p.add_toxic(type="timeout", name="to", stream="upstream", attributes={"timeout": 300})
            s.sendall(b"held")
            got, waited = until_closed(s)
        assert got == b"" and waited >= 0.25
        assert b"".join(server.received) == b"ping"  # the request before the toxic only
    finally:
        p.destroy()
        server.shutdown()
        server.server_close()


def test_timeout_clock_restarts_with_each_dropped_chunk(proxy):
    with connect(proxy) as s:
        proxy.add_toxic(type="timeout", name="to", attributes={"timeout": 300})
        for _ in range(5):  # 0.75 s of traffic, never 300 ms apart
            s.sendall(b"dropped")
            assert stays_open(s, 0.15) == b""
        got, waited = until_closed(s)
        assert got == b"" and waited >= 0.1  # ~300 ms after the last echo was dropped


def test_timeout_clock_restarts_when_the_toxic_is_updated(proxy):
    # An update re-runs the toxic (ToxicLink.UpdateToxic); it does not close the connection.
    with connect(proxy) as s:
        proxy.add_toxic(type="timeout", name="to", attributes={"timeout": 300})
        assert stays_open(s, 0.2) == b""
        requests.post(f"http://{APIConsumer.host}:{APIConsumer.port}/proxies/{proxy.name}/toxics/to",
                      json={"attributes": {"timeout": 400}}).raise_for_status()
        got, waited = until_closed(s)
        assert got == b"" and waited >= 0.35


def test_timeout_removal_closes_the_connection(proxy):
    with connect(proxy) as s:
        proxy.add_toxic(type="timeout", name="to", attributes={"timeout": 10_000})
        s.sendall(b"dropped")
        assert stays_open(s, 0.3) == b""
        proxy.destroy_toxic("to")
        got, _ = until_closed(s)
        assert got == b""  # dropped data is not delivered on removal either


def test_timeout_zero_drops_until_removed_then_closes(proxy):
    with connect(proxy) as s:
        proxy.add_toxic(type="timeout", name="to0", attributes={"timeout": 0})
        s.sendall(b"dropped")
        assert stays_open(s, 0.5) == b""  # no timer: still open
        proxy.destroy_toxic("to0")
        got, _ = until_closed(s)
        assert got == b""


@pytest.mark.parametrize("timeout", [0, 300])
def test_timeout_applies_to_connections_opened_while_present(proxy, timeout):
    proxy.add_toxic(type="timeout", name="to", attributes={"timeout": timeout})
    with connect(proxy) as s:
        s.sendall(b"dropped")
        if timeout:
            got, waited = until_closed(s)
            assert got == b"" and waited >= 0.2
        else:
            assert stays_open(s, 0.4) == b""
            proxy.destroy_toxic("to")
            assert until_closed(s)[0] == b""


def test_timeout_not_applied_by_toxicity_still_closes_on_removal(proxy):
    # Toxiproxy calls Cleanup on every connection's stub, applied or not.
    with connect(proxy) as s:
        proxy.add_toxic(type="timeout", name="never", toxicity=0.0, attributes={"timeout": 0})
        roundtrip(s)  # toxicity 0: data flows
        proxy.destroy_toxic("never")
        got, _ = until_closed(s)
        assert got == b""


def test_limit_data_closes_after_n_bytes(proxy):
    with connect(proxy) as s:
        proxy.add_toxic(type="limit_data", name="lim", attributes={"bytes": 10})
        s.sendall(b"0123456789abcdef")
        got = b""
        while chunk := s.recv(100):
            got += chunk
        assert got == b"0123456789"


def test_toxicity_zero_never_applies(proxy):
    # a minute's latency: applied, it would outlast the socket's 5 s timeout and fail the round trip
    proxy.add_toxic(type="latency", name="never", toxicity=0.0, attributes={"latency": 60_000})
    with connect(proxy) as s:
        roundtrip(s)


@pytest.fixture
def recorder(proxy):
    """Points the proxy at a server that records each request and answers b"ack"."""
    received = []

    class Recorder(socketserver.BaseRequestHandler):
        def handle(self):
            while data := self.request.recv(100):
                received.append(data)
                self.request.sendall(b"ack")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Recorder)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    r = requests.post(f"http://{APIConsumer.host}:{APIConsumer.port}/proxies/{proxy.name}",
                      json={"upstream": f"127.0.0.1:{server.server_address[1]}"})
    assert r.status_code == 200
    yield received
    server.shutdown()
    server.server_close()


def test_limit_data_upstream_counts_across_chunks_then_closes(proxy, recorder):
    proxy.add_toxic(type="limit_data", name="lim", stream="upstream", attributes={"bytes": 12})
    with connect(proxy) as s:
        s.sendall(b"01234567")  # 8 of 12 bytes
        assert s.recv(10) == b"ack"
        s.sendall(b"89abcdef")  # only 4 more pass, then the connection closes
        until_closed(s)
    deadline = time.monotonic() + 2
    while b"".join(recorder) != b"0123456789ab" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert b"".join(recorder) == b"0123456789ab"


@pytest.mark.parametrize("fault_ms, cut_after_ms", [(2000, 200), (300, 10_000)])
def test_lost_acks_request_arrives_ack_never_does(proxy, recorder, fault_ms, cut_after_ms):
    # The lost-acks fault: a downstream timeout toxic removed after the fault's duration.
    # Whether the cut or the removal comes first, the ack is lost and the connection ends.
    with connect(proxy) as s:
        proxy.add_toxic(type="timeout", stream="downstream", name="lost", attributes={"timeout": cut_after_ms})
        s.sendall(b"request")
        s.settimeout(fault_ms / 1000)
        try:
            got = s.recv(10)
        except socket.timeout:
            got = None  # still open when the fault ends
        proxy.destroy_toxic("lost")
        if got is None:
            got = until_closed(s)[0]
        assert got == b""
    assert recorder == [b"request"]


def test_api_errors_and_listing(api, proxy):
    with pytest.raises(ProxyExists):
        api.create(upstream=proxy.upstream, name=proxy.name)
    proxy.add_toxic(type="latency", name="dup", attributes={"latency": 1})
    with pytest.raises(ProxyExists):  # 409 for a toxic name too
        proxy.add_toxic(type="latency", name="dup", attributes={"latency": 1})
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="no_such_toxic", name="bad")
    with pytest.raises(NotFound):
        proxy.destroy_toxic("absent")
    assert set(proxy.toxics()) == {"dup"}
    assert proxy.name in api.proxies()
    api.reset()
    assert proxy.toxics() == {}
    assert api.version()


def test_disabling_closes_open_connections_and_enabling_listens_again_on_the_same_address(proxy, api):
    with connect(proxy) as s:
        roundtrip(s)
        proxy.disable()
        assert until_closed(s)[0] == b""
    proxy.enable()
    assert api.get_proxy(proxy.name).listen == proxy.listen
    with connect(proxy) as s:
        roundtrip(s)


def test_populate_keeps_an_unchanged_proxy_and_replaces_a_changed_one(api, proxy, echo):
    base = f"http://{APIConsumer.host}:{APIConsumer.port}"
    proxy.add_toxic(type="latency", name="kept", attributes={"latency": 1})
    same = {"name": proxy.name, "upstream": proxy.upstream, "listen": proxy.listen}
    with connect(proxy) as s:
        roundtrip(s)
        r = requests.post(f"{base}/populate", json=[same])
        assert r.status_code == 201 and [t["name"] for t in r.json()["proxies"][0]["toxics"]] == ["kept"]
        roundtrip(s)  # untouched: the connection still works
        r = requests.post(f"{base}/populate", json=[{**same, "listen": "127.0.0.1:0"}])
        assert r.status_code == 201 and r.json()["proxies"][0]["toxics"] == []  # a new proxy in its place
        assert until_closed(s)[0] == b""
    proxy.listen = r.json()["proxies"][0]["listen"]
    with connect(proxy) as s:
        roundtrip(s)


def test_disabled_proxy_refuses_connections(proxy):
    proxy.disable()
    with pytest.raises(OSError):
        connect(proxy).recv(1)
    proxy.enable()
    with connect(proxy) as s:
        roundtrip(s)


def test_update_moves_the_proxy_and_keeps_it_enabled(proxy, echo):
    # Toxiproxy's Proxy.Update: a new listen or upstream closes the connections, then restarts.
    base = f"http://{APIConsumer.host}:{APIConsumer.port}/proxies/{proxy.name}"
    with connect(proxy) as s:
        roundtrip(s)  # accepted and connected: a connection still queued would get RST instead
        r = requests.post(base, json={"listen": "127.0.0.1:0"})
        assert r.status_code == 200 and r.json()["enabled"] is True
        assert r.json()["listen"] != proxy.listen
        assert until_closed(s)[0] == b""
    proxy.listen = r.json()["listen"]
    with connect(proxy) as s:
        roundtrip(s)


def receive_all(sock, n, timeout=10) -> bytes:
    sock.settimeout(timeout)
    got = b""
    while len(got) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_bandwidth_caps_throughput(proxy):
    # Only the cap is asserted (a loaded machine only slows the transfer further); how close to the cap the
    # proxy gets is a performance figure, which a loaded machine would decide, not the code.
    rate_kb = 200  # KB/s
    payload = b"b" * (rate_kb * 1024)  # one second's worth at the cap
    with connect(proxy) as s:
        proxy.add_toxic(type="bandwidth", name="bw", attributes={"rate": rate_kb})
        t = time.monotonic()
        s.sendall(payload)
        assert receive_all(s, len(payload)) == payload
        elapsed = time.monotonic() - t
    measured = len(payload) / 1024 / elapsed
    assert measured <= 1.2 * rate_kb, f"{measured:.0f} KB/s for a cap of {rate_kb}"


def test_slicer_delivers_every_byte_in_pieces(proxy):
    payload = bytes(range(256)) * 40  # 10 KB
    with connect(proxy) as s:
        proxy.add_toxic(type="slicer", name="sl",
                        attributes={"average_size": 100, "size_variation": 20, "delay": 2000})
        t = time.monotonic()
        s.sendall(payload)
        got, reads = b"", 0
        s.settimeout(10)
        while len(got) < len(payload):
            got += s.recv(65536)
            reads += 1
        assert got == payload
    assert reads > 5  # arrived in many pieces, not one
    assert time.monotonic() - t >= 0.05  # ~100 pieces each way with a 2 ms delay


def test_slow_close_delays_the_close(proxy):
    proxy.add_toxic(type="slow_close", name="sc", stream="upstream", attributes={"delay": 300})
    with connect(proxy) as s:
        roundtrip(s)
        t = time.monotonic()
        s.shutdown(socket.SHUT_WR)  # client closes; the proxy waits before closing upstream and us
        assert s.recv(10) == b""
        assert time.monotonic() - t >= 0.25


def test_raw_http_routes_and_status_codes(api, echo):
    base = f"http://{APIConsumer.host}:{APIConsumer.port}"
    r = requests.post(f"{base}/proxies", json={"name": "raw", "upstream": echo, "listen": "127.0.0.1:0"})
    assert r.status_code == 201 and r.json()["enabled"] is True and r.json()["toxics"] == []
    assert requests.post(f"{base}/proxies", json={"name": "raw", "upstream": echo}).status_code == 409
    assert requests.post(f"{base}/proxies", json={"name": "noupstream"}).status_code == 400
    assert requests.get(f"{base}/proxies/raw").json()["name"] == "raw"
    assert requests.get(f"{base}/proxies/absent").status_code == 404
    r = requests.post(f"{base}/proxies/raw/toxics",
                      json={"name": "lat", "type": "latency", "stream": "upstream", "attributes": {"latency": 10}})
    assert r.status_code == 200 and r.json()["attributes"] == {"latency": 10, "jitter": 0}
    assert requests.get(f"{base}/proxies/raw/toxics/lat").json()["stream"] == "upstream"
    r = requests.post(f"{base}/proxies/raw/toxics/lat", json={"attributes": {"latency": 20}})
    assert r.status_code == 200 and r.json()["attributes"]["latency"] == 20
    r = requests.post(f"{base}/proxies/raw/toxics", json={"name": "x", "type": "latency", "toxicity": 2,
                                                          "attributes": {"latency": -1, "bogus": 3}})
    assert r.status_code == 200 and r.json()["attributes"] == {"latency": -1, "jitter": 0}  # taken as given
    assert requests.delete(f"{base}/proxies/raw/toxics/x").status_code == 204
    r = requests.post(f"{base}/proxies/raw/toxics", json={"name": "y", "type": "latency", "stream": "sideways"})
    assert (r.status_code, r.json()["error"]) == (400, "stream was invalid, can be either upstream or downstream")
    assert requests.get(f"{base}/proxies/raw/toxics/absent").status_code == 404
    assert requests.delete(f"{base}/proxies/raw/toxics/lat").status_code == 204
    assert requests.get(f"{base}/proxies/raw/toxics").json() == []
    r = requests.post(f"{base}/proxies/raw", json={"enabled": False})
    assert r.status_code == 200 and r.json()["enabled"] is False
    r = requests.post(f"{base}/populate", json=[{"name": "raw", "upstream": echo, "listen": r.json()["listen"]},
                                                 {"name": "pop2", "upstream": echo, "listen": "127.0.0.1:0"}])
    assert r.status_code == 201 and {p["name"] for p in r.json()["proxies"]} == {"raw", "pop2"}
    assert requests.delete(f"{base}/proxies/raw").status_code == 204
    assert requests.delete(f"{base}/proxies/pop2").status_code == 204
    assert requests.delete(f"{base}/proxies/raw").status_code == 404
