"""The final read's reader without a broker: a fake consumer hands it records in batches."""

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError
from pyspark.sql.datasource import InputPartition

from harness import offsets
from harness.engine import readback


class Err:
    def __init__(self, code):
        self._code = code

    def code(self):
        return self._code

    def str(self):
        return f"error {self._code}"


class Msg:
    def __init__(self, offset, value=None, error=None):
        self._offset, self._value, self._error = offset, value, error

    def error(self):
        return self._error

    def offset(self):
        return self._offset

    def value(self):
        return self._value

    def timestamp(self):
        return (1, 1_790_000_000_000 + self._offset)

    def leader_epoch(self):
        return None if self._offset % 2 else self._offset // 10  # the client says none for some records


class FakeConsumer:
    """A partition of `length` records ("0", "1", ...) from the assigned offset, `per_batch` at a time,
    then partition EOF at the end; or an error instead of the first record."""

    def __init__(self, length, per_batch, error=None):
        self.length, self.per_batch, self.error, self.position = length, per_batch, error, None

    def get_watermark_offsets(self, tp, timeout):
        return 0, self.length

    def assign(self, tps):
        self.position = tps[0].offset

    def consume(self, n, timeout):
        if self.error is not None:
            return [Msg(-1, error=Err(self.error))]
        out = [Msg(o, str(o).encode()) for o in range(self.position, min(self.position + self.per_batch, self.length))]
        self.position += len(out)
        if self.position >= self.length:
            out.append(Msg(self.length, error=Err(KafkaError._PARTITION_EOF)))
        return out

    def close(self):
        pass


def read(monkeypatch, consumer, value):
    reader = readback.KafkaLogReader({"topic": "t", "partitions": "1", "timeout": "5"})
    monkeypatch.setattr(reader, "_consumer", lambda: consumer)
    return pa.Table.from_batches(list(reader.read(InputPartition(value))))


def test_a_range_stops_at_its_end_and_the_last_range_at_the_partitions_end(monkeypatch):
    first = read(monkeypatch, FakeConsumer(12, per_batch=4), (0, 0, 5))
    assert first.column("offset").to_pylist() == [0, 1, 2, 3, 4] == first.column("value").to_pylist()
    assert first.column("partition").to_pylist() == [0] * 5
    assert first.column("timestamp").cast(pa.int64()).to_pylist() == [(1_790_000_000_000 + o) * 1000 for o in range(5)]
    assert first.column("leader_epoch").to_pylist() == [0, None, 0, None, 0]  # as the client said, None kept
    middle = read(monkeypatch, FakeConsumer(12, per_batch=4), (0, 5, 10))
    assert middle.column("offset").to_pylist() == [5, 6, 7, 8, 9]
    last = read(monkeypatch, FakeConsumer(12, per_batch=5), (0, 10, None))
    assert last.column("offset").to_pylist() == [10, 11]


def test_a_topic_of_no_partitions_reads_nothing_and_asks_no_broker(monkeypatch):
    # Spark reads one input partition of value None when a source lists none (the session's warm-up read)
    reader = readback.KafkaLogReader({"topic": "t", "partitions": "0", "split": "0"})
    assert reader.partitions() == []
    monkeypatch.setattr(reader, "_consumer", lambda: pytest.fail("no consumer for nothing to read"))
    assert list(reader.read(InputPartition(None))) == []


def test_a_read_error_is_raised_naming_the_partition(monkeypatch):
    with pytest.raises(RuntimeError, match=r"reading t\[0\]: error 3"):
        read(monkeypatch, FakeConsumer(12, per_batch=4, error=3), (0, 0, None))


def test_partitions_are_offset_ranges_of_the_listed_ends(monkeypatch):
    reader = readback.KafkaLogReader({"topic": "t", "partitions": "2", "split": "4"})
    monkeypatch.setattr(readback, "watermarks", lambda *a: [(0, 10), (0, 3)])
    assert [p.value for p in reader.partitions()] == [(0, 0, 4), (0, 4, 8), (0, 8, None), (1, 0, None)]
    unsplit = readback.KafkaLogReader({"topic": "t", "partitions": "2", "split": "0"})
    assert [p.value for p in unsplit.partitions()] == [(0, 0, None), (1, 0, None)]
    # Each partition's read begins where the final read says (its log start offset).
    started = readback.KafkaLogReader({"topic": "t", "partitions": "2", "split": "4", "starts": "[6, 1]"})
    assert [p.value for p in started.partitions()] == [(0, 6, None), (1, 1, None)]
    # Ends the caller just listed are not asked again.
    monkeypatch.setattr(readback, "watermarks", lambda *a: pytest.fail("the ends were given"))
    given = readback.KafkaLogReader({"topic": "t", "partitions": "2", "split": "4", "ends": "[9, 2]"})
    assert [p.value for p in given.partitions()] == [(0, 0, 3), (0, 3, 6), (0, 6, None), (1, 0, None)]


