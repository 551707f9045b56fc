"""Proxies and their connections (links) for the embedded Toxiproxy stand-in.

A Link joins one client connection to one upstream connection with two pipes,
`upstream` (client -> server) and `downstream` (server -> client). Each pipe has a
reader task that stamps chunks with their arrival time and a writer that applies
the toxics present *now*, so toxics added or removed mid-connection take effect
at once, as in Toxiproxy.

Toxiproxy runs each toxic of a connection as a stub (ToxicStub.Run in its
toxics/toxic.go) that draws toxicity afresh whenever it (re)starts: when the
connection opens, when the toxic is added or updated, and when a toxic is added
right after it or the one right after it is removed (link.go interrupts that
neighbour). `Link.start_toxic` is that (re)start.

`reset_peer` follows Toxiproxy's ResetToxic (toxics/reset_peer.go, link.go): it waits for
the next chunk on its stream, drops it, waits `timeout` ms and closes the connection. The
close is a reset (RST) only when the toxic was already present when the connection opened
(Toxiproxy sets SO_LINGER 0 in ToxicLink.Start); on a connection that was open before the
toxic was added, it is an ordinary close (FIN).

`timeout` follows Toxiproxy's TimeoutToxic (toxics/timeout.go): data reaching it
is dropped, never delivered; with timeout > 0 the connection is closed once no
data has reached it for `timeout` ms (each dropped chunk restarts the clock);
with timeout 0 it is never closed by the toxic. Removing the toxic closes the
connection: TimeoutToxic is a cleanup toxic and its Cleanup closes the stub,
on every connection, whether toxicity applied the toxic there or not.

`kafka_hold` (the embedded proxy's own, upstream) reads the Kafka request framing of the client's stream
(kafka_frames.py): a request of its API key that starts while it applies is held and delivered `hold` ms
after it arrived, and what the client sends behind it on that connection waits behind it, as on a TCP
connection whose packets are delayed (a connection never reorders; requests the client sends on a new
connection, once it gave up on this one, overtake them). With drop 1 the request and everything after it
on the connection are never delivered. With `gap` ms, each such request is also delivered no sooner than
`gap` ms after the previous one of its connection: requests the client sends back to back reach the broker
spread out (and what follows each waits behind it). Removing the toxic delivers nothing early, and a client that closes
its connection does not stop the held requests reaching the broker (the upstream side stays open until they
are delivered). A stream that is not Kafka requests is passed through unchanged and counted
(`Proxy.kafka_requests`: per proxy, and held / dropped per kafka_hold toxic, so that a fault reports what
its own toxics did).
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
import socket
import struct
import time

from .kafka_frames import FrameTracker
from .toxics import Toxic

CHUNK = 64 * 1024


class Proxy:
    def __init__(self, name: str, listen: str, upstream: str, enabled: bool = True):
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = enabled
        self.toxics: dict[str, Toxic] = {}  # in the order added: Toxiproxy's chain order per stream
        self.links: set[Link] = set()
        self._dialling: set[Link] = set()  # accepted, upstream not connected yet
        self._listener: socket.socket | None = None  # while enabled
        self.kafka_requests = {"held": 0, "dropped": 0, "unparsed": 0}  # kafka_hold's counts (GET .../kafka)
        self.kafka_toxics: dict[str, dict[str, int]] = {}  # the same per kafka_hold toxic, by its name

    def count_request(self, toxic: str, what: str) -> None:
        """A request held or dropped by this kafka_hold toxic."""
        self.kafka_requests[what] += 1
        counts = self.kafka_toxics.setdefault(toxic, {"held": 0, "dropped": 0})
        counts[what] += 1

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "Logger": {},  # Toxiproxy 2.12 serialises its Proxy's exported Logger field, empty
            "toxics": [t.to_json() for t in self.listed()],
        }

    def listed(self) -> list[Toxic]:
        """The toxics as Toxiproxy lists them (GetToxicArray): the upstream chain, then the downstream one."""
        return sorted(self.toxics.values(), key=lambda t: t.direction != "upstream")

    async def start(self) -> None:
        host, port = split_hostport(self.listen)
        listener = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        listener.setblocking(False)
        asyncio.get_running_loop().add_reader(listener, self._accept, listener)
        self._listener = listener
        # Port 0 means "any": keep the port we got, so a re-enable listens there again.
        self.listen = f"{host}:{listener.getsockname()[1]}"

    async def stop(self) -> None:
        if self._listener is not None:
            asyncio.get_running_loop().remove_reader(self._listener)
            self._listener.close()  # connections the kernel queued but nobody accepted get RST
            self._listener = None
        for link in list(self.links | self._dialling):
            link.close()

    async def set_enabled(self, enabled: bool) -> None:
        if enabled and not self.enabled:
            await self.start()
        elif not enabled and self.enabled:
            await self.stop()
        self.enabled = enabled

    def _last_toxic(self, stream: str) -> Toxic | None:
        return next((t for t in reversed(self.toxics.values()) if t.direction == stream), None)

    def add_toxic(self, toxic: Toxic) -> None:
        before = self._last_toxic(toxic.direction)
        self.toxics[toxic.name] = toxic
        self.kafka_toxics.pop(toxic.name, None)  # a name used again (the next variant's fault) counts afresh
        for link in list(self.links):
            link.start_toxic(toxic)
            if before is not None:
                link.start_toxic(before)

    def remove_toxic(self, name: str) -> None:
        toxic = self.toxics[name]
        same_stream = [n for n, t in self.toxics.items() if t.direction == toxic.direction]
        i = same_stream.index(name)
        before = self.toxics[same_stream[i - 1]] if i else None
        del self.toxics[name]
        for link in list(self.links):
            link.toxic_removed(toxic, before)

    def update_toxic(self, toxic: Toxic) -> None:
        for link in list(self.links):
            link.start_toxic(toxic)

    def _accept(self, listener: socket.socket) -> None:
        # A plain reader callback rather than asyncio.Server or loop.sock_accept: both can
        # accept a connection just as the proxy stops and then drop it, left open (CPython
        # 3.11: Server._attach asserts; a cancelled sock_accept still accepts). Here every
        # accepted socket gets its link at once, where stop() finds it.
        if listener is not self._listener:  # stopped earlier in this loop iteration
            return
        try:
            client, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # e.g. out of file descriptors: pause a second rather than spin
            loop = asyncio.get_running_loop()
            loop.remove_reader(listener)

            def resume() -> None:
                if listener is self._listener:  # not stopped meanwhile
                    loop.add_reader(listener, self._accept, listener)

            loop.call_later(1, resume)
            return
        # No Nagle on the client's side, as Toxiproxy (Go sets TCP_NODELAY on every TCP connection) and the
        # upstream side (asyncio sets it on the sockets it makes) have: asyncio sets it only on a socket whose
        # proto is IPPROTO_TCP, and an accepted one says 0. With Nagle, a response written while the one before
        # was unacknowledged waited for the client's delayed ACK: 40 ms on every pipelined request.
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = Link(self, client)
        self._dialling.add(link)
        link.task = asyncio.ensure_future(self._serve(link))

    async def _serve(self, link: Link) -> None:
        try:
            if not await link.connect():
                return
        finally:
            self._dialling.discard(link)
        self.links.add(link)
        link.linger0 = any(t.type == "reset_peer" for t in self.toxics.values())
        for toxic in list(self.toxics.values()):
            link.start_toxic(toxic)
        try:
            await link.run()
        finally:
            self.links.discard(link)


def split_hostport(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


class Link:
    def __init__(self, proxy: Proxy, client: socket.socket):
        self.proxy = proxy
        self.client = client  # as accepted; connect() wraps it in client_r/client_w
        self.client_r: asyncio.StreamReader | None = None
        self.client_w: asyncio.StreamWriter | None = None
        self.server_r: asyncio.StreamReader | None = None
        self.server_w: asyncio.StreamWriter | None = None
        self.active: dict[int, bool] = {}  # id(toxic) -> did toxicity apply it at its last (re)start
        self.sent: dict[int, int] = {}  # id(limit_data toxic) -> bytes passed since it was added
        self.deadline: dict[int, float] = {}  # id(timeout toxic) -> when it closes the link
        self._timers: dict[int, asyncio.Task] = {}  # id(toxic) -> its timer task
        self.linger0 = False  # a reset_peer toxic was present when the link started: closes are resets
        self.closed = asyncio.Event()
        self.task: asyncio.Task | None = None  # the proxy's task serving this link
        self.frames = FrameTracker()  # the client's requests (kafka_hold)
        # kafka_hold: [due time, bytes, whole] per request held, in stream order; the task writing them out
        self._queue: deque[list] = deque()
        self._pump: asyncio.Task | None = None  # while it runs, a client that closed waits for it
        self._dropping = ""  # the kafka_hold toxic that dropped a request: nothing more of the stream is delivered
        self._last_due = 0.0  # when the last request a kafka_hold matched is due (its `gap` spaces the next)

    # -- toxic bookkeeping -------------------------------------------------
    def start_toxic(self, toxic: Toxic) -> None:
        """(Re)start `toxic` on this link, as ToxicStub.Run does: toxicity is drawn again, timers restart."""
        self._stop_timer(toxic)
        applies = self.active[id(toxic)] = random.random() < toxic.toxicity
        if not applies or self.closed.is_set():
            return
        if toxic.type == "timeout" and toxic.attr("timeout") > 0:
            self.deadline[id(toxic)] = time.monotonic() + toxic.attr("timeout") / 1000
            self._timers[id(toxic)] = asyncio.ensure_future(self._timeout(toxic))

    def toxic_removed(self, toxic: Toxic, before: Toxic | None) -> None:
        self._stop_timer(toxic)
        self.active.pop(id(toxic), None)
        self.sent.pop(id(toxic), None)
        if toxic.type == "timeout":
            self.close()  # TimeoutToxic.Cleanup closes the stub, so the connection ends
        elif before is not None:
            self.start_toxic(before)  # Toxiproxy re-runs the toxic before the removed one

    def _stop_timer(self, toxic: Toxic) -> None:
        task = self._timers.pop(id(toxic), None)
        if task is not None:
            task.cancel()
        self.deadline.pop(id(toxic), None)

    def chain(self, stream: str) -> list[Toxic]:
        return [t for t in self.proxy.toxics.values() if t.direction == stream and self.active.get(id(t))]

    async def _timeout(self, toxic: Toxic) -> None:
        while (left := self.deadline[id(toxic)] - time.monotonic()) > 0:
            await asyncio.sleep(left)
        self.close()

    # -- data path ---------------------------------------------------------
    async def connect(self) -> bool:
        """Wrap the client socket and dial the upstream; False, all closed, if that fails
        (Toxiproxy closes the client too) or the proxy stopped meanwhile."""
        try:
            self.client_r, self.client_w = await asyncio.open_connection(sock=self.client)
        except OSError:
            self.client.close()
            self.closed.set()
            return False
        if not self.closed.is_set():
            try:
                host, port = split_hostport(self.proxy.upstream)
                self.server_r, self.server_w = await asyncio.open_connection(host, port)
            except (OSError, ValueError):  # ValueError: an upstream that is no HOST:PORT (Go fails to dial it)
                self.close()
                return False
        if self.closed.is_set():  # close() came while we were at it: finish its job
            for w in (self.client_w, self.server_w):
                if w is not None:
                    w.close()
            return False
        return True

    async def run(self) -> None:
        pipes = [
            asyncio.ensure_future(self._pipe("upstream", self.client_r, self.server_w)),
            asyncio.ensure_future(self._pipe("downstream", self.server_r, self.client_w)),
        ]
        await self.closed.wait()
        timers = list(self._timers.values()) + ([self._pump] if self._pump else [])
        for task in pipes + timers:
            task.cancel()
        await asyncio.gather(*pipes, *timers, return_exceptions=True)

    async def _pipe(self, stream: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue = asyncio.Queue(maxsize=32)

        async def read() -> None:
            try:
                while data := await reader.read(CHUNK):
                    await queue.put((time.monotonic(), data))
            except (OSError, asyncio.IncompleteReadError):
                pass
            await queue.put(None)

        reading = asyncio.ensure_future(read())
        try:
            while (item := await queue.get()) is not None:
                if not await self._deliver(stream, *item, writer):
                    return
            if stream == "upstream" and self._pump:  # the client gave up; its held requests still arrive
                await asyncio.gather(self._pump, return_exceptions=True)
            await self._slow_close(stream)
            self.close()
        except (OSError, ConnectionError):
            if self._pump:  # the client is gone; its held requests still reach the broker
                await asyncio.gather(self._pump, return_exceptions=True)
            self.close()
        finally:
            reading.cancel()

    async def _deliver(self, stream: str, arrived: float, data: bytes, writer: asyncio.StreamWriter) -> bool:
        """Pass one chunk through the toxics of `stream`; False when the link closed."""
        if stream == "upstream":
            data = self._hold_requests(arrived, data, writer)
            if not data:
                return True
        return await self._deliver_chunk(stream, arrived, data, writer)

    def _hold_requests(self, arrived: float, data: bytes, writer) -> bytes:
        """The part of a client chunk to pass on now: all of it, unless a request kafka_hold matches starts in
        it or is held already; from there on everything goes into the held queue, in order (TCP delivers a
        connection's bytes in order: what follows a delayed request waits behind it)."""
        unparsed = self.frames.unparsed
        holds = {t.attr("api_key"): t for t in self.chain("upstream") if t.type == "kafka_hold"}
        if not holds and not self._queue:  # the common case: nothing held, nothing cut or copied
            self.frames.feed(data, keep=False)
            self._count_unparsed(unparsed)
            return data
        pieces = self.frames.feed(data)
        self._count_unparsed(unparsed)
        out = bytearray()
        for piece in pieces:
            matched = holds.get(piece.header.api_key) if piece.first and piece.header is not None else None
            if matched is not None and matched.attr("drop"):
                self._dropping = matched.name  # a lost request: the connection is a black hole from here on
            if self._dropping:
                if piece.first:
                    self.proxy.count_request(self._dropping, "dropped")
                continue
            if matched is not None or self._queue:
                if piece.first or not self._queue:  # a new request: due when its own hold ends, never before
                    due = 0.0
                    if matched is not None:
                        due = max(arrived + matched.attr("hold") / 1000, self._last_due + matched.attr("gap") / 1000)
                        self._last_due = due
                        self.proxy.count_request(matched.name, "held")
                    self._queue.append([max(due, self._queue[-1][0] if self._queue else 0.0), bytearray(), False])
                entry = self._queue[-1]
                entry[1] += piece.data
                entry[2] = piece.last or piece.header is None
            else:
                out += piece.data
        if self._queue and self._pump is None:
            self._pump = asyncio.ensure_future(self._release(writer))
        return bytes(out)

    def _count_unparsed(self, before: bool) -> None:
        if self.frames.unparsed and not before:
            self.proxy.kafka_requests["unparsed"] += 1

    async def _release(self, writer: asyncio.StreamWriter) -> None:
        """Write the held queue in order, each request once it is due and whole, until it is empty."""
        try:
            while self._queue:
                due, frame, whole = self._queue[0]
                wait = due - time.monotonic()
                if wait > 0 or not whole:
                    await asyncio.sleep(max(wait, 0.005))
                    continue
                self._queue.popleft()
                writer.write(bytes(frame))
                await writer.drain()
        finally:
            self._pump = None

    async def _deliver_chunk(self, stream: str, arrived: float, data: bytes, writer: asyncio.StreamWriter) -> bool:
        chain = self.chain(stream)
        timeout = next((t for t in chain if t.type == "timeout"), None)
        if timeout is not None:
            # Dropped, never delivered; the data restarts the idle clock of the first timeout toxic.
            if id(timeout) in self.deadline:
                self.deadline[id(timeout)] = time.monotonic() + timeout.attr("timeout") / 1000
            return True
        reset = next((t for t in chain if t.type == "reset_peer"), None)
        if reset is not None:
            # The chunk that reaches it is dropped; `timeout` ms later the connection closes.
            await asyncio.sleep(reset.attr("timeout") / 1000)
            self.close(reset=self.linger0)
            return False
        for t in chain:
            if t.type == "latency":
                jitter = random.uniform(-t.attr("jitter"), t.attr("jitter"))
                delay = arrived + (t.attr("latency") + jitter) / 1000 - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            elif t.type == "bandwidth" and t.attr("rate") > 0:
                await asyncio.sleep(len(data) / (t.attr("rate") * 1024))
        for t in chain:
            if t.type == "limit_data":
                left = t.attr("bytes") - self.sent.get(id(t), 0)
                if len(data) >= left:
                    if left > 0:
                        writer.write(data[:left])
                        await writer.drain()
                    self.close()
                    return False
                self.sent[id(t)] = self.sent.get(id(t), 0) + len(data)
        slicer = next((t for t in chain if t.type == "slicer"), None)
        if slicer is None:
            writer.write(data)
            await writer.drain()
        else:
            await self._write_sliced(slicer, data, writer)
        return True

    async def _write_sliced(self, toxic: Toxic, data: bytes, writer: asyncio.StreamWriter) -> None:
        avg, var = max(1, toxic.attr("average_size")), toxic.attr("size_variation")
        pos = 0
        while pos < len(data):
            size = max(1, avg + random.randint(-var, var)) if var > 0 else avg
            writer.write(data[pos:pos + size])
            await writer.drain()
            pos += size
            if toxic.attr("delay"):
                await asyncio.sleep(toxic.attr("delay") / 1e6)

    async def _slow_close(self, stream: str) -> None:
        delays = [t.attr("delay") for t in self.chain(stream) if t.type == "slow_close"]
        if delays:
            await asyncio.sleep(max(delays) / 1000)

    def close(self, reset: bool = False) -> None:
        """Close both sides, with RST instead of FIN when `reset`. A client socket not wrapped
        yet is left to connect(), so its transport is never pulled from under it."""
        if self.closed.is_set():
            return
        for w in (self.client_w, self.server_w):
            if w is None:
                continue
            if reset:
                sock = w.get_extra_info("socket")
                if sock is not None:
                    # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                w.transport.abort()
            else:
                w.close()
        self.closed.set()
