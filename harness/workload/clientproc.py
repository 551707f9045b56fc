"""The plain producer run by another confluent-kafka version, in a child process: the client axis.

The child is the harness's own Python with the version's folder first on PYTHONPATH (clientenv.py), and
runs the harness's own produce loop (producer.produce), so its delivery log, outcomes and every metric
are the same whatever the version. It is tied to the run like every child (procs.spawn) and talks to the
run over its stdin and stdout, one line each:

    child -> run   client V L        the confluent-kafka and librdkafka versions it imported (checked)
                   sent N            progress, at most 5 times a second
                   handed            every message is handed; it waits for the run to heal the faults
                   result {json}     its ProduceResult, once its delivery log is closed
    run -> child   {json}            what to produce (first line)
                   flush             the faults are healed: flush and finish

A stop (Ctrl-C, a failure of the run) reaches it as SIGTERM: it stops handing, closes its log and still
answers with its result (interrupted). Broker and network faults need nothing from it; the producer's
own faults (a restart, a pause) and transactions are not served in a child yet (spec.py
refuses them for a variant with a client version). A consumer group's members are processes already
(member.py): they get the version's environment (consumers.py).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import confluent_kafka

from .. import procs
from ..exits import InfraError
from ..logfile import FileLogger
from .clientenv import ClientEnv, text
from .deliverylog import DeliveryLog
from .producer import ProduceResult, produce

CHILD = [sys.executable, "-m", "harness.workload.clientproc"]
PROGRESS_EVERY = 0.2  # seconds between two progress lines
STOP_TIMEOUT = 15.0  # a stopping child flushes nothing (its queue is purged, 2 s), closes its log and answers


class ChildProducer:
    """produce() in a child running confluent-kafka `env.version`. `result` and `versions` ("confluent-kafka
    V, librdkafka L" as the child reported them) stay readable however run() ends: on a stop or an
    exception the child is asked to finish, and what it answers is kept."""

    def __init__(self, env: ClientEnv, client: dict, topic: str, partitions: int, messages: int, config: dict,
                 acks: Path, offsets_told: bool, client_log: Path, rate: float | None, flush_timeout: float,
                 stop: threading.Event, on_progress: Callable[[int], None] | None = None):
        self.env, self.client_log, self.stop, self.on_progress = env, client_log, stop, on_progress
        self.before_flush: Callable[[], None] | None = None
        self.task = {"client": client, "topic": topic, "partitions": partitions, "messages": messages,
                     "config": config, "acks": str(acks), "offsets_told": offsets_told, "client_log": str(client_log),
                     "rate": rate, "flush_timeout": flush_timeout}
        self.result: ProduceResult | None = None
        self.versions = ""
        self._wrong = ""

    def run(self, before_flush: Callable[[], None] | None = None) -> ProduceResult:
        """As produce(): before_flush runs once the child has handed everything (the run heals the faults).
        InfraError when the child ends without a result or imported another version than asked."""
        self.before_flush, self.task["heal"] = before_flush, before_flush is not None
        proc = procs.spawn(CHILD, self.client_log, env=self.env.environ(), talk=True)
        ended = threading.Event()
        relay = threading.Thread(target=self._relay_stop, args=(proc, ended), name="client-child-stop", daemon=True)
        relay.start()
        try:
            try:
                _say(proc, json.dumps(self.task))
                self._listen(proc)
            except BaseException:  # interrupted, or a fault could not be healed: the child still finishes its log
                ask_to_finish(proc, lambda: self._listen(proc, serve=False))
                raise
        finally:
            ended.set()
            _close(proc.stdin)
            procs.stop(proc, timeout=STOP_TIMEOUT)
            relay.join()
            _close(proc.stdout)
        if self._wrong or self.result is None:
            why = self._wrong or f"it ended (exit status {proc.returncode}) without its result"
            raise InfraError(f"the producer child process of confluent-kafka {self.env.version}: {why}; "
                             f"see {self.client_log}")
        return self.result

    def _listen(self, proc, serve: bool = True) -> None:
        """The child's lines to their end; serve=False: only its result is taken (it is stopping)."""
        try:
            for line in proc.stdout:
                word, _, rest = line.strip().partition(" ")
                if word == "result":
                    self.result = ProduceResult(**json.loads(rest))
                elif word == "client":
                    version, _, lib = rest.partition(" ")
                    self.versions = f"confluent-kafka {version}, librdkafka {lib}"
                    if version != self.env.version:
                        self._wrong = f"asked for confluent-kafka {self.env.version}, the child imported {version}"
                        return
                elif not serve:
                    continue
                elif word == "sent" and self.on_progress is not None:
                    self.on_progress(int(rest))
                elif word == "handed":
                    self.before_flush()
                    _say(proc, "flush")
        except (OSError, ValueError):  # the child went away mid-line, or said something else
            pass

    def _relay_stop(self, proc, ended: threading.Event) -> None:
        while not ended.wait(0.1):
            if self.stop.is_set():
                proc.send_signal(signal.SIGTERM)
                return


def ask_to_finish(proc, listen: Callable[[], None]) -> None:
    """A producer child asked to stop: its stdin closed (a child waiting for the run's next line reads the end
    instead) and SIGTERM; then listen() takes what it still says (its result), for at most STOP_TIMEOUT, beyond
    which the child is killed. This module's child and foreignproc.py's alike."""
    _close(proc.stdin)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    killer = threading.Timer(STOP_TIMEOUT, procs.stop, (proc,))
    killer.start()
    try:
        listen()
    finally:
        killer.cancel()


def _say(proc, line: str) -> None:
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def _close(pipe) -> None:
    try:
        pipe.close()
    except OSError:
        pass


# -- the child --------------------------------------------------------------------------------------
def main() -> int:
    task = json.loads(sys.stdin.readline())
    print("client", text(confluent_kafka.version()), text(confluent_kafka.libversion()), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    last = [0.0]

    def progress(n: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY or n == task["messages"]:
            last[0] = now
            print(f"sent {n}", flush=True)

    def handed() -> None:
        print("handed", flush=True)
        sys.stdin.readline()  # "flush", or nothing when the run went away

    log = DeliveryLog(Path(task["acks"]), task["partitions"], offsets_told=task["offsets_told"])
    with FileLogger(Path(task["client_log"])) as logger:
        result = produce(task["client"], task["topic"], task["partitions"], task["messages"], task["config"], log,
                         rate=task["rate"], flush_timeout=task["flush_timeout"], stop=stop, on_progress=progress,
                         logger=logger, before_flush=handed if task["heal"] else None)
    print("result", json.dumps(asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
