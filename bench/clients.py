"""Producer throughput of every client implementation the client axis knows, in one run, against one local
Apache Kafka node reached through the same proxy, without faults (issue 45's producer-side bench).

Prints, as medians of --repeat alternating rounds:
  java harness / bare     the harness's Java child (harness/workload/java/ChaosProducer.java, its outcome lines and
                          frames relayed to the run, which writes the delivery log) against a bare Java loop with the same
                          settings (bench/java/BareProducer.java); both timed from the first send to the last ack
                          (the harness: from `go` to the child's result line read by the run), the client built
                          and connected before (goal >= 0.9): the median of the rounds' ratios (each round runs
                          both, one after the other), with a 95 % bootstrap interval of that median and the quartiles
  CPU per million sends   of each JVM (every thread: JIT and GC too) and of the run, in the same windows: what the
                          harness costs beside the client, less noisy than the rates on a machine whose two cores
                          also run the broker
  steady, by the broker    with --steady N: the same ratio from each loop's N-th send to its last, as the broker
                          stamped them (the topics keep LogAppendTime): the rate once both JVMs' JIT has compiled
                          the sending path (at 1,000,000-3,000,000 sends a round the compiler threads use about
                          as much CPU as the sending, and when their compiles land moves a round by a fifth),
                          read off the log itself, so neither loop's own reporting (the relay) is in it
  python implementations  kafka-python and aiokafka through the same child protocol, beside the harness's own
                          librdkafka producer (harness/workload/producer.produce): figures, not a goal

    KAFKA_HOME=/path/to/kafka_2.13-4.1.0 python bench/clients.py [--messages 200000] [--repeat 10] [--java] [--pin]
        [--control] [--steady N]

--pin gives each Java loop a core of its own (the last; the broker, the proxy and the run share the others), as a
client and its brokers run on different machines in production: the rates then measure the client's work per
send rather than who won the two cores that everything here shares.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402

from harness.cluster import make_cluster  # noqa: E402
from harness.cluster.topic import create_topic  # noqa: E402
from harness.spec import LocalClusterSpec  # noqa: E402
from harness.workload.deliverylog import DeliveryLog  # noqa: E402
from harness.workload.foreignenv import ensure  # noqa: E402
from harness.workload.foreignproc import ForeignProducer  # noqa: E402
from harness.workload.producer import produce  # noqa: E402

PARTITIONS = 3
PIN: list[str] = []  # the Java loops' command prefix: with --pin, taskset to the core kept for them
BARE = Path(__file__).with_name("java") / "BareProducer.java"
# The same producer in each implementation's own names: idempotent, acks=all, linger 5 ms.
SETTINGS = {
    "kafka-clients": {"enable.idempotence": "true", "acks": "all", "linger.ms": "5"},
    "kafka-python": {"enable_idempotence": True, "acks": "all", "linger_ms": 5},
    "aiokafka": {"enable_idempotence": True, "acks": "all", "linger_ms": 5},
}
VERSIONS = {"kafka-clients": "4.1.0", "kafka-python": "3.0.12", "aiokafka": "0.14.0"}
LIBRDKAFKA = {"enable.idempotence": True, "acks": "all", "linger.ms": 5}
# Each child's rate by its own clock (its result's duration: from `go` to its result line written), beside the run's
# (to the result line read, every outcome line before it applied): the difference is the relay's lag.
OWN: dict[str, list[float]] = {}
# CPU seconds per million sends in the timed window: the run process's (every thread: the relay, the log's spills),
# the Java child's and the bare loop's (every thread of the JVM).
CPU: dict[str, list[float]] = {}


# A JVM's threads by their names' starts (Linux keeps 15 characters): what each kind costs per million sends.
THREADS = (("main", "java"), ("I/O", "kafka-producer-"), ("JIT", "C1 CompilerThre"), ("JIT", "C2 CompilerThre"),
           ("GC", "GC Thread"), ("GC", "G1 "), ("GC", "VM Thread"))
# Per loop (java bare, kafka-clients child): kind of thread -> CPU seconds per million sends, one per round.
THREAD_CPU: dict[str, dict[str, list[float]]] = {}


def kind(name: str) -> str:
    return next((k for k, start in THREADS if name.startswith(start)), "other")


def stat_ticks(stat: str) -> tuple[str, int]:
    """A /proc stat file's (name, CPU clock ticks so far: user and system)."""
    fields = stat[stat.rindex(")") + 2:].split()
    return stat[stat.index("(") + 1: stat.rindex(")")], int(fields[11]) + int(fields[12])


