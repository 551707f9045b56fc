"""A series of runs of one of the known-bugs' single-file programs (a Java one, or a kafka-python one at the
version asked for) against one local Apache Kafka node started for the series (the harness's local backend), at the
transaction version asked for, with lines of the broker's log counted at the end. Each run gets a topic of its own
(3 partitions); the program's arguments are BOOTSTRAP TOPIC and then what follows `--`, where `{pid}` stands for the
broker's process id. With --kill-on TEXT the broker is killed when the program prints a line holding TEXT, the
program is told so on its stdin ("killed"), and the broker starts again --down seconds after the kill.

    KAFKA_HOME=... python experiments/known-bugs/series.py PROGRAM.java --tv 2 --runs 4 --count TEXT -- ARGS...
    e.g. series.py java-endtxn-race/EndTxnRace.java --tv 1 --runs 4 \\
             --count "but received transaction marker result to send" -- 100 100 2 idle
         series.py kafka-python-lost-add-partitions/kill_coordinator.py --kafka-python 3.0.12 --runs 5 \\
             --kill-on KILL --down 3
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.cluster import make_cluster  # noqa: E402
from harness.cluster.topic import create_topic  # noqa: E402
from harness.spec import LocalClusterSpec  # noqa: E402
from harness.workload.clientenv import clients_folder  # noqa: E402
from harness.workload.foreignenv import ensure  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("program", type=Path, help="the .java file (its class named as the file)")
    ap.add_argument("--tv", choices=("1", "2"), default="2", help="transaction.version (1: the node downgraded)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--kafka-python", metavar="VERSION", help="the kafka-python a .py program runs with")
    ap.add_argument("--kill-on", metavar="TEXT", help="kill the broker when the program prints a line holding TEXT")
    ap.add_argument("--down", type=float, default=3.0, help="seconds from that kill to the broker's start (3)")
    ap.add_argument("--count", action="append", default=[], help="text counted in the broker's log (repeatable)")
    ap.add_argument("--show", action="append", default=[],
                    help="text whose first line in the broker's log is printed, with the line before and 16 after")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.args = argv[cut + 1:]  # the program's arguments after BOOTSTRAP TOPIC
    home = os.environ.get("KAFKA_HOME", "")
    if not Path(home, "libs").is_dir():
        ap.error(f"KAFKA_HOME must name an Apache Kafka folder (with libs/); it is {home!r}")
    if not a.program.is_file():
        ap.error(f"program: no such file: {a.program}")
    if (a.program.suffix == ".py") != bool(a.kafka_python):
        ap.error("--kafka-python VERSION goes with a .py program, and only with one")
    features = [f"{home}/bin/kafka-features.sh", "--bootstrap-server"]
    with tempfile.TemporaryDirectory() as tmp:
        command, env = program_command(a, home, Path(tmp))
        cluster = make_cluster(LocalClusterSpec(backend="local", broker="kafka", brokers=1), Path(tmp) / "cluster")
        cluster.up()
        try:
            if a.tv != "2":
                subprocess.run([*features, cluster.bootstrap, "downgrade", "--feature", f"transaction.version={a.tv}"],
                               check=True)
            described = subprocess.run([*features, cluster.bootstrap, "describe"], capture_output=True, text=True)
            print(*(line for line in described.stdout.splitlines() if "transaction.version" in line), flush=True)
            for r in range(a.runs):
                topic = f"{a.program.stem.lower()}-tv{a.tv}-{r}"
                create_topic(cluster.client, topic, 3, 1)
                t = time.monotonic()
                pid = str(cluster.brokers[0].proc.pid)
                said = run_program([*command, cluster.bootstrap, topic, *(x.replace("{pid}", pid) for x in a.args)],
                                   env, cluster, a.kill_on, a.down)
                print(f"run {r}: {time.monotonic() - t:.0f} s: " + "\n  ".join(said), flush=True)
            logs = [log.read_text(errors="replace") for log in Path(tmp).rglob("server.log*")]
            for text in a.count:
                print(f"the broker's log, '{text}': {sum(log.count(text) for log in logs)}")
            lines = [line for log in logs for line in log.splitlines()]
            for text in a.show:
                at = next((i for i, line in enumerate(lines) if text in line), None)
                print(f"the broker's log, first '{text}':", *lines[max(at - 1, 0):at + 17] if at is not None else ["(none)"],
                      sep="\n  ")
        finally:
            cluster.down()


def run_program(command: list[str], env: dict, cluster, kill_on: str | None, down: float) -> list[str]:
    """The program's output lines (its stderr's last line if it printed nothing), the broker killed and started
    again on the way when kill_on says so."""
    with tempfile.TemporaryFile("w+") as err:
        program = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                   env=env)
        said = []
        for line in program.stdout:
            said.append(line.rstrip("\n"))
            if kill_on and kill_on in line:
                killed = time.monotonic()
                cluster.kill_broker(0)
                program.stdin.write("killed\n")
                program.stdin.flush()
                time.sleep(max(0.0, killed + down - time.monotonic()))
                cluster.start_broker(0)
                said.append(f"(series: broker killed, started again {down:g} s later, "
                            f"running {time.monotonic() - killed:.1f} s after the kill)")
        program.wait(timeout=3600)
        err.seek(0)
        return said if any(said) else err.read().strip().splitlines()[-1:]


def program_command(a, home: str, tmp: Path) -> tuple[list[str], dict]:
    """The command line that runs the program (its arguments to follow), and its environment."""
    if a.program.suffix == ".py":
        ensure("kafka-python", a.kafka_python)
        return [sys.executable, str(a.program)], {**os.environ,
                                                  "PYTHONPATH": str(clients_folder() / f"kafka-python-{a.kafka_python}")}
    classes = tmp / "classes"
    jars = ":".join(str(j) for j in sorted(Path(home, "libs").glob("*.jar")))
    subprocess.run(["java", "-m", "jdk.compiler/com.sun.tools.javac.Main", "-d", str(classes), "-nowarn", "-cp",
                    jars, str(a.program)], check=True)
    return ["java", "-cp", f"{classes}:{home}/libs/*", a.program.stem], dict(os.environ)


if __name__ == "__main__":
    main()
