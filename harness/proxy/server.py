"""Embedded Toxiproxy stand-in: a TCP proxy driven by Toxiproxy's HTTP API.

Why it exists: the harness injects network faults through the Toxiproxy HTTP API,
but a `toxiproxy-server` binary cannot be installed on every machine (it ships
from GitHub releases or Docker images, not from the package registries). This
server speaks the part of the API that clients use (toxiproxy-python included),
so the same fault code drives either. When a real `toxiproxy-server` is on PATH
or in $TOXIPROXY_SERVER, the harness runs that instead (see cluster/toxiproxy.py).

The proxy data path runs on one asyncio loop; the HTTP API runs on the stdlib's
threaded HTTP server (no extra dependency for a handful of JSON routes) and hands
every request to the loop, so proxy state is only ever touched from one thread.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .. import __version__
from .link import Proxy
from .toxics import ToxicError, parse_toxic, update_toxic

VERSION = f"2.12.0-kafka-chaos-{__version__}"


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ProxyRegistry:
    """All proxies of one server. Every method runs on the asyncio loop."""

    def __init__(self) -> None:
        self.proxies: dict[str, Proxy] = {}

    def _get(self, name: str) -> Proxy:
        if name not in self.proxies:
            raise ApiError(404, "proxy not found")
        return self.proxies[name]

    async def create(self, body) -> dict:
        if not isinstance(body, dict):
            raise ApiError(400, "proxy must be a JSON object")
        name, upstream = body.get("name"), body.get("upstream")
        if not name or not upstream:
            raise ApiError(400, "missing required field: name and upstream")
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        proxy = Proxy(name, body.get("listen") or "127.0.0.1:0", upstream, body.get("enabled", True))
        if proxy.enabled:
            try:
                await proxy.start()
            except OSError as e:
                raise ApiError(500, f"listen {proxy.listen}: {e}") from e
        self.proxies[name] = proxy
        return proxy.to_json()

    async def update(self, name: str, body) -> dict:
        proxy = self._get(name)
        if not isinstance(body, dict):
            raise ApiError(400, "proxy update must be a JSON object")
        if "upstream" in body:
            proxy.upstream = body["upstream"]
        if "listen" in body and body["listen"] != proxy.listen:
            await proxy.set_enabled(False)
            proxy.listen = body["listen"]
        if "enabled" in body:
            await proxy.set_enabled(bool(body["enabled"]))
        return proxy.to_json()

    async def delete(self, name: str) -> None:
        await self._get(name).stop()
        del self.proxies[name]

    async def reset(self) -> None:
        for proxy in self.proxies.values():
            await proxy.set_enabled(True)
            for toxic in list(proxy.toxics):
                proxy.remove_toxic(toxic)

    async def add_toxic(self, name: str, body) -> dict:
        proxy = self._get(name)
        try:
            toxic = parse_toxic(body)
        except ToxicError as e:
            raise ApiError(400, str(e)) from e
        if toxic.name in proxy.toxics:
            raise ApiError(409, "toxic already exists")
        proxy.add_toxic(toxic)
        return toxic.to_json()

    def _toxic(self, name: str, toxic: str):
        proxy = self._get(name)
        if toxic not in proxy.toxics:
            raise ApiError(404, "toxic not found")
        return proxy, proxy.toxics[toxic]

    async def get_toxic(self, name: str, toxic: str) -> dict:
        return self._toxic(name, toxic)[1].to_json()

    async def update_toxic(self, name: str, toxic: str, body) -> dict:
        proxy, t = self._toxic(name, toxic)
        try:
            update_toxic(t, body if isinstance(body, dict) else {})
        except ToxicError as e:
            raise ApiError(400, str(e)) from e
        proxy.update_toxic(t)
        return t.to_json()

    async def delete_toxic(self, name: str, toxic: str) -> None:
        self._toxic(name, toxic)[0].remove_toxic(toxic)

    async def route(self, method: str, path: str, body) -> tuple[int, object]:
        """Map one API request to (status, JSON body); Toxiproxy 2.x routes and codes."""
        parts = [p for p in path.split("?")[0].split("/") if p]
        match (method, parts):
            case ("GET", ["version"]):
                return 200, {"version": VERSION}
            case ("POST", ["reset"]):
                await self.reset()
                return 204, None
            case ("GET", ["proxies"]):
                return 200, {n: p.to_json() for n, p in self.proxies.items()}
            case ("POST", ["proxies"]):
                return 201, await self.create(body)
            case ("POST", ["populate"]):
                return 201, {"proxies": await self.populate(body)}
            case ("GET", ["proxies", name]):
                return 200, self._get(name).to_json()
            case ("POST" | "PATCH", ["proxies", name]):
                return 200, await self.update(name, body)
            case ("DELETE", ["proxies", name]):
                await self.delete(name)
                return 204, None
            case ("GET", ["proxies", name, "toxics"]):
                return 200, [t.to_json() for t in self._get(name).toxics.values()]
            case ("POST", ["proxies", name, "toxics"]):
                return 200, await self.add_toxic(name, body)
            case ("GET", ["proxies", name, "toxics", toxic]):
                return 200, await self.get_toxic(name, toxic)
            case ("POST" | "PATCH", ["proxies", name, "toxics", toxic]):
                return 200, await self.update_toxic(name, toxic, body)
            case ("DELETE", ["proxies", name, "toxics", toxic]):
                await self.delete_toxic(name, toxic)
                return 204, None
        raise ApiError(404, "not found" if method in ("GET", "POST", "DELETE", "PATCH") else "method not allowed")

    async def populate(self, body) -> list[dict]:
        if not isinstance(body, list):
            raise ApiError(400, "populate takes a JSON list of proxies")
        out = []
        for item in body:
            existing = self.proxies.get(item.get("name")) if isinstance(item, dict) else None
            if existing is not None:
                out.append(await self.update(existing.name, item))
            else:
                out.append(await self.create(item))
        return out


def _handler(registry: ProxyRegistry, loop: asyncio.AbstractEventLoop):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw.strip() else None
            except ValueError:
                self._send(400, {"error": "bad request body", "status": 400})
                return
            future = asyncio.run_coroutine_threadsafe(registry.route(self.command, self.path, body), loop)
            try:
                status, payload = future.result(timeout=30)
            except ApiError as e:
                status, payload = e.status, {"error": str(e), "status": e.status}
            self._send(status, payload)

        def _send(self, status: int, payload) -> None:
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_PATCH = _serve

        def log_message(self, *args) -> None:  # keep the harness's output clean
            pass

    return Handler


def serve(host: str, port: int, ready=None) -> None:
    """Run the API on host:port and the proxies on this thread's loop until SIGINT/SIGTERM."""
    loop = asyncio.new_event_loop()
    registry = ProxyRegistry()
    httpd = ThreadingHTTPServer((host, port), _handler(registry, loop))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if ready:
        ready(httpd.server_address[1])
    try:
        loop.run_until_complete(stop.wait())
    finally:
        httpd.shutdown()
        for proxy in list(registry.proxies.values()):
            loop.run_until_complete(proxy.stop())
        loop.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m harness.proxy", description="Toxiproxy-API-compatible TCP proxy")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8474)
    args = ap.parse_args(argv)
    serve(args.host, args.port, ready=lambda p: print(f"API listening on {args.host}:{p}", flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
