"""The HTTP API side by side: the same requests to the embedded proxy and to a real toxiproxy-server, in the
same test, must get the same status, the same Content-Type and the same body (JSON compared as values, listen
ports, which each server picks, as "PORT"). Known and kept differences are named in SCRIPT's comments and in
harness/proxy/CONFORMANCE.md. Skips, saying why, without a toxiproxy-server on PATH or in $TOXIPROXY_SERVER."""

import json
import re

import pytest
import requests

from harness.cluster.toxiproxy import ToxiproxyServer, find_toxiproxy_server

pytestmark = pytest.mark.skipif(find_toxiproxy_server() is None,
                                reason="no toxiproxy-server on PATH or in $TOXIPROXY_SERVER: nothing to compare with")
UP = "127.0.0.1:9"

# (method, path, body). Left out on purpose: GET /version (each names itself), bodies that are not JSON (Python's
# and Go's decoders word the error differently; both 400 "bad request body: ..."), listen "" (Toxiproxy listens on
# every address, the embedded proxy on loopback only).
SCRIPT = [
    ("GET", "/proxies", None),
    ("POST", "/proxies", {"name": "p", "upstream": UP, "listen": "127.0.0.1:0"}),
    ("POST", "/proxies", {"name": "p", "upstream": UP}),  # 409
    ("POST", "/proxies", {"name": "q"}),
    ("POST", "/proxies", {"upstream": UP}),
    ("POST", "/proxies", [1, 2]),
    ("POST", "/proxies", {"name": 5, "upstream": UP}),
    ("POST", "/proxies", {"name": "r", "upstream": UP, "listen": []}),
    ("POST", "/proxies", {"name": "r", "upstream": UP, "enabled": "yes"}),
    ("POST", "/proxies", {"name": "r", "upstream": UP, "listen": "nowhere"}),
    ("POST", "/proxies", {"name": "r", "upstream": "127.0.0.1:99999", "listen": "127.0.0.1:0"}),  # dialled later
    ("POST", "/proxies", {"Name": "s", "UPSTREAM": UP, "listen": "127.0.0.1:0", "enabled": False}),
    ("GET", "/proxies/s", None),
    ("GET", "/proxies/absent", None),
    ("POST", "/proxies/absent", {"enabled": False}),
    ("DELETE", "/proxies/absent", None),
    ("POST", "/proxies/p/toxics", {"name": "lat", "type": "latency", "attributes": {"latency": 10}}),
    ("POST", "/proxies/p/toxics", {"name": "lat", "type": "latency"}),  # 409
    ("POST", "/proxies/p/toxics", {"type": "latency"}),  # named latency_downstream
    ("POST", "/proxies/p/toxics", {"type": "latency", "stream": "upstream", "toxicity": 0.5}),
    ("POST", "/proxies/p/toxics", {"name": "bad", "type": "nosuch"}),
    ("POST", "/proxies/p/toxics", {"name": "bad", "type": "nosuch", "stream": "sideways"}),  # stream first
    ("POST", "/proxies/p/toxics", {"name": "neg", "type": "latency", "toxicity": 2,
                                   "attributes": {"latency": -1, "bogus": 1, "JITTER": 4}}),
    ("POST", "/proxies/p/toxics", {"name": "str", "type": "latency", "attributes": {"latency": "10"}}),
    ("POST", "/proxies/p/toxics", {"name": "flt", "type": "latency", "attributes": {"latency": 1.5}}),
    ("POST", "/proxies/p/toxics", {"name": "big", "type": "latency", "attributes": {"latency": 2**63}}),
    ("POST", "/proxies/p/toxics", {"name": "arr", "type": "latency", "attributes": [10]}),
    ("POST", "/proxies/p/toxics", {"name": 5, "type": "latency"}),
    ("POST", "/proxies/p/toxics", {"type": ["latency"]}),
    ("POST", "/proxies/p/toxics", {"type": "latency", "toxicity": "1"}),
    ("POST", "/proxies/p/toxics", [{"type": "latency"}]),
    ("POST", "/proxies/p/toxics", {"type": "latency", "stream": "UPSTREAM", "name": "up"}),
    *[("POST", "/proxies/p/toxics", {"name": t, "type": t}) for t in
      ("timeout", "reset_peer", "limit_data", "slicer", "bandwidth", "slow_close")],  # each type's defaults
    ("GET", "/proxies/p/toxics", None),  # upstream chain first, then downstream
    ("GET", "/proxies/p/toxics/lat", None),
    ("GET", "/proxies/p/toxics/absent", None),
    ("POST", "/proxies/p/toxics/lat", {"attributes": {"latency": 20}}),
    ("POST", "/proxies/p/toxics/lat", {"toxicity": 0.25}),
    ("POST", "/proxies/p/toxics/lat", {"type": "timeout", "stream": "upstream", "name": "x"}),  # ignored
    ("POST", "/proxies/p/toxics/lat", []),
    ("POST", "/proxies/p/toxics/lat", {"toxicity": 0.5, "attributes": {"latency": 0.5}}),  # nothing changes
    ("PATCH", "/proxies/p/toxics/lat", {"attributes": {"jitter": 5}}),
    ("POST", "/proxies/p/toxics/absent", {"attributes": {"latency": 20}}),
    ("DELETE", "/proxies/p/toxics/absent", None),
    ("DELETE", "/proxies/p/toxics/neg", None),
    ("GET", "/proxies/p", None),
    ("POST", "/proxies/p", {"enabled": False}),
    ("POST", "/proxies/p", {"enabled": True}),
    ("PATCH", "/proxies/p", {"upstream": "127.0.0.1:10"}),
    ("POST", "/proxies/p", {"name": "renamed"}),
    ("POST", "/proxies/p", {"listen": "nowhere"}),
    ("POST", "/populate", {"name": "t"}),
    ("POST", "/populate", [{"name": "t", "upstream": UP}, "u"]),
    ("POST", "/populate", [{"name": "t", "upstream": UP}, {"name": "u"}]),
    ("POST", "/populate", [{"upstream": UP}]),
    ("POST", "/populate", []),
    ("POST", "/populate", [{"name": "t", "upstream": UP, "listen": "127.0.0.1:0", "enabled": False}]),
    ("GET", "/proxies", None),
    ("POST", "/reset", None),
    ("GET", "/proxies", None),  # every toxic gone, every proxy enabled
    ("GET", "/nosuch", None),
    ("GET", "/proxies/p/toxics/lat/extra", None),
    ("PUT", "/proxies", None),
    ("DELETE", "/version", None),
    ("GET", "/proxies", {"User-Agent": "Mozilla/5.0"}),  # headers, not a body: Toxiproxy refuses browsers
    ("DELETE", "/proxies/p", None),
    ("DELETE", "/proxies/p", None),
]
PORT = re.compile(r":[0-9]+$")


