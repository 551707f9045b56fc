"""Embedded Toxiproxy stand-in: a TCP proxy driven by Toxiproxy's HTTP API.

Why it exists: the harness injects network faults through the Toxiproxy HTTP API,
but a `toxiproxy-server` binary cannot be installed on every machine (it ships
from GitHub releases or Docker images, not from the package registries). This
server speaks the part of the API that clients use (toxiproxy-python included),
so the same fault code drives either. It is the default; `cluster.proxy: toxiproxy`
runs a real toxiproxy-server instead (see cluster/toxiproxy.py).

The proxy data path runs on one asyncio loop; the HTTP API runs on the stdlib's
threaded HTTP server (no extra dependency for a handful of JSON routes) and hands
every request to the loop, so proxy state is only ever touched from one thread.
Before a request is read, guard.py decides whether it may be served at all (no
browsers, Host must name this server); registry.py checks what it asks for.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import re
import signal
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .guard import BROWSER_REFUSAL, Guard
from .registry import ApiError, PlainError, ProxyRegistry, go_json


MAX_BODY = 1 << 20  # bytes; Toxiproxy's largest bodies (populate) are a few KB
READ_TIMEOUT = 15  # seconds a client may take per read, as Toxiproxy's ReadTimeout
CALL_TIMEOUT = 30  # seconds the loop may take to answer, as Toxiproxy's WriteTimeout
CONTENT_LENGTH = re.compile(r"[0-9]+")


def parse_body(raw: bytes):
    """The request's JSON value (None when there is no body), or ApiError 400."""
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ApiError(400, f"bad request body: not UTF-8 ({e.reason} at byte {e.start})") from e
    try:
        return json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError) as e:  # RecursionError: nesting deeper than Python's stack
        raise ApiError(400, f"bad request body: {e or 'nested too deeply'}") from e


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")


def _handler(registry: ProxyRegistry, loop: asyncio.AbstractEventLoop):
    class Handler(BaseHTTPRequestHandler):
        """Every request gets exactly one answer, a JSON error when anything is wrong with it."""

        protocol_version = "HTTP/1.1"
        # A request line without a version (HTTP/0.9, or garbage) would get a body without
        # status line or headers; answer it as HTTP/1.1 so the client can read the error.
        default_request_version = "HTTP/1.1"
        timeout = READ_TIMEOUT

        def _serve(self) -> None:
            try:
                refusal = self.server.guard.refusal(self.headers, self.request_version)
                if refusal is not None:
                    self.close_connection = True  # its body is left unread
                    status, why = refusal
                    # Toxiproxy's own refusal (a browser) in its own words; the others are the embedded proxy's
                    raise PlainError(status, why + "\n") if why == BROWSER_REFUSAL else ApiError(status, why)
                body = parse_body(self._read_body())
                status, payload = self._call(registry.route(self.command, self.path, body))
            except ApiError as e:
                self._send_bytes(e.status, *e.answer())
                return
            # Toxiproxy's Version handler labels its JSON with a charset, its other handlers do not
            version = self.command == "GET" and self.path.split("?")[0].rstrip("/") == "/version"
            self._send(status, payload, "application/json;charset=utf-8" if version else "application/json")

        def _read_body(self) -> bytes:
            if "Transfer-Encoding" in self.headers:
                self.close_connection = True  # the body's end is unknown to us
                raise ApiError(411, "chunked request bodies are not supported; send Content-Length")
            lengths = set(self.headers.get_all("Content-Length") or ["0"])
            if len(lengths) > 1 or not CONTENT_LENGTH.fullmatch(length := lengths.pop().strip()):
                self.close_connection = True
                raise ApiError(400, "bad request: Content-Length must be one non-negative integer")
            if int(length) > MAX_BODY:
                self.close_connection = True  # not read: nothing after it on this connection can be parsed
                raise ApiError(413, f"request body over {MAX_BODY} bytes")
            try:
                raw = self.rfile.read(int(length))
            except TimeoutError as e:
                self.close_connection = True
                raise ApiError(408, f"request body not received within {READ_TIMEOUT} s") from e
            if len(raw) < int(length):
                self.close_connection = True
                raise ApiError(400, "bad request: body shorter than its Content-Length")
            return raw

        def _call(self, coro):
            try:
                future = asyncio.run_coroutine_threadsafe(coro, loop)
                return future.result(timeout=CALL_TIMEOUT)
            except ApiError:
                raise
            except concurrent.futures.TimeoutError as e:
                future.cancel()
                raise ApiError(503, f"no answer from the proxy loop within {CALL_TIMEOUT} s") from e
            except Exception as e:  # a bug, or the loop closing: still an answer, not a dropped connection
                coro.close()
                raise ApiError(500, f"internal error: {type(e).__name__}: {e}") from e

        def _send(self, status: int, payload, content_type: str = "application/json") -> None:
            self._send_bytes(status, b"" if payload is None else go_json(payload), content_type)

        def _send_bytes(self, status: int, data: bytes, content_type: str | None) -> None:
            try:
                self.send_response(status)
                if data and content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            except OSError:  # the client went away
                self.close_connection = True

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # The stdlib calls this for requests it cannot parse (bad request line, headers too
            # long, unknown method); it would answer with an HTML page.
            self.close_connection = True
            self._send_bytes(code, *ApiError(code, message or HTTPStatus(code).phrase).answer())

        do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = do_HEAD = do_OPTIONS = _serve

        def log_message(self, *args) -> None:  # keep the harness's output clean
            pass

    return Handler


def serve(host: str, port: int, ready=None) -> None:
    """Run the API on host:port and the proxies on this thread's loop until SIGINT/SIGTERM."""
    loop = asyncio.new_event_loop()
    registry = ProxyRegistry(host)
    httpd = ThreadingHTTPServer((host, port), _handler(registry, loop))
    httpd.guard = Guard(host, httpd.server_address[1])  # before serving: the port is known once bound
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
        loop.run_until_complete(_cancel_the_rest())
        loop.close()


async def _cancel_the_rest() -> None:
    """Cancel what still runs on the loop (e.g. a connection dialling its upstream) and wait for it."""
    rest = asyncio.all_tasks() - {asyncio.current_task()}
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m harness.proxy", description="Toxiproxy-API-compatible TCP proxy")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8474)
    args = ap.parse_args(argv)
    serve(args.host, args.port, ready=lambda p: print(f"API listening on {args.host}:{p}", flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
