"""The producer of a foreign Python client (kafka-python, aiokafka) in a child process, speaking the protocol of
workload/foreignproc.py. It is run by its path, isolated (python -I: the standard library and the client's
cache folder only, foreignenv.py), so it imports nothing of the harness and nothing of its environment:

    python -I pychild.py IMPL FOLDER                  the workload: the task comes as one JSON line on stdin
    python -I pychild.py IMPL FOLDER --version        answers `client IMPL VERSION` (the version it imported)
    python -I pychild.py IMPL FOLDER --check JSON     builds the producer with those settings, connecting
                                                      nowhere: `ok`, or `refused WORDS` (the client's words)

Message i goes to partition i % P with value i // P (ASCII decimal, no key), handed in index order, in
chunks of task["chunk"] sends; each send's outcome becomes one line, written by the delivery callback's
thread into a queue that the main loop empties between chunks. A send whose send() raised was refused by
the client before anything was transmitted (`r`): the workload ends there, as the harness's own producer
ends on a refusal that is not a full queue. SIGTERM stops the handing; what the client still reports within
a short close is written, then the result.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
import threading
import time

NOWHERE = "127.0.0.1:9"  # --check: a loopback address nothing answers on
CLOSE_TIMEOUT = 2.0  # seconds a stopping child gives its client to report what it can


def error_name(e: BaseException) -> str:
    """The stable name of an implementation's error: its exception class's simple name."""
    return type(e).__name__


def said(e: BaseException) -> str:
    """What the error says, on one line, without its class name (the result's `error`; `fatal` names it)."""
    text = " ".join(str(e).split())
    prefix = f"{error_name(e)}: "
    while text.startswith(prefix):
        text = text[len(prefix):]
    return text or error_name(e)


def words(e: BaseException) -> str:
    """The error as a person reads it: its name, then what it says."""
    text = said(e)
    return text if text == error_name(e) else f"{error_name(e)}: {text}"


def started(start, stop: threading.Event, within: float):
    """start() until it succeeds: a client that cannot reach the cluster yet (the faults run already) tries
    again, as an application would, for up to `within` seconds; the last error is raised then."""
    deadline = time.monotonic() + within
    while True:
        try:
            return start()
        except Exception as e:
            if stop.is_set() or time.monotonic() >= deadline:
                raise
            print(f"start: {words(e)}; trying again", file=sys.stderr, flush=True)
            stop.wait(0.5)


class Lines:
    """Outcome lines from any thread; the main loop writes them (one write, one flush) between chunks."""

    def __init__(self):
        self.q = collections.deque()
        self.first_acked = False

    def put(self, line: str) -> None:
        self.q.append(line)

    def acked(self, line: str) -> None:
        """An acknowledgement's line; the first one is also said in the client log (stderr)."""
        self.q.append(line)
        if not self.first_acked:
            self.first_acked = True
            print(f"first send acknowledged ({line})", file=sys.stderr, flush=True)

    def emit(self) -> None:
        out = []
        pop = self.q.popleft
        try:
            while True:
                out.append(pop())
        except IndexError:
            pass
        if out:
            sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.flush()


def ms(t0: float) -> str:
    return f"{(time.perf_counter() - t0) * 1000:.3f}"


class Result:
    def __init__(self):
        self.handed = 0
        self.error = ""
        self.fatal = ""
        self.t0 = time.monotonic()

    def refused(self, lines: Lines, p: int, v: int, e: BaseException) -> None:
        lines.put(f"r {p} {v} {error_name(e)}")
        self.error, self.fatal = said(e), error_name(e)

    def line(self, stop: threading.Event) -> str:
        return "result " + json.dumps({"handed": self.handed, "interrupted": stop.is_set(), "error": self.error,
                                       "fatal": self.fatal, "duration": time.monotonic() - self.t0})


GOING = [False]  # the run said `go`: from then on a SIGTERM stops the handing; before, the child ends at once


def terminated(stop: threading.Event) -> None:
    """SIGTERM: stop handing; before `go` nothing was handed, and building or connecting the client may block for
    max_block_ms: the child answers its (empty) result and ends at once."""
    stop.set()
    if not GOING[0]:
        sys.stdout.write(Result().line(stop) + "\n")
        sys.stdout.flush()
        os._exit(0)


def answer(lines: Lines, say: str, expect: str, stop: threading.Event, read=None) -> bool:
    """Say `say` (ready, handed) and wait for the run's `expect` (go, flush); the end of stdin, or a stop, means
    the run is stopping (False). A stopped child says nothing more than its result."""
    if stop.is_set():
        return False
    lines.put(say)
    lines.emit()
    if (read or sys.stdin.readline)().strip() != expect:
        stop.set()
    return not stop.is_set()


# -- kafka-python -------------------------------------------------------------------------------------------------
class KafkaPython:
    name = "kafka-python"

    def version(self) -> str:
        import kafka
        return kafka.__version__

    def check(self, settings: dict) -> None:
        from kafka import KafkaProducer
        # An api_version spares the constructor its probe of the (absent) brokers.
        producer = KafkaProducer(**{"api_version": (2, 8), **settings, "bootstrap_servers": NOWHERE})
        producer.close(timeout=0)

    def run(self, task: dict, lines: Lines, stop: threading.Event) -> Result:
        from kafka import KafkaProducer
        r = Result()
        def start():
            producer = KafkaProducer(bootstrap_servers=task["bootstrap"], **task["settings"])
            try:  # connected, the topic's partitions known: sending starts at once on `go`
                producer.partitions_for(task["topic"])
            except Exception:
                producer.close(timeout=0)
                raise
            return producer

        try:
            producer = started(start, stop, task["flush_timeout"])
        except Exception as e:  # no broker answered, or a setting it refuses only now
            r.error, r.fatal = said(e), error_name(e)
            return r
        topic, parts, n, rate, chunk = task["topic"], task["partitions"], task["messages"], task["rate"], task["chunk"]
        put, told = lines.put, lines.acked
        if not answer(lines, "ready", "go", stop):
            producer.close(timeout=0)
            return r
        GOING[0] = True
        r.t0 = time.monotonic()

        def acked(p, v, t, md):
            told(f"a {p} {v} {md.offset} {ms(t)}")

        def failed(p, v, t, e):
            put(f"e {p} {v} {error_name(e)} {ms(t)}")

        clean = False
        try:
            count = 0
            while count < n:
                if count:
                    put(f"sent {count}")
                    lines.emit()
                    if stop.is_set() or self.failed(producer, r):
                        break
                    if rate:
                        ahead = r.t0 + count / rate - time.monotonic()
                        if ahead > 0:
                            time.sleep(ahead)
                put(f"chunk {int(time.time() * 1000)}")
                end = min(n, count + chunk)
                for i in range(count, end):
                    p, v = i % parts, i // parts
                    t = time.perf_counter()
                    try:
                        future = producer.send(topic, value=b"%d" % v, partition=p)
                    except Exception as e:
                        r.refused(lines, p, v, e)
                        count = r.handed = i + 1
                        break
                    future.add_callback(acked, p, v, t)
                    future.add_errback(failed, p, v, t)
                else:
                    count = r.handed = end
                    continue
                break
            put(f"sent {count}")
            self.failed(producer, r)
            if answer(lines, "handed", "flush", stop) and not r.error:
                producer.flush(timeout=task["flush_timeout"])
                clean = True
        except Exception as e:  # flush's KafkaTimeoutError: what is still out ends unknown, as librdkafka's would
            print(f"ended early: {words(e)}", file=sys.stderr, flush=True)
        finally:
            self.failed(producer, r)
            try:  # timeout 0 aborts what is queued or in flight: each gets its errback
                producer.close(timeout=CLOSE_TIMEOUT if clean else 0)
            except Exception:
                pass
        return r

    @staticmethod
    def failed(producer, r: Result) -> bool:
        """The client failed for good (its idempotence state holds a fatal error: the sender aborts every batch
        from then on, as librdkafka's fatal error does): its result says so, and no more is handed."""
        if r.error:
            return True
        manager = getattr(producer, "_transaction_manager", None)
        try:
            fatal = manager is not None and manager.has_fatal_error()
            error = manager.last_error if fatal else None
        except Exception:  # another version's insides
            return False
        if error is None:
            return False
        r.error, r.fatal = f"fatal error: {said(error)}", error_name(error)
        return True


# -- aiokafka -----------------------------------------------------------------------------------------------------
class AioKafka:
    name = "aiokafka"

    def version(self) -> str:
        import aiokafka
        return aiokafka.__version__

    def check(self, settings: dict) -> None:
        import asyncio

        from aiokafka import AIOKafkaProducer

        async def build():  # the constructor wants a running loop; start() (which connects) is not called
            AIOKafkaProducer(**{**settings, "bootstrap_servers": NOWHERE})

        asyncio.run(build())

    def run(self, task: dict, lines: Lines, stop: threading.Event) -> Result:
        import asyncio
        return asyncio.run(self._run(task, lines, stop))

    async def _run(self, task: dict, lines: Lines, stop: threading.Event) -> Result:
        import asyncio

        from aiokafka import AIOKafkaProducer
        r = Result()
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        sending = [False]

        def on_term():
            terminated(stop)
            if sending[0]:  # a send waiting for room in its batch, or the flush: cut short
                me.cancel()

        loop.add_signal_handler(signal.SIGTERM, on_term)
        deadline = time.monotonic() + task["flush_timeout"]
        while True:  # as started(): a client that cannot reach the cluster yet tries again
            producer = AIOKafkaProducer(bootstrap_servers=task["bootstrap"], **task["settings"])
            try:
                await producer.start()
                await producer.partitions_for(task["topic"])  # sending starts at once on `go`
                break
            except Exception as e:
                await _quietly(producer.stop(), CLOSE_TIMEOUT)
                if stop.is_set() or time.monotonic() >= deadline:
                    r.error, r.fatal = said(e), error_name(e)
                    return r
                print(f"start: {words(e)}; trying again", file=sys.stderr, flush=True)
                await asyncio.sleep(0.5)
        topic, parts, n, rate, chunk = task["topic"], task["partitions"], task["messages"], task["rate"], task["chunk"]
        put, told = lines.put, lines.acked

        async def read() -> str:
            return await loop.run_in_executor(None, sys.stdin.readline)

        async def answered(say: str, expect: str) -> bool:
            if stop.is_set():
                return False
            lines.put(say)
            lines.emit()
            if (await read()).strip() != expect:
                stop.set()
            return not stop.is_set()

        if not await answered("ready", "go"):
            await _quietly(producer.stop(), CLOSE_TIMEOUT)
            return r
        GOING[0] = True
        r.t0 = time.monotonic()

        def done(p, v, t, f):
            if f.cancelled():
                put(f"e {p} {v} CancelledError {ms(t)}")
            elif f.exception() is not None:
                put(f"e {p} {v} {error_name(f.exception())} {ms(t)}")
            else:
                told(f"a {p} {v} {f.result().offset} {ms(t)}")

        clean = False
        try:
            count = 0
            while count < n:
                if count:
                    put(f"sent {count}")
                    await asyncio.sleep(0)  # the callbacks due run
                    lines.emit()
                    if stop.is_set():
                        break
                    if rate:
                        ahead = r.t0 + count / rate - time.monotonic()
                        if ahead > 0:
                            await asyncio.sleep(ahead)
                put(f"chunk {int(time.time() * 1000)}")
                end = min(n, count + chunk)
                for i in range(count, end):
                    p, v = i % parts, i // parts
                    t = time.perf_counter()
                    sending[0] = True
                    try:
                        future = await producer.send(topic, b"%d" % v, partition=p)
                    except asyncio.CancelledError:  # stopped while it waited: handed, its fate unknown
                        me.uncancel()
                        count = r.handed = i + 1
                        break
                    except Exception as e:
                        r.refused(lines, p, v, e)
                        count = r.handed = i + 1
                        break
                    finally:
                        sending[0] = False
                    future.add_done_callback(lambda f, p=p, v=v, t=t: done(p, v, t, f))
                else:
                    count = r.handed = end
                    continue
                break
            put(f"sent {count}")
            if await answered("handed", "flush") and not r.error:
                sending[0] = True  # a SIGTERM cuts the flush short too
                try:
                    await asyncio.wait_for(producer.flush(), task["flush_timeout"])
                finally:
                    sending[0] = False
                clean = True
        except (Exception, asyncio.CancelledError) as e:  # flush's timeout: what is still out ends unknown
            print(f"flush: {words(e) if str(e) else error_name(e)}", file=sys.stderr, flush=True)
        finally:
            while me.cancelling():  # a SIGTERM's cancel that no await took
                me.uncancel()
            await _quietly(producer.stop(), 5.0 if clean else CLOSE_TIMEOUT)
            await asyncio.sleep(0)
        return r


async def _quietly(coro, timeout: float) -> None:
    import asyncio
    try:
        await asyncio.wait_for(coro, timeout)
    except (Exception, asyncio.CancelledError):
        pass


IMPLEMENTATIONS = {c.name: c for c in (KafkaPython, AioKafka)}


def main(argv: list[str]) -> int:
    impl, folder, *rest = argv[1:]
    sys.path.insert(0, folder)
    client = IMPLEMENTATIONS[impl]()
    if rest[:1] == ["--version"]:
        print(f"client {impl} {client.version()}", flush=True)
        return 0
    if rest[:1] == ["--check"]:
        try:
            client.check(json.loads(rest[1]))
        except Exception as e:
            print("refused", words(e), flush=True)
            return 1
        print("ok", flush=True)
        return 0
    import logging
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: terminated(stop))
    task = json.loads(sys.stdin.readline())
    print(f"client {impl} {client.version()}", flush=True)
    lines = Lines()
    result = client.run(task, lines, stop)
    lines.put(result.line(stop))
    lines.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