@pytest.fixture
def servers(tmp_path):
    """{"embedded": base URL, "toxiproxy-server": base URL}"""
    started = []
    try:
        for program in (None, find_toxiproxy_server()):
            server = ToxiproxyServer(tmp_path / ("real" if program else "embedded") / "toxiproxy.log", program)
            started.append(server)
            server.base = f"http://127.0.0.1:{server.start().port}"
        yield {server.kind: server.base for server in started}
    finally:
        for server in started:
            server.stop()


def ports_hidden(value):
    """The value with every listen address's port (each server picks its own) written as PORT."""
    if isinstance(value, dict):
        return {k: PORT.sub(":PORT", v) if k == "listen" and isinstance(v, str) else ports_hidden(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [ports_hidden(v) for v in value]
    return value


def answer(base, method, path, body):
    browser = method == "GET" and path == "/proxies" and isinstance(body, dict)  # SCRIPT's headers, not a body
    kwargs = {"headers": body} if browser else ({} if body is None else {"json": body})
    r = requests.request(method, base + path, timeout=10, **kwargs)
    try:
        content = ports_hidden(json.loads(r.text))
    except ValueError:
        content = r.text
    return r.status_code, r.headers.get("Content-Type"), content


def test_every_request_gets_the_same_answer_from_both(servers):
    differences = []
    for method, path, body in SCRIPT:
        embedded = answer(servers["embedded"], method, path, body)
        real = answer(servers["toxiproxy-server"], method, path, body)
        if embedded != real:
            differences.append(f"{method} {path} {json.dumps(body)}\n  embedded: {embedded}\n  toxiproxy: {real}")
    assert not differences, "\n".join(differences)
