"""The final read: every record of a variant's topic, read back with PySpark into log.parquet.

KafkaLogSource is a PySpark Python data source over confluent-kafka. Spark's own Kafka
connector is a JVM package fetched from Maven at run time; this source needs nothing beyond
the Python client the harness already uses, and it decides where a partition ends the way
this harness needs: it reads from offset 0 until librdkafka reports partition EOF at or past
the end the broker lists. Tansu's ListOffsets high watermark can lag the log for batched
writes, while the EOF that fetch responses carry is exact, so the listed end is only a lower
bound.

A record whose value is not a decimal number in the workload's format (another producer, a
foreign format, a tombstone) is kept with a null value: the analysis counts it as unexpected,
it never stops the read.

One Spark input partition per topic partition; records come out as Arrow batches.

    spark.dataSource.register(KafkaLogSource)
    df = (spark.read.format("kafka_chaos_log")
          .option("client_config", '{"bootstrap.servers": "127.0.0.1:9092"}')
          .option("topic", "t").option("partitions", "3").load())
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

SCHEMA = "partition int, offset long, value long, timestamp timestamp"
BATCH = 50_000
# The workload writes values as "%d": canonical decimal only ("007" or " 5" are someone else's).
DECIMAL = r"^(0|-?[1-9][0-9]{0,17})$"


def parse_values(raw: list) -> pa.Array:
    """Record values (bytes or None) -> int64, null where the value is not a canonical decimal."""
    arr = pa.array(raw, pa.binary())
    ok = pc.fill_null(pc.match_substring_regex(arr, DECIMAL), False)
    kept = pc.if_else(ok, arr, pa.scalar(None, pa.binary()))
    return pc.cast(pc.cast(kept, pa.string()), pa.int64())


class KafkaLogSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka_chaos_log"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema) -> "KafkaLogReader":
        return KafkaLogReader(self.options)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict):
        self.topic = options["topic"]
        self.partitions_count = int(options["partitions"])
        self.timeout = float(options.get("timeout", "120"))
        self.isolation = options.get("isolation", "read_committed")
        self.client_config = json.loads(options.get("client_config", "{}"))

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(p) for p in range(self.partitions_count)]

    def read(self, partition: InputPartition):
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        p = partition.value
        consumer = Consumer({
            **self.client_config,  # bootstrap.servers and any security settings
            "group.id": "kafka-chaos-final-read",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": self.isolation,
            "fetch.max.bytes": 52428800,
        })
        schema = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("value", pa.int64()),
                            ("timestamp", pa.timestamp("us", tz="UTC"))])
        try:
            _, listed_end = consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=30)
            consumer.assign([TopicPartition(self.topic, p, 0)])
            deadline = time.monotonic() + self.timeout
            while True:
                offsets, values, stamps, eof = [], [], [], None
                for msg in consumer.consume(BATCH, timeout=0.1):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            eof = msg.offset()
                            continue
                        raise RuntimeError(f"reading {self.topic}[{p}]: {err.str()}")
                    offsets.append(msg.offset())
                    values.append(msg.value())
                    stamps.append(msg.timestamp()[1] * 1000)
                if offsets:
                    yield pa.record_batch([
                        pa.array([p] * len(offsets), pa.int32()), pa.array(offsets, pa.int64()), parse_values(values),
                        pa.array(stamps, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                    ], schema=schema)
                if eof is not None and eof >= listed_end:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading {self.topic}[{p}]: no end of partition after {self.timeout:.0f}s")
        finally:
            consumer.close()


def read_topic(spark, client: dict, topic: str, partitions: int, isolation: str = "read_committed"):
    """The topic as a DataFrame. client: librdkafka connection settings (bootstrap.servers, security)."""
    return (spark.read.format(KafkaLogSource.name())
            .option("client_config", json.dumps(client)).option("topic", topic).option("partitions", str(partitions))
            .option("isolation", isolation).load())


def save_log(spark, client: dict, topic: str, partitions: int, path: Path, isolation: str = "read_committed") -> None:
    """The final read: every record of the topic, one Parquet file per topic partition in offset order.
    Spark writes _SUCCESS last, so a folder without it is a read that did not finish. With read_committed
    (the default) a partition ends at its last stable offset: records of aborted transactions are left out,
    and so is everything after a transaction that never ended (a broker bug that then shows as lost)."""
    read_topic(spark, client, topic, partitions, isolation).write.mode("overwrite").parquet(str(path))
