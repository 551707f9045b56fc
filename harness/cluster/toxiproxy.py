"""The Toxiproxy server the run uses, and a small client over toxiproxy-python.

The local backends start one Toxiproxy API server per run, chosen by `cluster.proxy`:
`embedded` (the default) runs the harness's own stand-in (harness.proxy) as its own process,
so proxying never competes with the producer for the GIL; `toxiproxy` runs a real
`toxiproxy-server` ($TOXIPROXY_SERVER, else on PATH), and any other value is the path of one.
Either is a child tied to the run (procs.spawn) on a free loopback port, driven through
toxiproxy-python.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import NotFound
from toxiproxy.proxy import Proxy
from toxiproxy.server import Toxiproxy

from .. import ports, procs

EMBEDDED, REAL = "embedded", "toxiproxy"


def find_toxiproxy_server() -> str | None:
    """A real toxiproxy-server: $TOXIPROXY_SERVER, else the one on PATH."""
    return os.environ.get("TOXIPROXY_SERVER") or shutil.which("toxiproxy-server")


def toxiproxy_server_for(proxy: str) -> str | None:
    """The toxiproxy-server program `cluster.proxy` names: None for embedded (and for `toxiproxy` when
    none is found); for a path, the path (checked by proxy_problem)."""
    if proxy == EMBEDDED:
        return None
    if proxy == REAL:
        return find_toxiproxy_server()
    return shutil.which(proxy) or proxy


def proxy_problem(proxy: str) -> str | None:
    """Why `cluster.proxy` cannot run on this machine (exit 2, nothing started), or None."""
    if proxy == EMBEDDED:
        return None
    program = toxiproxy_server_for(proxy)
    if program is None:
        return ("cluster.proxy: toxiproxy needs a toxiproxy-server on PATH or in $TOXIPROXY_SERVER "
                "(or give its path as cluster.proxy, or use proxy: embedded)")
    if not (os.path.isfile(program) and os.access(program, os.X_OK)):
        named = "$TOXIPROXY_SERVER" if proxy == REAL else "cluster.proxy"
        return f"cluster.proxy: {program} ({named}) is not an executable file"
    return None


def version_number(answer: str) -> str:
    """The version in a GET /version answer: Toxiproxy 2.x sends {"version": "..."}, older ones plain text."""
    try:
        return str(json.loads(answer)["version"])
    except (ValueError, TypeError, KeyError):
        return answer.strip()


class ToxiproxyServer:
    """A Toxiproxy API server process on a free loopback port: the embedded stand-in when `program` is
    None, else that toxiproxy-server."""

    def __init__(self, log: Path, program: str | None = None):
        self.log = log  # the server's output
        self.program = program
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.kind = "toxiproxy-server" if program else EMBEDDED
        self.version = ""  # as its API reports it, once started

    def start(self) -> "ToxiproxyClient":
        for _ in range(3):  # the free port may be taken before the server binds it
            self.port = ports.free_port()
            if self.program:
                cmd = [self.program, "-host", "127.0.0.1", "-port", str(self.port)]
            else:
                cmd = [sys.executable, "-m", "harness.proxy", "--host", "127.0.0.1", "--port", str(self.port)]
            self.proc = procs.spawn(cmd, self.log)
            try:
                procs.wait_for_port("127.0.0.1", self.port, timeout=15, proc=self.proc)
            except (RuntimeError, TimeoutError):
                procs.stop(self.proc)
                continue
            client = ToxiproxyClient("127.0.0.1", self.port)
            self.version = version_number(client.version())
            return client
        raise RuntimeError(f"the {self.kind} Toxiproxy server did not start; see {self.log}")

    @property
    def description(self) -> str:
        """For the run's cluster line: `embedded`, or `toxiproxy-server VERSION`."""
        if self.kind == EMBEDDED:
            return EMBEDDED
        return f"{self.kind} {self.version}".strip()

    def stop(self) -> None:
        procs.stop(self.proc)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class ToxiproxyClient:
    """What the harness asks of any Toxiproxy API, through toxiproxy-python.

    toxiproxy-python keeps its address in class attributes; every call sets them
    first, so one harness process can talk to one server at a time (all it needs).
    """

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self._proxies: dict[str, Proxy] = {}

    @classmethod
    def from_url(cls, url: str) -> "ToxiproxyClient":
        """http://host:port of a Toxiproxy API (the scheme may be left out; spec.py checked the form)."""
        parsed = urlsplit(url if "://" in url else f"http://{url}")
        return cls(parsed.hostname, parsed.port or 8474)

    def answers(self) -> bool:
        try:
            self.version()
            return True
        except Exception:  # connection refused, timeouts, bad responses: all mean "not answering"
            return False

    def attach(self, name: str) -> str:
        """Use an existing proxy (made by a config file or by the user); returns its listen address."""
        proxies = self._api().proxies()
        if name not in proxies:
            raise RuntimeError(f"the Toxiproxy API at {self.host}:{self.port} has no proxy {name!r} "
                               f"(it has: {', '.join(sorted(proxies)) or 'none'})")
        proxy = self._proxies[name] = proxies[name]
        return proxy.listen

    def _api(self) -> Toxiproxy:
        APIConsumer.host, APIConsumer.port = self.host, self.port
        return Toxiproxy()

    def version(self) -> str:
        return self._api().version().decode()

    def create_proxy(self, name: str, upstream: str, listen: str = "127.0.0.1:0") -> str:
        """Create a proxy; returns the address it listens on."""
        proxy = self._api().create(upstream=upstream, name=name, listen=listen)
        self._proxies[name] = proxy
        return proxy.listen

    def _proxy(self, name: str) -> Proxy:
        """A proxy this client made or attached; any other one the server has is attached on first use."""
        if name not in self._proxies:
            self.attach(name)
        return self._proxies[name]

    def add_toxic(self, proxy: str, name: str, type: str, stream: str = "downstream",
                  attributes: dict | None = None, toxicity: float = 1.0) -> None:
        self._api()
        self._proxy(proxy).add_toxic(name=name, type=type, stream=stream, toxicity=toxicity,
                                     attributes=attributes or {})

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._api()
        try:
            self._proxy(proxy).destroy_toxic(name)
        except NotFound:
            pass

    def toxics(self, proxy: str) -> list[str]:
        self._api()
        return sorted(self._proxy(proxy).toxics())

    def kafka_requests(self, proxy: str) -> dict:
        """The embedded proxy's kafka_hold counts for one proxy so far (held, dropped, unparsed); its own route."""
        self._api()
        return APIConsumer.get(f"/proxies/{proxy}/kafka").json()

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        self._api()
        (self._proxy(proxy).enable if enabled else self._proxy(proxy).disable)()

    def reset(self) -> None:
        """Remove every toxic and enable every proxy."""
        self._api().reset()