def test_the_final_read_repeats_until_the_ends_hold_still(monkeypatch):
    listed = iter([[(0, 10)], [(0, 12)], [(0, 12)]])  # before the first read, after it (moved), after the second
    reads = []
    monkeypatch.setattr(readback, "watermarks", lambda *a: next(listed))
    monkeypatch.setattr(readback, "save_log", lambda *a, starts, ends, **k: reads.append((starts, ends)))
    got = readback.final_read(None, {}, "t", 1, "path")
    assert got == {"isolation": "read_committed", "complete": True, "reads": 2, "start": [0], "end": [12]}
    assert reads == [([0], [10]), ([0], [12])]  # each read is split by the ends listed just before it


def test_a_final_read_whose_ends_never_hold_still_is_not_complete(monkeypatch):
    ends = iter(range(100))
    monkeypatch.setattr(readback, "watermarks", lambda *a: [(3, next(ends))])
    reads = []
    monkeypatch.setattr(readback, "save_log", lambda *a, starts, **k: reads.append(starts))
    got = readback.final_read(None, {}, "t", 1, "path", reads=3)
    assert (got["complete"], got["reads"], got["start"]) == (False, 3, [3])
    assert reads == [[3], [3], [3]]  # each read begins at the log start the broker lists


def test_the_read_never_skips_an_offset_out_of_range():
    config = readback.consumer_config({"bootstrap.servers": "127.0.0.1:1"}, "read_uncommitted")
    assert (config["auto.offset.reset"], config["isolation.level"]) == ("error", "read_uncommitted")
    assert config["bootstrap.servers"] == "127.0.0.1:1" and config["enable.auto.commit"] is False
    # nothing is left to wait for: no 500 ms wait at each partition's end, no backoff of a full local queue
    assert config["fetch.wait.max.ms"] <= 10 and config["fetch.queue.backoff.ms"] == 0


def test_offset_ranges():
    assert readback.offset_ranges(10, 4) == [(0, 4), (4, 8), (8, None)]
    assert readback.offset_ranges(8, 4) == [(0, 4), (4, None)]
    assert readback.offset_ranges(0, 4) == [(0, None)] and readback.offset_ranges(3, 4) == [(0, None)]
    assert readback.offset_ranges(9, 8) == [(0, 5), (5, None)]  # equal halves, not 8 + 1


def test_a_watermark_is_asked_again_while_the_leader_moves_and_other_errors_are_raised():
    from confluent_kafka import KafkaError, KafkaException

    from harness.engine.readback import watermark

    class Consumer:  # answers NOT_LEADER twice (a preferred leader elected back), then the offsets
        def __init__(self, errors):
            self.errors, self.asked = list(errors), 0

        def get_watermark_offsets(self, tp, timeout):
            self.asked += 1
            if self.errors:
                raise KafkaException(KafkaError(self.errors.pop(0)))
            return (0, 42)

    moving = Consumer([KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.NOT_LEADER_FOR_PARTITION])
    assert watermark(moving, "t", 3) == (0, 42) and moving.asked == 3
    gone = Consumer([KafkaError.UNKNOWN_TOPIC_OR_PART])
    with pytest.raises(KafkaException):
        watermark(gone, "t", 3)
    assert gone.asked == 1
    never = Consumer([KafkaError.NOT_LEADER_FOR_PARTITION] * 1000)
    with pytest.raises(KafkaException):
        watermark(never, "t", 3, timeout=0.5)  # gives up at its deadline


