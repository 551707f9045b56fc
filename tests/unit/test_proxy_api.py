"""The embedded proxy's HTTP API refuses what it should, always with an answer: each test
sends requests to a real `python -m harness.proxy` on a free loopback port and checks the
status code and the JSON error body {"error": ..., "status": ...}, labelled as Toxiproxy labels
it (Go's http.Error: text/plain). Where Toxiproxy decides (what is refused, with which words),
tests/integration/test_proxy_conformance.py checks both side by side; here are the embedded
proxy's own guards (who may call it, where proxies may listen, malformed HTTP, body limits)."""

import http.client
import json
import os
import socket
import sys
from contextlib import contextmanager

import pytest
import requests

from harness import ports, procs


@contextmanager
def embedded_api(tmp_path, host="127.0.0.1"):
    """A running embedded server; yields its port, and stops it on exit, checking it survived
    every request and then stops cleanly on SIGTERM."""
    env = {**os.environ, "KAFKA_CHAOS_RUN": str(tmp_path)}
    for _ in range(3):  # the free port may be taken before the server binds it
        port = ports.free_port()
        log = tmp_path / f"proxy-{port}.log"
        proc = procs.spawn([sys.executable, "-m", "harness.proxy", "--host", host, "--port", str(port)], log, env=env)
        try:
            procs.wait_for_port("127.0.0.1", port, timeout=15, proc=proc)
            break
        except RuntimeError:
            continue
    else:
        pytest.fail("the embedded proxy did not start")
    try:
        yield port
        assert requests.get(f"http://127.0.0.1:{port}/version", timeout=5).status_code == 200, "server died"
    finally:
        procs.stop(proc)
    assert proc.returncode == 0 and "Traceback" not in log.read_text(), log.read_text()


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    with embedded_api(tmp_path_factory.mktemp("api")) as port:
        yield port


@pytest.fixture
def base(port):
    yield f"http://127.0.0.1:{port}"
    for name in requests.get(f"http://127.0.0.1:{port}/proxies").json():
        requests.delete(f"http://127.0.0.1:{port}/proxies/{name}")


ERROR_TYPES = ("text/plain; charset=utf-8", "application/json")  # apiError's label; populate's


def refused(response, status: int, says: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] in ERROR_TYPES
    body = response.json()
    assert body["status"] == status and says in body["error"], body


