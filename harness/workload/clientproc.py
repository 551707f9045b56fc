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
own faults (producer-restart, producer-pause), transactions and consumer groups are not served in a
child yet (spec.py refuses them for a variant with a client version).
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
from .producer import DeliveryLog, ProduceResult, produce

CHILD = [sys.executable, "-m", "harness.workload.clientproc"]
PROGRESS_EVERY = 0.2  # seconds between two progress lines


def produce_in(env: ClientEnv, client: dict, topic: str, partitions: int, messages: int, config: dict,
               acks: Path, offsets_told: bool, client_log: Path, rate: float | None, flush_timeout: float,
               stop: threading.Event, on_progress: Callable[[int], None] | None = None,
               before_flush: Callable[[], None] | None = None) -> tuple[ProduceResult, str]:
    """produce() in a child running confluent-kafka `env.version`: (its result, "confluent-kafka V,
    librdkafka L" as the child reported it). InfraError when the child ends without a result or imported
    another version than asked."""
    task = {"client": client, "topic": topic, "partitions": partitions, "messages": messages, "config": config,
            "acks": str(acks), "offsets_told": offsets_told, "client_log": str(client_log), "rate": rate,
            "flush_timeout": flush_timeout, "heal": before_flush is not None}
    proc = procs.spawn(CHILD, client_log, env=env.environ(), talk=True)
    ended = threading.Event()

    def relay_stop() -> None:
        while not ended.wait(0.1):
            if stop.is_set():
                proc.send_signal(signal.SIGTERM)
                return

    relay = threading.Thread(target=relay_stop, name="client-child-stop", daemon=True)
    relay.start()
    result, versions, wrong = None, "", ""
    try:
        try:
            _say(proc, json.dumps(task))
            for line in proc.stdout:
                word, _, rest = line.strip().partition(" ")
                if word == "client":
                    version, _, lib = rest.partition(" ")
                    versions = f"confluent-kafka {version}, librdkafka {lib}"
                    if version != env.version:
                        wrong = f"asked for confluent-kafka {env.version}, the child imported {version}"
                        break
                elif word == "sent" and on_progress is not None:
                    on_progress(int(rest))
                elif word == "handed":
                    before_flush()
                    _say(proc, "flush")
                elif word == "result":
                    result = ProduceResult(**json.loads(rest))
        except (OSError, ValueError):  # the child went away mid-line, or said something else
            pass
    finally:
        ended.set()
        try:
            proc.stdin.close()  # a child still waiting for "flush" reads the end: it flushes and finishes
        except OSError:
            pass
        procs.stop(proc, timeout=10.0)
        relay.join()
        proc.stdout.close()
    if wrong or result is None:
        why = wrong or f"it ended (exit status {proc.returncode}) without its result"
        raise InfraError(f"the producer child process of confluent-kafka {env.version}: {why}; see {client_log}")
    return result, versions


def _say(proc, line: str) -> None:
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


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
