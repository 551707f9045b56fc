"""The final read's throughput: the PySpark data source against a bare confluent-kafka consumer loop.

One embedded Tansu broker behind its proxy, one topic of --records records over --partitions
partitions (written once, without faults), then in one run and alternating --repeat times:
  bare    one consumer, all partitions assigned from offset 0, consume() until every partition
          reports EOF: once with librdkafka's defaults (the baseline of earlier measurements), once
          with the final read's own settings (so the ratio is what Spark and the data source cost);
  spark   the harness's data source (one Spark task per partition) into a no-op sink.

    python bench/read.py [--records 1000000] [--partitions 6] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: E402

from harness.cluster.local import LocalTansuCluster  # noqa: E402
from harness.spec import LocalClusterSpec  # noqa: E402
from harness.engine.readback import consumer_config  # noqa: E402
from harness.workload.deliverylog import DeliveryLog  # noqa: E402
from harness.workload.producer import produce  # noqa: E402
from harness.cluster.topic import create_topic  # noqa: E402


def bare_loop(bootstrap: str, topic: str, partitions: int, records: int, tuned: bool = True) -> float:
    """records/s of one consumer over every partition; tuned: with the final read's own consumer settings (no
    waiting at a partition's end, no fetch backoff: the ratio is then what Spark and the data source cost),
    else librdkafka's defaults (the baseline of earlier measurements, 4x slower on Tansu)."""
    conf = (consumer_config({"bootstrap.servers": bootstrap}, "read_uncommitted") if tuned else
            {"bootstrap.servers": bootstrap, "enable.auto.commit": False, "enable.partition.eof": True,
             "fetch.max.bytes": 52428800})
    c = Consumer({**conf, "group.id": "bench-bare", "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    t = time.perf_counter()
    n, eof = 0, set()
    while len(eof) < partitions:
        for m in c.consume(50_000, timeout=0.1):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            m.value()
            n += 1
    elapsed = time.perf_counter() - t
    c.close()
    assert n == records, (n, records)
    return n / elapsed


def compare(spark_read, bootstrap: str, topic: str, partitions: int, records: int, repeat: int) -> dict[str, float]:
    """`repeat` alternating rounds of both bare loops and spark_read() (records/s); their medians, printed."""
    rates = {"bare, defaults": [], "bare, same settings": [], "spark": []}
    for i in range(repeat):
        rates["bare, defaults"].append(bare_loop(bootstrap, topic, partitions, records, tuned=False))
        rates["bare, same settings"].append(bare_loop(bootstrap, topic, partitions, records))
        rates["spark"].append(spark_read())
        print(f"round {i + 1}: " + "   ".join(f"{k} {v[-1]:>9,.0f} rec/s" for k, v in rates.items()), flush=True)
    medians = {k: statistics.median(v) for k, v in rates.items()}
    print(f"bare consumer loop, librdkafka's defaults   {medians['bare, defaults']:>10,.0f} records/s")
    print(f"bare consumer loop, the read's settings     {medians['bare, same settings']:>10,.0f} records/s")
    print(f"spark data source                           {medians['spark']:>10,.0f} records/s")
    print(f"spark / bare with the same settings  {medians['spark'] / medians['bare, same settings']:.2f}x   (goal >= 0.9)")
    print(f"spark / bare with the defaults       {medians['spark'] / medians['bare, defaults']:.2f}x")
    return medians


def spark_read(spark, bootstrap: str, topic: str, partitions: int, records: int) -> float:
    from harness.engine.readback import read_topic

    df = read_topic(spark, {"bootstrap.servers": bootstrap}, topic, partitions)
    t = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - t
    return records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from harness.engine.session import spark_session, stop_session

    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalTansuCluster(LocalClusterSpec(), Path(tmp))
        spark = spark_session()
        try:
            cluster.up()
            topic = "bench-read"
            create_topic(cluster.client, topic, args.partitions, 1)
            r = produce(cluster.client, topic, args.partitions, args.records, {"linger.ms": 20},
                        DeliveryLog(Path(tmp) / "acks.parquet", args.partitions))
            assert r.acked == args.records, r
            print(f"{args.records:,} records, {args.partitions} partitions, through the proxy, medians of "
                  f"{args.repeat}")
            compare(lambda: spark_read(spark, cluster.bootstrap, topic, args.partitions, args.records),
                    cluster.bootstrap, topic, args.partitions, args.records, args.repeat)
        finally:
            stop_session(spark)
            cluster.down()


if __name__ == "__main__":
    main()