def thread_ticks(pid: int) -> dict[str, int]:
    """CPU clock ticks of each thread of process pid so far, by "tid name" (as BareProducer prints them)."""
    ticks = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name, spent = stat_ticks((task / "stat").read_text())
        except OSError:  # the thread ended meanwhile
            continue
        ticks[f"{task.name} {name}"] = spent
    return ticks


def per_kind(loop: str, spent: dict[str, int], messages: int) -> None:
    """A round's ticks per thread, added up per kind of thread, as CPU seconds per million sends."""
    kinds: dict[str, float] = {}
    for thread, ticks in spent.items():
        k = kind(thread.split(" ", 1)[1])
        kinds[k] = kinds.get(k, 0.0) + ticks / os.sysconf("SC_CLK_TCK") * 1e6 / messages
    for k in (*dict(THREADS), "other"):
        THREAD_CPU.setdefault(loop, {}).setdefault(k, []).append(kinds.get(k, 0.0))


def process_cpu(pid: int) -> float:
    """CPU seconds of process pid so far (user and system, every thread)."""
    return stat_ticks(Path(f"/proc/{pid}/stat").read_text())[1] / os.sysconf("SC_CLK_TCK")


def foreign(name: str, bootstrap: str, topic: str, messages: int, work: Path) -> float:
    env = ensure(name, VERSIONS[name])
    if env.implementation.language == "java":
        env = replace(env, command=(*PIN, *env.command))
    child = ForeignProducer(env, bootstrap, topic, PARTITIONS, messages, SETTINGS[name],
                            work / f"{topic}.parquet", True, work / f"{topic}.log", None, 120.0, threading.Event())
    child.prepare()  # the JVM or interpreter started, the client built and connected: not timed, as in a run
    apply, done = child.reports.apply, []

    def timed(event):  # the result line read: every outcome line before it relayed and applied to the log
        apply(event)
        if type(event) is tuple and event[0] == "result":
            done.append((time.perf_counter(), time.process_time(), process_cpu(child.proc.pid),
                         thread_ticks(child.proc.pid)))

    child.reports.apply = timed
    cpu, child_cpu, threads = time.process_time(), process_cpu(child.proc.pid), thread_ticks(child.proc.pid)
    t = time.perf_counter()
    r = child.run()  # `go`, then every line to the result; then the child's exit and the log's close (not timed:
    # the bare loop has neither)
    assert r.acked == messages and done, (name, r)
    OWN.setdefault(name, []).append(messages / r.duration)
    CPU.setdefault(name, []).append((done[0][1] - cpu) * 1e6 / messages)
    CPU.setdefault(f"{name} child", []).append((done[0][2] - child_cpu) * 1e6 / messages)
    per_kind(f"{name} child", {t: n - threads.get(t, 0) for t, n in done[0][3].items()}, messages)
    return messages / (done[0][0] - t)


