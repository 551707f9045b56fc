"""What reading Kafka's request framing costs the embedded proxy, measured in one run.

One Tansu broker behind the embedded proxy; a bare confluent-kafka produce loop (bench/producer.py's) sends
through it, in alternating rounds, with the proxy started three ways:
  off    the framing tracker replaced by one that reads nothing (the proxy before kafka_hold);
  on     as shipped: every request's header is read, nothing is held (the common case);
  toxic  as shipped with a kafka_hold toxic present for a request type the producer never sends, so every
         chunk takes the path that cuts it into whole requests and copies them.
Prints the medians and the ratios on/off and toxic/off (goal: at least 0.9).

    python bench/proxy_framing.py [--messages 300000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.producer import bare_loop  # noqa: E402
from harness import ports, procs  # noqa: E402
from harness.cluster.brokers import BrokerProcess, tansu_command  # noqa: E402
from harness.cluster.topic import create_topic  # noqa: E402

# The embedded proxy's entry point, with the tracker swapped for one that reads nothing ("off").
OFF = """
import harness.proxy.link as link
class NoFraming:
    unparsed, at_boundary = False, True
    def feed(self, data, keep=True):
        return []
link.FrameTracker = NoFraming
from harness.proxy.server import main
main()
"""
UNUSED_REQUEST = 68  # ConsumerGroupHeartbeat: a producer never sends it


def api(port: int, path: str, body: dict) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(req).read()


def proxy(mode: str, listen: str, upstream: str, log: Path):
    port = ports.free_port()
    code = ["-c", OFF] if mode == "off" else ["-m", "harness.proxy"]
    proc = procs.spawn([sys.executable, *code, "--host", "127.0.0.1", "--port", str(port)], log)
    procs.wait_for_port("127.0.0.1", port, timeout=15, proc=proc)
    api(port, "/proxies", {"name": "broker-0", "listen": listen, "upstream": upstream})
    if mode == "toxic":
        api(port, "/proxies/broker-0/toxics", {"name": "hold", "type": "kafka_hold", "stream": "upstream",
                                               "attributes": {"api_key": UNUSED_REQUEST, "hold": 1000}})
    return proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rates: dict[str, list[float]] = {"off": [], "on": [], "toxic": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        broker_port, listen_port = ports.free_port(), ports.free_port()
        listen = f"127.0.0.1:{listen_port}"
        broker = BrokerProcess(0, tansu_command(0, broker_port, listen), broker_port, work / "tansu.log")
        broker.start()
        try:
            for r in range(args.repeat):
                for mode in rates:
                    p = proxy(mode, listen, f"127.0.0.1:{broker_port}", work / f"proxy-{mode}-{r}.log")
                    try:
                        topic = f"bench-{mode}-{r}"
                        create_topic({"bootstrap.servers": listen}, topic, 3, 1)
                        rates[mode].append(bare_loop(listen, topic, args.messages))
                    finally:
                        procs.stop(p)
                    print(f"round {r + 1} {mode:5s} {rates[mode][-1]:>10,.0f} msg/s", flush=True)
        finally:
            broker.stop()
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\n{args.messages:,} messages x {args.repeat} rounds through the embedded proxy to one Tansu broker")
    for mode, rate in med.items():
        print(f"{mode:5s} {rate:>10,.0f} msg/s")
    print(f"on / off     {med['on'] / med['off']:.2f}x   (goal >= 0.9)")
    print(f"toxic / off  {med['toxic'] / med['off']:.2f}x   (goal >= 0.9)")


if __name__ == "__main__":
    main()
