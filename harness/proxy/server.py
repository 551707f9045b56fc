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
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .registry import ApiError, ProxyRegistry


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
