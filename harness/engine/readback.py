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

The read proves its range (final_read): each partition is read from its log start offset (the low
watermark; above 0 the broker deleted records before the read) to at least its listed end, with
auto.offset.reset=error (a start deleted during the read fails the read, it is never skipped
silently), and the ends are listed again afterwards; the read is repeated until they held still.
What it proved is returned, and the run keeps it as <variant>/read.json: after such a read an
acknowledged value that is absent is lost wherever it sat.

One Spark input partition per topic partition, or per offset range of one: a topic partition
longer than `split` records (option, default SPLIT) is read as ranges [start, start + split) and
a last open range, so a long soak's partition is several Spark tasks. Each task writes its own
Parquet file, in offset order; the analysis orders a partition's files by their offset statistics
(rowgroups.py), so the split changes nothing it finds. Records come out as Arrow batches.

    spark.dataSource.register(KafkaLogSource)
    df = (spark.read.format("kafka_chaos_log")
          .option("client_config", '{"bootstrap.servers": "127.0.0.1:9092"}')
          .option("topic", "t").option("partitions", "3").load())
"""

from __future__ import annotations

import bisect
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..formats import LOG_SCHEMA, spark_ddl
from ..offsets import LEADER_MOVING, watermarks

BATCH = 50_000
# consume() returns when BATCH records are there or its wait is over, whichever is first: at a partition's
# end it always waits the whole wait. 0.1 s made every read of a small topic 0.1 s longer per partition
# (0.2 -> 0.06 s for 66,667 records); a short wait only means smaller batches while records stream in.
WAIT = 0.01
SPLIT = 4_000_000  # records per Spark task at most, when the listed end says a partition is longer
READS = 3  # reads at most until the listed ends hold still
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
        return spark_ddl(LOG_SCHEMA)

    def reader(self, schema) -> "KafkaLogReader":
        return KafkaLogReader(self.options)


def consumer_config(client_config: dict, isolation: str) -> dict:
    return {
        **client_config,  # bootstrap.servers and any security settings
        "group.id": "kafka-chaos-final-read",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",  # an offset out of range is an error of the read, never a silent skip
        "isolation.level": isolation,
        "fetch.max.bytes": 52428800,
        # The read waits for nothing: the faults are healed and every record is in the log. librdkafka's
        # defaults pace a fast reader: a fetch that finds nothing new waits 500 ms for data (at every
        # partition's end), and a local queue past queued.min.messages postpones the next fetch up to 1 s.
        # Without them the read ran 4x faster (bench/read.py's bare loop, 150k -> 620k records/s on Tansu).
        "fetch.wait.max.ms": 5,
        "fetch.queue.backoff.ms": 0,
    }


def _consumer(client_config: dict, isolation: str):
    from confluent_kafka import Consumer

    return Consumer(consumer_config(client_config, isolation))


def watermark(consumer, topic: str, partition: int, timeout: float = 30) -> tuple[int, int]:
    """One partition's (log start offset, end offset) as its leader lists them, asked by a reader's own
    consumer. librdkafka neither retries nor marks retriable an error of a moving leader here: it is asked
    again until `timeout`."""
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + timeout
    while True:
        try:
            return tuple(consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                        timeout=max(1.0, deadline - time.monotonic())))
        except KafkaException as e:
            if e.args[0].code() not in LEADER_MOVING or time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict):
        self.topic = options["topic"]
        self.partitions_count = int(options["partitions"])
        self.timeout = float(options.get("timeout", "120"))
        self.isolation = options.get("isolation", "read_committed")
        self.client_config = json.loads(options.get("client_config", "{}"))
        self.split = options.get("split", str(SPLIT))
        self.starts = json.loads(options.get("starts", "null"))  # where each partition's read begins
        self.ends = json.loads(options.get("ends", "null"))  # each partition's listed end, when the caller knows it

    def partitions(self) -> list[InputPartition]:
        split = int(self.split)
        starts = self.starts or [0] * self.partitions_count
        if split <= 0:
            return [InputPartition((p, starts[p], None)) for p in range(self.partitions_count)]
        ends = self.ends or [end for _, end in watermarks(self.client_config, self.topic, self.partitions_count,
                                                           self.isolation)]
        return [InputPartition((p, start, end)) for p in range(self.partitions_count)
                for start, end in offset_ranges(ends[p], split, starts[p])]

    def _consumer(self):
        return _consumer(self.client_config, self.isolation)

    def read(self, partition: InputPartition):
        """One offset range of a topic partition: [start, end), or from start to the partition's end."""
        from confluent_kafka import KafkaError, TopicPartition

        if partition.value is None:  # no partitions at all (Spark then reads one empty input partition)
            return
        p, start, end = partition.value
        consumer = self._consumer()
        try:
            listed_end = end
            if end is None:
                _, listed_end = watermark(consumer, self.topic, p)
            consumer.assign([TopicPartition(self.topic, p, start)])
            deadline = time.monotonic() + self.timeout
            done = False
            stop_at = end if end is not None else 1 << 62
            while not done:
                # Whole-batch list comprehensions: the per-record cost of this loop is the read's speed.
                msgs = consumer.consume(BATCH, timeout=WAIT)
                eof = None
                events = [m for m in msgs if m.error() is not None]  # rare: the end, or an error
                if events:
                    for m in events:
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            raise RuntimeError(f"reading {self.topic}[{p}]: {m.error().str()}")
                        eof = m.offset()
                    msgs = [m for m in msgs if m.error() is None]
                offsets = [m.offset() for m in msgs]
                if offsets and offsets[-1] >= stop_at:  # the next range's records
                    cut = bisect.bisect_left(offsets, stop_at)
                    msgs, offsets, done = msgs[:cut], offsets[:cut], True
                if offsets:
                    deadline = time.monotonic() + self.timeout  # the timeout is for a read that makes no progress
                    stamps = pa.array([m.timestamp()[1] for m in msgs], pa.int64())
                    yield pa.record_batch([
                        pa.repeat(pa.scalar(p, pa.int32()), len(offsets)), pa.array(offsets, pa.int64()),
                        parse_values([m.value() for m in msgs]),
                        pc.multiply(stamps, 1000).cast(pa.timestamp("us", tz="UTC")),
                        pa.array([m.leader_epoch() for m in msgs], pa.int32()),
                    ], schema=LOG_SCHEMA)
                if eof is not None and eof >= listed_end:
                    return
                if not done and time.monotonic() > deadline:
                    raise TimeoutError(f"reading {self.topic}[{p}] from offset {start}: no record and no end of "
                                       f"partition for {self.timeout:.0f}s")
        finally:
            consumer.close()


