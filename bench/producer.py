"""Producer throughput, measured in one run against embedded Tansu brokers without faults.

Prints three ratios (medians of --repeat alternating rounds):
  harness / bare   the harness producer (delivery log, progress, counters) against a bare
                   confluent-kafka produce loop, on the same broker through the same proxy;
  harness / bare+dr  the same against a bare loop that also asks for delivery reports
                   (a do-nothing on_delivery): what any loop that learns its acks pays;
  harness / batch+dr  the same against a bare loop that hands each partition's share of 1,024
                   messages in one produce_batch() call, as the harness does, with do-nothing reports;
  proxy / direct   the harness producer through the embedded proxy against a broker
                   reached directly (the proxy's cost).

    python bench/producer.py [--messages 500000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer  # noqa: E402

from harness import ports  # noqa: E402
from harness.cluster.brokers import BrokerProcess, tansu_command  # noqa: E402
from harness.cluster.local import LocalTansuCluster  # noqa: E402
from harness.spec import LocalClusterSpec  # noqa: E402
from harness.workload.deliverylog import DeliveryLog  # noqa: E402
from harness.workload.producer import produce  # noqa: E402
from harness.cluster.topic import create_topic  # noqa: E402

PARTITIONS = 3
CONFIG = {"enable.idempotence": True, "acks": "all", "linger.ms": 5}


def bare_loop(bootstrap: str, topic: str, messages: int, on_delivery=None) -> float:
    p = Producer({**CONFIG, "bootstrap.servers": bootstrap})
    kwargs = {"on_delivery": on_delivery} if on_delivery else {}
    t = time.perf_counter()
    for i in range(messages):
        while True:
            try:
                p.produce(topic, b"%d" % (i // PARTITIONS), partition=i % PARTITIONS, **kwargs)
                break
            except BufferError:
                p.poll(0.01)
        if i & 1023 == 1023:
            p.poll(0)
    assert p.flush(60) == 0
    return messages / (time.perf_counter() - t)


def bare_loop_with_reports(bootstrap: str, topic: str, messages: int) -> float:
    return bare_loop(bootstrap, topic, messages, on_delivery=lambda err, msg: None)


def bare_batch_loop(bootstrap: str, topic: str, messages: int) -> float:
    p = Producer({**CONFIG, "bootstrap.servers": bootstrap})
    report = lambda err, msg: None  # noqa: E731
    t = time.perf_counter()
    for lo in range(0, messages, 1024):
        hi = min(messages, lo + 1024)
        for part in range(PARTITIONS):
            batch = [{"value": b"%d" % (i // PARTITIONS)} for i in range(lo, hi) if i % PARTITIONS == part]
            while batch:
                queued = p.produce_batch(topic, batch, partition=part, on_delivery=report)
                batch = [{"value": m["value"]} for m in batch[queued:]]
                if batch:
                    p.poll(0.01)
        p.poll(0)
    assert p.flush(60) == 0
    return messages / (time.perf_counter() - t)


def harness_loop(bootstrap: str, topic: str, messages: int, workdir: Path) -> float:
    t = time.perf_counter()
    r = produce({"bootstrap.servers": bootstrap}, topic, PARTITIONS, messages, CONFIG, DeliveryLog(workdir / f"{topic}.parquet", PARTITIONS))
    assert r.acked == messages, r
    return messages / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = LocalTansuCluster(LocalClusterSpec(), work)
        port = ports.free_port()
        direct_address = f"127.0.0.1:{port}"
        direct = BrokerProcess(9, tansu_command(9, port, direct_address), port, work / "direct.log")
        try:
            cluster.up()
            direct.start()
            rates: dict[str, list[float]] = {"bare": [], "bare+dr": [], "batch+dr": [], "harness": [], "direct": []}
            for r in range(args.repeat):
                for name, bootstrap, fn in (("bare", cluster.bootstrap, bare_loop),
                                            ("bare+dr", cluster.bootstrap, bare_loop_with_reports),
                                            ("batch+dr", cluster.bootstrap, bare_batch_loop),
                                            ("harness", cluster.bootstrap, harness_loop),
                                            ("direct", direct_address, harness_loop)):
                    topic = f"bench-{name}-{r}"
                    create_topic({"bootstrap.servers": bootstrap}, topic, PARTITIONS, 1)
                    extra = (work,) if fn is harness_loop else ()
                    rates[name].append(fn(bootstrap, topic, args.messages, *extra))
                    print(f"round {r + 1} {name:8s} {rates[name][-1]:>10,.0f} msg/s", flush=True)
        finally:
            direct.stop()
            cluster.down()
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\n{args.messages:,} messages x {args.repeat} rounds, {PARTITIONS} partitions, {CONFIG}")
    print(f"bare loop via proxy     {med['bare']:>10,.0f} msg/s")
    print(f"bare+dr via proxy       {med['bare+dr']:>10,.0f} msg/s")
    print(f"batch+dr via proxy      {med['batch+dr']:>10,.0f} msg/s")
    print(f"harness via proxy       {med['harness']:>10,.0f} msg/s")
    print(f"harness direct          {med['direct']:>10,.0f} msg/s")
    print(f"harness / bare          {med['harness'] / med['bare']:.2f}x   (goal >= 0.9)")
    print(f"harness / bare+dr       {med['harness'] / med['bare+dr']:.2f}x   (goal >= 0.9)")
    print(f"harness / batch+dr      {med['harness'] / med['batch+dr']:.2f}x")
    print(f"proxy / direct          {med['harness'] / med['direct']:.2f}x   (goal >= 0.8)")


if __name__ == "__main__":
    main()