def raw(port: int, request: bytes, half_close: bool = False) -> tuple[int, dict]:
    """Send bytes as they are; the status and JSON body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        answer = http.client.HTTPResponse(s)
        answer.begin()
        assert answer.getheader("Content-Type") in ERROR_TYPES + ("application/json;charset=utf-8",)
        return answer.status, json.loads(answer.read())


def post(port: int, path: str, body: bytes, headers: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
            .encode() + body)


# -- malformed bodies -------------------------------------------------------

@pytest.mark.parametrize("body, says", [
    (b"{", "bad request body: Expecting property name"),
    (b"[1, 2]", "bad request body: json: cannot unmarshal array into Go value of type toxiproxy.Proxy"),
    (b'"proxy"', "bad request body: json: cannot unmarshal string into Go value of type toxiproxy.Proxy"),
    (b'{"name": NaN}', "NaN is not JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"name": "\xe9"}', "not UTF-8"),  # Latin-1, not UTF-8
    (b"[" * 100_000, "bad request body"),  # deeper than Python's stack
])
def test_body_that_is_not_a_json_object_is_400(port, base, body, says):
    status, answer = raw(port, post(port, "/proxies", body))
    assert (status, answer["status"]) == (400, 400) and says in answer["error"], answer


@pytest.mark.parametrize("field, value, status, says", [
    ("name", 5, 400, "cannot unmarshal number into Go struct field Proxy.name of type string"),
    ("listen", [], 400, "cannot unmarshal array into Go struct field Proxy.listen of type string"),
    ("listen", "nowhere", 500, "address nowhere: missing port in address"),
    ("enabled", "yes", 400, "cannot unmarshal string into Go struct field Proxy.enabled of type bool"),
])
def test_proxy_field_of_the_wrong_type_is_refused(base, field, value, status, says):
    body = {"name": "p", "upstream": "127.0.0.1:9", field: value}
    refused(requests.post(f"{base}/proxies", json=body), status, says)
    assert requests.get(f"{base}/proxies").json() == {}
    requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9"}).raise_for_status()
    refused(requests.post(f"{base}/proxies/p", json={field: value}), status, says)


def test_empty_upstream_is_missing_and_empty_listen_is_loopback(base):
    # Toxiproxy would listen on every address for ""; the embedded proxy stays on loopback (guard.py)
    refused(requests.post(f"{base}/proxies", json={"name": "p", "upstream": ""}), 400,
            "missing required field: upstream")
    r = requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9", "listen": ""})
    assert r.status_code == 201 and r.json()["listen"].startswith("127.0.0.1:")


GO = "bad request body: json: cannot unmarshal "


@pytest.mark.parametrize("toxic, says", [
    ({"type": "latency", "attributes": {"latency": "10"}},
     GO + "string into Go struct field LatencyToxic.attributes.latency of type int64"),
    ({"type": "latency", "attributes": {"latency": 1.5}}, GO + "number 1.5 into Go struct field"),
    ({"type": "latency", "attributes": {"latency": 2**63}}, GO + "number 9223372036854775808 into Go struct field"),
    ({"type": "latency", "attributes": [10]}, GO + "array into Go struct field ToxicWrapper.attributes of type "
                                                   "toxics.NoopToxic"),
    ({"type": "latency", "toxicity": "1"}, GO + "string into Go struct field ToxicWrapper.toxicity of type float32"),
    ({"type": "latency", "name": 5}, GO + "number into Go struct field ToxicWrapper.name of type string"),
    ({"type": ["latency"]}, GO + "array into Go struct field ToxicWrapper.type of type string"),
    ({"type": "latency", "stream": 1}, GO + "number into Go struct field ToxicWrapper.stream of type string"),
    ([{"type": "latency"}], GO + "array into Go value of type toxics.ToxicWrapper"),
])
def test_toxic_field_of_the_wrong_type_is_400(base, toxic, says):
    requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9"}).raise_for_status()
    refused(requests.post(f"{base}/proxies/p/toxics", json=toxic), 400, says)
    assert requests.get(f"{base}/proxies/p/toxics").json() == []


def test_toxic_update_checks_everything_before_changing_anything(base):
    requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9"}).raise_for_status()
    requests.post(f"{base}/proxies/p/toxics", json={"name": "lat", "type": "latency"}).raise_for_status()
    refused(requests.post(f"{base}/proxies/p/toxics/lat", json=[]), 400, GO + "array into Go value")
    refused(requests.post(f"{base}/proxies/p/toxics/lat", json={"toxicity": 0.5, "attributes": {"latency": 0.5}}),
            400, GO + "number 0.5 into Go struct field LatencyToxic.attributes.latency")
    assert requests.get(f"{base}/proxies/p/toxics/lat").json()["toxicity"] == 1.0


def test_populate_checks_every_proxy_before_creating_any(base):
    refused(requests.post(f"{base}/populate", json={"name": "p"}), 400, GO + "object into Go value of type []struct")
    refused(requests.post(f"{base}/populate", json=[{"name": "a", "upstream": "127.0.0.1:9"}, "b"]),
            400, GO + "string into Go value of type struct { toxiproxy.Proxy; Enabled *bool")
    refused(requests.post(f"{base}/populate", json=[{"name": "a", "upstream": "127.0.0.1:9"}, {"name": "b"}]),
            400, "missing required field: upstream at proxy 2")
    assert requests.get(f"{base}/proxies").json() == {}


# -- malformed requests -----------------------------------------------------

@pytest.mark.parametrize("length, says", [
    ("abc", "Content-Length must be one non-negative integer"),
    ("-5", "Content-Length must be one non-negative integer"),
    ("5\r\nContent-Length: 6", "Content-Length must be one non-negative integer"),
])
def test_bad_content_length_is_400(port, length, says):
    request = f"POST /proxies HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {length}\r\n\r\n{{}}"
    assert raw(port, request.encode()) == (400, {"error": f"bad request: {says}", "status": 400})


def test_oversized_body_is_413_without_reading_it(port):
    request = f"POST /proxies HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {2 << 20}\r\n\r\n"
    assert raw(port, request.encode()) == (413, {"error": "request body over 1048576 bytes", "status": 413})


def test_body_shorter_than_its_length_is_400(port):
    request = f"POST /proxies HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 10\r\n\r\n{{}}"
    status, answer = raw(port, request.encode(), half_close=True)
    assert status == 400 and answer["error"] == "bad request: body shorter than its Content-Length"


def test_chunked_body_is_411(port):
    request = (f"POST /proxies HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n\r\n"
               "2\r\n{}\r\n0\r\n\r\n")
    assert raw(port, request.encode())[0] == 411


@pytest.mark.parametrize("request_line, status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /version HTTP/9.9\r\n\r\n", 505),
    (b"GET /" + b"x" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"BREW /version HTTP/1.1\r\n\r\n", 501),
    (b"GET /version HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", 431),
])
def test_unparsable_request_gets_a_json_error(port, request_line, status):
    got, answer = raw(port, request_line)
    assert got == status and answer["status"] == status


def test_unknown_route_is_404_and_wrong_method_405_as_toxiproxys_router_answers(base):
    for r in (requests.get(f"{base}/nope"), requests.get(f"{base}/proxies/p/toxics/t/extra")):
        assert (r.status_code, r.headers["Content-Type"], r.text) == (404, ERROR_TYPES[0], "404 page not found\n")
    for r in (requests.put(f"{base}/proxies"), requests.delete(f"{base}/version")):
        assert (r.status_code, r.text) == (405, "") and "Content-Type" not in r.headers
    refused(requests.get(f"{base}/proxies/absent"), 404, "proxy not found")


# -- who may call the API ---------------------------------------------------

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def test_browser_user_agent_is_refused_as_toxiproxy_does(base):
    r = requests.get(f"{base}/proxies", headers={"User-Agent": BROWSER})
    assert (r.status_code, r.headers["Content-Type"], r.text) == (403, ERROR_TYPES[0], "User agent not allowed\n")
    assert requests.get(f"{base}/proxies", headers={"User-Agent": "Wget/2.1"}).status_code == 200


@pytest.mark.parametrize("headers", [
    {"User-Agent": BROWSER, "Origin": "http://attacker.example"},
    {"User-Agent": "SomeBrowser/1.0", "Origin": "http://attacker.example"},  # not "Mozilla/": Origin gives it away
    {"User-Agent": "SomeBrowser/1.0", "Sec-Fetch-Mode": "no-cors"},
])
def test_cross_origin_simple_post_is_refused_before_it_does_anything(base, headers):
    requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9"}).raise_for_status()
    requests.post(f"{base}/proxies/p/toxics", json={"name": "t", "type": "latency"}).raise_for_status()
    page = {**headers, "Content-Type": "text/plain"}  # what a <form> or no-cors fetch() can send unasked
    assert requests.post(f"{base}/reset", headers=page).status_code == 403
    r = requests.post(f"{base}/proxies", headers=page, data='{"name": "q", "upstream": "127.0.0.1:9"}')
    assert r.status_code == 403  # in Toxiproxy's words (plain text) for a browser, else JSON
    assert list(requests.get(f"{base}/proxies").json()) == ["p"]
    assert [t["name"] for t in requests.get(f"{base}/proxies/p/toxics").json()] == ["t"]


@pytest.mark.parametrize("host, allowed", [
    ("127.0.0.1:{port}", True),
    ("localhost:{port}", True),
    ("LocalHost:{port}", True),
    ("[::1]:{port}", True),
    ("attacker.example:{port}", False),  # a DNS-rebinding page sends its own name
    ("127.0.0.1.nip.io:{port}", False),
    ("localhost:1{port}", False),
    ("127.0.0.1", False),  # port 80
    ("::1:{port}", False),
    ("", False),
])
def test_host_header_must_name_this_server(port, base, host, allowed):
    r = requests.get(f"{base}/proxies", headers={"Host": host.format(port=port)})
    if allowed:
        assert r.status_code == 200
    else:
        refused(r, 403, "is not this server's address")


def test_missing_host_is_allowed_for_http_1_0_only(port):
    assert raw(port, b"GET /version HTTP/1.0\r\n\r\n")[0] == 200
    assert raw(port, b"GET /version HTTP/1.1\r\n\r\n") == (400, {"error": "missing Host header", "status": 400})
    two = f"GET /version HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: attacker.example\r\n\r\n"
    assert raw(port, two.encode()) == (400, {"error": "more than one Host header", "status": 400})


def test_toxiproxy_python_passes_the_checks(port, base):
    # toxiproxy-python sends requests' own User-Agent and Host; the harness drives the API with it.
    from toxiproxy.api import APIConsumer
    from toxiproxy.server import Toxiproxy

    APIConsumer.host, APIConsumer.port = "127.0.0.1", port
    api = Toxiproxy()
    proxy = api.create(upstream="127.0.0.1:9", name="tp")
    proxy.add_toxic(type="timeout", name="lost", attributes={"timeout": 100})
    assert list(proxy.toxics()) == ["lost"] and "tp" in api.proxies()
    proxy.destroy_toxic("lost")
    proxy.destroy()
    assert api.version()


# -- where proxies may listen -----------------------------------------------

@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0"])
def test_proxy_on_a_loopback_api_cannot_listen_on_the_network(base, listen):
    says = f"listen {listen} is not a loopback address"
    refused(requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9", "listen": listen}),
            400, says)
    refused(requests.post(f"{base}/populate", json=[{"name": "p", "upstream": "127.0.0.1:9", "listen": listen}]),
            400, f"proxy 1: {says}")
    assert requests.get(f"{base}/proxies").json() == {}
    before = requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9"}).json()["listen"]
    refused(requests.post(f"{base}/proxies/p", json={"listen": listen}), 400, says)
    assert requests.get(f"{base}/proxies/p").json()["listen"] == before


@pytest.mark.parametrize("listen, host", [("127.0.0.1:0", "127.0.0.1"), ("localhost:0", "localhost"),
                                          (":0", "127.0.0.1")])
def test_proxy_on_a_loopback_api_may_listen_on_loopback(base, listen, host):
    r = requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9", "listen": listen})
    assert r.status_code == 201 and r.json()["listen"].rsplit(":", 1)[0] == host


def test_api_started_on_all_addresses_lets_proxies_listen_there(tmp_path):
    with embedded_api(tmp_path, host="0.0.0.0") as port:
        base = f"http://127.0.0.1:{port}"
        r = requests.post(f"{base}/proxies", json={"name": "p", "upstream": "127.0.0.1:9", "listen": "0.0.0.0:0"})
        assert r.status_code == 201 and r.json()["listen"].startswith("0.0.0.0:")
        # Any IP literal names this server then; a name still has to be localhost.
        assert requests.get(f"{base}/version", headers={"Host": f"10.1.2.3:{port}"}).status_code == 200
        refused(requests.get(f"{base}/version", headers={"Host": f"attacker.example:{port}"}), 403, "not this server")
        requests.delete(f"{base}/proxies/p")