def appended_at(bootstrap: str, topic: str, offsets: dict[int, int]) -> dict[int, int]:
    """The broker's append time (ms, LogAppendTime) of the record at each partition's offset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    try:
        at = {}
        for partition, offset in offsets.items():
            consumer.assign([TopicPartition(topic, partition, offset)])
            msg = consumer.poll(30)
            assert msg is not None and not msg.error() and msg.offset() == offset, (topic, partition, offset, msg)
            assert msg.timestamp()[0] == 2, msg.timestamp()  # TIMESTAMP_LOG_APPEND_TIME: the topic's setting held
            at[partition] = msg.timestamp()[1]
        return at
    finally:
        consumer.close()


def steady_rate(bootstrap: str, topic: str, messages: int, start: int) -> float:
    """Sends per second from send `start` (the start // PARTITIONS-th of each partition: the loops send round robin)
    to the last, by the broker's append times: a batch's records share its time (ms), a millisecond of a window
    of seconds."""
    first = appended_at(bootstrap, topic, {p: start // PARTITIONS for p in range(PARTITIONS)})
    last = appended_at(bootstrap, topic, {p: (messages - 1 - p) // PARTITIONS for p in range(PARTITIONS)})
    return (messages - start) / ((max(last.values()) - min(first.values())) / 1000)


def median_interval(ratios: list[float], draws: int = 10_000) -> tuple[float, float]:
    """A 95 % bootstrap interval of the rounds' median ratio (seeded: the same rounds give the same interval): how
    far the median could move were the series run again, the rounds spreading as they do here."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def spread(ratios: list[float]) -> str:
    """The rounds' ratios around their median: its 95 % bootstrap interval, the quartiles, the extremes."""
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    low, high = median_interval(ratios)
    return (f"the median's 95 % bootstrap interval {low:.2f} to {high:.2f}; the rounds' ratios: quartiles "
            f"{quartiles[0]:.2f} and {quartiles[2]:.2f}, from {min(ratios):.2f} to {max(ratios):.2f}")


def compile_bare(work: Path) -> Path:
    """BareProducer compiled once, as the harness compiles its child (foreignenv.java_classes): run from source, a
    JVM's JIT goes on compiling the compiler in its first seconds, the timed ones."""
    home, classes = os.environ["KAFKA_HOME"], work / "bare-classes"
    classes.mkdir()
    jars = ":".join(str(jar) for jar in sorted(Path(home, "libs").glob("*.jar")))
    subprocess.run(["java", "-m", "jdk.compiler/com.sun.tools.javac.Main", "-d", str(classes), "-cp", jars, str(BARE)],
                   check=True, timeout=300)
    return classes


def bare_java(bootstrap: str, topic: str, messages: int, work: Path) -> float:
    # In a session of its own, as the harness starts every child (procs.spawn): with the kernel's autogroups a new
    # session is a new scheduling group, which changed the child's rate by a tenth (0.87 against 0.98 of the bare
    # loop, the same child by hand in either).
    home = os.environ["KAFKA_HOME"]
    done = subprocess.run([*PIN, "java", "-cp", f"{work / 'bare-classes'}:{home}/libs/*", BARE.stem, bootstrap, topic,
                           str(PARTITIONS),
                           str(messages), *(f"{k}={v}" for k, v in SETTINGS["kafka-clients"].items())],
                          capture_output=True, text=True, timeout=600, start_new_session=True)
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("rate ", "cpu ")))
    assert done.returncode == 0 and "rate" in said and "cpu" in said, done.stderr[-2000:]
    CPU.setdefault("java bare", []).append(float(said["cpu"]) * 1e6 / messages)
    per_kind("java bare", {thread: int(ticks) for ticks, thread in
                           (line[len("thread "):].split(" ", 1) for line in done.stdout.splitlines()
                            if line.startswith("thread "))}, messages)
    return float(said["rate"])