def offset_ranges(listed_end: int, split: int, start: int = 0) -> list[tuple[int, int | None]]:
    """Equal [start, end) ranges of at most `split` records covering offsets start..listed_end, the last one
    open (it reads on to the partition's true end): offset_ranges(10, 4) -> [(0, 4), (4, 8), (8, None)],
    offset_ranges(9, 8) -> [(0, 5), (5, None)], offset_ranges(10, 4, 6) -> [(6, None)]."""
    length = max(0, listed_end - start)
    count = max(1, -(-length // split))
    size = -(-length // count)
    starts = [start + k * size for k in range(count)]
    return [(s, s + size) for s in starts[:-1]] + [(starts[-1], None)]


def read_topic(spark, client: dict, topic: str, partitions: int, isolation: str = "read_committed",
               split: int = SPLIT, starts: list[int] | None = None, ends: list[int] | None = None):
    """The topic as a DataFrame. client: librdkafka connection settings (bootstrap.servers, security).
    split: records per Spark task at most (0: one task per topic partition); starts: the offset each
    partition's read begins at (default 0); ends: each partition's listed end, where the caller just
    asked (default: asked again; it only decides the split, a read goes on to the partition's true end)."""
    return (spark.read.format(KafkaLogSource.name())
            .option("client_config", json.dumps(client)).option("topic", topic).option("partitions", str(partitions))
            .option("isolation", isolation).option("split", str(split)).option("starts", json.dumps(starts))
            .option("ends", json.dumps(ends)).load())


def save_log(spark, client: dict, topic: str, partitions: int, path: Path, isolation: str = "read_committed",
             split: int = SPLIT, starts: list[int] | None = None, ends: list[int] | None = None) -> None:
    """Every record of the topic, one Parquet file per topic partition (or per offset range of one, see
    SPLIT) in offset order. Spark writes _SUCCESS last, so a folder without it is a read that did not
    finish. With read_committed (the default) a partition ends at its last stable offset: records of
    aborted transactions are left out, and so is everything after a transaction that never ended (a
    broker bug that then shows as lost)."""
    read_topic(spark, client, topic, partitions, isolation, split, starts, ends).write.mode("overwrite").parquet(
        str(path))


def final_read(spark, client: dict, topic: str, partitions: int, path: Path, isolation: str = "read_committed",
               split: int = SPLIT, reads: int = READS) -> dict:
    """The final read (save_log) from each partition's log start, repeated until the listed ends held still
    over a whole read, at most `reads` times. Returns what it proved, as the run keeps it (read.json):
    {"isolation", "complete": the ends held still, "reads", "start": [log start per partition],
     "end": [listed end per partition]}. The caller raises each end to the last offset read + 1 (a broker's
    listed end may lag what a fetch returns)."""
    before = watermarks(client, topic, partitions, isolation)
    for n in range(1, reads + 1):
        save_log(spark, client, topic, partitions, path, isolation, split, starts=[lo for lo, _ in before],
                 ends=[hi for _, hi in before])
        after = watermarks(client, topic, partitions, isolation)
        held = after == before
        if held:
            break
        before = after
    return {"isolation": isolation, "complete": held, "reads": n, "start": [lo for lo, _ in after],
            "end": [hi for _, hi in after]}