def test_watermarks_ask_all_partitions_at_once_and_again_only_those_whose_leader_moves(monkeypatch):
    import confluent_kafka.admin
    from concurrent.futures import Future
    from types import SimpleNamespace

    from confluent_kafka import IsolationLevel, KafkaError, KafkaException

    class Admin:  # partition 1's leader moves twice; the log of partition p spans [p, 10 + p)
        requests: list = []
        moves = 2

        def __init__(self, conf):
            assert conf == {"bootstrap.servers": "127.0.0.1:1", "log_level": 5}  # its closing info line off the terminal

        def list_offsets(self, request, isolation_level, request_timeout):
            assert isolation_level == IsolationLevel.READ_COMMITTED and request_timeout >= 1
            Admin.requests.append(sorted(tp.partition for tp in request))
            out = {}
            for tp, spec in request.items():
                f = Future()
                if tp.partition == 1 and Admin.moves:
                    f.set_exception(KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)))
                else:
                    earliest = spec == confluent_kafka.admin.OffsetSpec.earliest()
                    f.set_result(SimpleNamespace(offset=tp.partition if earliest else 10 + tp.partition))
                out[tp] = f
            if 1 in Admin.requests[-1] and len(Admin.requests) % 2 == 0:
                Admin.moves -= 1  # after both specs were asked
            return out

    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", Admin)
    monkeypatch.setattr(offsets.time, "sleep", lambda s: None)
    assert offsets.watermarks({"bootstrap.servers": "127.0.0.1:1"}, "t", 3) == [(0, 10), (1, 11), (2, 12)]
    assert Admin.requests == [[0, 1, 2], [0, 1, 2], [1], [1], [1], [1]]

    class Gone(Admin):
        def list_offsets(self, request, isolation_level, request_timeout):
            out = {}
            for tp in request:
                out[tp] = Future()
                out[tp].set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
            return out

    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", Gone)
    with pytest.raises(KafkaException):
        offsets.watermarks({"bootstrap.servers": "127.0.0.1:1"}, "t", 3)


def test_watermarks_listed_without_valid_offsets_are_asked_again_and_named_at_the_deadline(monkeypatch):
    # A CI run's final read was assigned offset -1001 (librdkafka: none known) right after a leader's isolation
    # healed, and failed: an answer without an error but with a negative offset is the leader moving too.
    import confluent_kafka.admin
    from concurrent.futures import Future
    from types import SimpleNamespace

    class Admin:
        answers = [(-1001, -1001), (0, -1), (4, 9)]  # partition 0's answers, one per pair of requests
        asked = 0

        def __init__(self, conf):
            pass

        def list_offsets(self, request, isolation_level, request_timeout):
            low, high = Admin.answers[min(Admin.asked // 2, len(Admin.answers) - 1)]
            Admin.asked += 1
            out = {}
            for tp, spec in request.items():
                out[tp] = Future()
                out[tp].set_result(SimpleNamespace(
                    offset=low if spec == confluent_kafka.admin.OffsetSpec.earliest() else high))
            return out

    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", Admin)
    monkeypatch.setattr(offsets.time, "sleep", lambda s: None)
    assert offsets.watermarks({"bootstrap.servers": "127.0.0.1:1"}, "t", 1) == [(4, 9)]
    assert Admin.asked == 6
    Admin.answers, Admin.asked = [(-1001, -1001)], 0
    with pytest.raises(RuntimeError, match=r"t\[0\]: the brokers listed no valid offsets \(log start -1001, end -1001\)"):
        offsets.watermarks({"bootstrap.servers": "127.0.0.1:1"}, "t", 1, timeout=0)


def test_the_harness_makes_its_admin_clients_where_their_log_stays_off_the_terminal():
    # A librdkafka client without a logger prints to the terminal, and an admin client says "Purging 1 unserved
    # events from background queue" as it closes: the consumer group's committed positions (consumers.py) said it
    # once a variant, in the middle of an exploration's try lines, until it took offsets.admin_client too.
    import re
    from pathlib import Path

    harness = Path(offsets.__file__).parent
    makers = sorted(str(p.relative_to(harness)) for p in harness.rglob("*.py")
                    if re.search(r"\bAdminClient\(", p.read_text()))
    assert makers == ["cluster/base.py", "offsets.py"]  # base.py's takes the cluster's admin.log as its logger
    assert re.search(r'AdminClient\(\{\*\*self\.client, "logger": self\._admin_log\}\)',
                     (harness / "cluster" / "base.py").read_text())