def librdkafka(bootstrap: str, topic: str, messages: int, work: Path) -> float:
    r = produce({"bootstrap.servers": bootstrap}, topic, PARTITIONS, messages, LIBRDKAFKA,
                DeliveryLog(work / f"{topic}.parquet", PARTITIONS))
    assert r.acked == messages, r
    return messages / r.duration


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=10,
                    help="rounds counted (the median's interval needs ten or so)")
    ap.add_argument("--warmup", type=int, default=1, help="rounds first run and shown, not counted (the broker is "
                    "slower in its first seconds, which favoured the later loop of a round by up to 1.4x)")
    ap.add_argument("--java", action="store_true", help="only the two Java loops (the goal's figures)")
    ap.add_argument("--jvm", default="", help="JVM options for both Java loops alike (as JAVA_TOOL_OPTIONS; not the "
                    "broker's), e.g. '-Xms1g -Xmx1g -XX:+AlwaysPreTouch': a heap touched before the timed part, so "
                    "neither loop pays for memory the machine never touched (2 s a GiB here, the rounds' noise)")
    ap.add_argument("--control", action="store_true", help="the bare loop against itself (no harness): how far the "
                    "ratio strays from 1 when nothing differs, on this machine, in as many rounds")
    ap.add_argument("--steady", type=int, default=0, metavar="N",
                    help="also the steady rate: from each loop's N-th send to its last, by the broker's append times")
    ap.add_argument("--pin", action="store_true", help="each Java loop on a core of its own (the last), everything "
                    "else on the others: the client's cost per send, apart from the broker's")
    args = ap.parse_args()
    if not os.environ.get("KAFKA_HOME"):
        print("KAFKA_HOME is not set: the Java client and the broker come from a Kafka distribution", file=sys.stderr)
        return 2
    if not 0 <= args.steady < args.messages - PARTITIONS:
        print(f"--steady: a send's number below --messages ({args.messages:,}), not {args.steady:,}", file=sys.stderr)
        return 2
    loops = {"java bare": bare_java, "java harness": lambda *a: foreign("kafka-clients", *a),
             "librdkafka harness": librdkafka, "kafka-python harness": lambda *a: foreign("kafka-python", *a),
             "aiokafka harness": lambda *a: foreign("aiokafka", *a)}
    if args.java:
        loops = {k: v for k, v in loops.items() if k.startswith("java ")}
    second = "java harness"  # the loop set against the bare one
    if args.control:
        second, loops = "java bare again", {"java bare": bare_java, "java bare again": bare_java}
    if args.pin:
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) < 2:
            print("--pin needs two cores at least", file=sys.stderr)
            return 2
        os.sched_setaffinity(0, cores[:-1])  # this process, the broker and the proxy (started after this)
        PIN[:] = ["taskset", "-c", str(cores[-1])]
    rates: dict[str, list[float]] = {name: [] for name in loops}
    steady: dict[str, list[float]] = {name: [] for name in loops}  # with --steady
    ratios: list[float] = []
    steady_ratios: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = make_cluster(LocalClusterSpec(backend="local", broker="kafka", brokers=1), work / "cluster")
        cluster.up()
        compile_bare(work)
        if args.jvm:  # after the broker started: its JVM keeps its own options
            os.environ["JAVA_TOOL_OPTIONS"] = args.jvm
        try:
            for r in range(-args.warmup, args.repeat):
                # The order alternates: the broker gets faster over its first rounds, which favours the later loop.
                for name, loop in (reversed(loops.items()) if r % 2 else loops.items()):
                    topic = f"bench-{name.replace(' ', '-')}-{r}"
                    create_topic(cluster.client, topic, PARTITIONS, 1,
                                 config={"message.timestamp.type": "LogAppendTime"} if args.steady else None)
                    rates[name].append(loop(cluster.bootstrap, topic, args.messages, work))
                    if args.steady:
                        steady[name].append(steady_rate(cluster.bootstrap, topic, args.messages, args.steady))
                    print(f"{'warm-up' if r < 0 else 'round'} {r + 1} {name:22s} {rates[name][-1]:>10,.0f} msg/s"
                          + (f", steady {steady[name][-1]:>10,.0f}" if args.steady else ""), flush=True)
                ratios.append(rates[second][-1] / rates["java bare"][-1])
                if args.steady:
                    steady_ratios.append(steady[second][-1] / steady["java bare"][-1])
                print(f"{'warm-up' if r < 0 else 'round'} {r + 1} {second} / bare    {ratios[-1]:.2f}x"
                      + (f", steady {steady_ratios[-1]:.2f}x" if args.steady else ""), flush=True)
                if r < 0:  # not counted
                    for figures in (*rates.values(), *steady.values(), ratios, steady_ratios, *OWN.values(),
                                    *CPU.values(),
                                    *(series for kinds in THREAD_CPU.values() for series in kinds.values())):
                        del figures[-1:]
        finally:
            cluster.down()
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\n{args.messages:,} messages x {args.repeat} rounds, {PARTITIONS} partitions, 1 local Kafka node "
          "through the embedded proxy, idempotent, acks=all, linger 5 ms"
          + (f"; both JVMs: {args.jvm}" if args.jvm else "")
          + (f"; the Java loops pinned to core {PIN[-1]}, the rest to the others" if PIN else ""))
    for name, rate in med.items():
        print(f"{name:22s} {rate:>10,.0f} msg/s")
    print(f"{second} / bare    {statistics.median(ratios):.2f}x   ({'' if args.control else 'goal >= 0.9; '}"
          f"{spread(ratios)})")
    if args.steady:
        print(f"{second} / bare, steady from send {args.steady:,} by the broker's clock    "
              f"{statistics.median(steady_ratios):.2f}x   ({spread(steady_ratios)}; steady rates: bare "
              f"{statistics.median(steady['java bare']):,.0f}, {second} {statistics.median(steady[second]):,.0f} msg/s)")
    if args.control:
        return 0
    own = statistics.median(OWN["kafka-clients"])
    print(f"java child by its own clock {own:>10,.0f} msg/s, / bare {own / med['java bare']:.2f}x  "
          "(beside the run's figure: the difference is the relay's lag)")
    bare, child, run = (statistics.median(CPU[k]) for k in ("java bare", "kafka-clients child", "kafka-clients"))
    print(f"CPU per million sends: bare loop {bare:.2f} s; the harness's child {child:.2f} s ({child / bare:.2f}x) and "
          f"the run {run:.2f} s: together {(child + run) / bare:.2f}x the bare loop's")
    print("  per kind of thread: " + ", ".join(
        f"{k} {statistics.median(THREAD_CPU['java bare'][k]):.2f}/"
        f"{statistics.median(THREAD_CPU['kafka-clients child'][k]):.2f}" for k in THREAD_CPU["java bare"])
        + " s (bare/child; clock ticks of 1/%d s, medians)" % os.sysconf("SC_CLK_TCK"))
    for name in ("kafka-python harness", "aiokafka harness")[:0 if args.java else 2]:
        print(f"{name} / librdkafka harness {med[name] / med['librdkafka harness']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
