"""A series of EndTxnRace.java runs against one local Apache Kafka node started for it (the harness's local backend),
with the transaction version asked for, and the broker's refusals counted in its log (java-endtxn-race.md).

    KAFKA_HOME=... python experiments/known-bugs/java-endtxn-race/series.py TV IO RUNS TRANSACTIONS BUSY
    e.g. series.py 2 idle 4 100 2      (the shrunk series; TV 1 is the control: the node downgraded to version 1)
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from harness.cluster import make_cluster  # noqa: E402
from harness.cluster.topic import create_topic  # noqa: E402
from harness.spec import LocalClusterSpec  # noqa: E402

REFUSAL = "but received transaction marker result to send"


def main(tv: str, io: str, runs: int, transactions: int, busy: int) -> None:
    home = os.environ["KAFKA_HOME"]
    features = [f"{home}/bin/kafka-features.sh", "--bootstrap-server"]
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        jars = ":".join(str(j) for j in sorted(Path(home, "libs").glob("*.jar")))
        subprocess.run(["java", "-m", "jdk.compiler/com.sun.tools.javac.Main", "-d", str(classes), "-nowarn", "-cp",
                        jars, str(Path(__file__).with_name("EndTxnRace.java"))], check=True)
        cluster = make_cluster(LocalClusterSpec(backend="local", broker="kafka", brokers=1), Path(tmp) / "cluster")
        cluster.up()
        try:
            if tv != "2":
                subprocess.run([*features, cluster.bootstrap, "downgrade", "--feature", f"transaction.version={tv}"],
                               check=True)
            described = subprocess.run([*features, cluster.bootstrap, "describe"], capture_output=True, text=True)
            print(*(line for line in described.stdout.splitlines() if "transaction.version" in line), flush=True)
            for r in range(runs):
                topic = f"race-tv{tv}-{io}-{r}"
                create_topic(cluster.client, topic, 3, 1)
                t = time.monotonic()
                done = subprocess.run(["java", "-cp", f"{classes}:{home}/libs/*", "EndTxnRace", cluster.bootstrap,
                                       topic, str(transactions), "100", str(busy), io],
                                      capture_output=True, text=True, timeout=1800)
                said = done.stdout.strip().replace("\n", " | ") or done.stderr.strip().splitlines()[-1]
                print(f"run {r}: {time.monotonic() - t:.0f} s: {said}", flush=True)
            refusals = sum(log.read_text(errors="replace").count(REFUSAL) for log in Path(tmp).rglob("server.log*"))
            print(f"the broker's refusals ('{REFUSAL}'): {refusals}")
        finally:
            cluster.down()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
