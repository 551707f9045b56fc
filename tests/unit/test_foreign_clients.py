"""Foreign client implementations (kafka-python, aiokafka, the Java client) without a broker: the child protocol's
lines, what they become in the delivery log, the run's side of a child (a stand-in child speaks the protocol
here), the outcome tables and the spec's client axis."""

import io
import json
import struct
import sys
import textwrap
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from harness.clients import AIOKAFKA, FOREIGN, KAFKA_CLIENTS, KAFKA_PYTHON
from harness.exits import InfraError
from harness.spec import load_spec
from harness.workload import pychild
from harness.workload.deliverylog import CHUNK, NO_OFFSET, DeliveryLog
from harness.workload.foreignenv import ForeignEnv
from harness.workload.foreignproc import (Ended, Failed, ForeignProducer, ProtocolError, Reports, Told,
                                          ToldMany, parse, read_event)
from harness.workload.transactional import TransactionsLog, planned_abort


# -- the lines ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, event", [
    ("a 2 17 340 4.250\n", Told(2, 17, 340, 4.25)),
    ("a 0 0 - 1.5", Told(0, 0, None, 1.5)),
    ("e 1 9 KafkaTimeoutError 120000.0", Failed(1, 9, "KafkaTimeoutError", 120000.0, refused=False)),
    ("r 0 3 MessageSizeTooLargeError", Failed(0, 3, "MessageSizeTooLargeError", None, refused=True)),
    ("sent 2048", ("sent", 2048)),
    ("s 2 4096", ("session", 2, 4096)),
    ("t 3 committed - - 100 1764250000123", Ended(3, "committed", None, None, 100, 1764250000123)),
    ("t 4 aborted planned - 100 5", Ended(4, "aborted", "planned", None, 100, 5)),
    ("t 5 unknown error TimeoutException 7 5", Ended(5, "unknown", "error", "TimeoutException", 7, 5)),
    ("t 6 committed fenced - 7 5", Ended(6, "committed", "fenced", None, 7, 5)),  # a zombie the broker let commit
    ("t 6 aborted fenced ProducerFencedException 7 5", Ended(6, "aborted", "fenced", "ProducerFencedException", 7, 5)),
    ("p 1 40", ("paused", 1, 40)),
    ("p 2 40 60", ("paused", 2, 40, 60)),
    ("late 40 60", ("late", 40, 60)),
    ("chunk 1764250000123", ("chunk", 1764250000123)),
    ("handed", ("handed",)),
    ("ready", ("ready",)),
    ("client kafka-python 3.0.12", ("client", "kafka-python", "3.0.12")),
    ('result {"handed": 5, "interrupted": false, "error": "", "fatal": "", "duration": 0.5}',
     ("result", {"handed": 5, "interrupted": False, "error": "", "fatal": "", "duration": 0.5})),
])
def test_each_line_of_the_protocol_is_read_as_what_it_says(line, event):
    assert parse(line, partitions=3) == event


def frame(*triples) -> bytes:
    """A `B` frame: (message index, offset or None: none told, latency ns) each."""
    flat = [x for i, o, ns in triples for x in (i, NO_OFFSET if o is None else o, ns)]
    return b"B %d\n" % len(triples) + struct.pack(f"<{len(flat)}q", *flat)


def test_a_frame_of_acknowledgements_is_read_as_what_it_says():
    stream = io.BytesIO(frame((7, 90, 2_500_000), (4, None, 1_000)) + b"sent 8\n")
    told = read_event(stream, partitions=3, messages=8)
    assert isinstance(told, ToldMany)
    assert (told.indices.tolist(), told.offsets.tolist(), told.latencies_ms.tolist()) == \
        ([7, 4], [90, NO_OFFSET], [2.5, 0.001])
    assert read_event(stream, 3, 8) == ("sent", 8) and read_event(stream, 3, 8) is None  # then the end


@pytest.mark.parametrize("data, said", [
    (frame((1, 0, 5))[:-1], "a frame of 1 acknowledgements cut short \\(23 of 24 bytes\\)"),
    (b"B 0\n", "not a line of the protocol"),
    (b"B x\n", "not a line of the protocol"),
    (frame((8, 0, 5)), "a report of a send the workload does not have: message 8"),
    (frame((-1, 0, 5)), "a report of a send the workload does not have"),
])
def test_a_bad_frame_is_a_protocol_error(data, said):
    with pytest.raises(ProtocolError, match=said):
        read_event(io.BytesIO(data), partitions=3, messages=8)


@pytest.mark.parametrize("line", [
    "a 3 0 1 1.0",  # partition 3 of 3
    "a 0 -1 1 1.0",  # a negative value
    "a 0 1 x 1.0",  # an offset that is not a number
    "a 0 1 1",  # no latency
    "A 0 1 1 1000",  # the text runs of acknowledgements are gone: frames (B) took their place
    "e 0 1  1.0",  # no error name
    "r 0 1",
    "sent",
    "s 0 10",  # session 0 is the first instance's: a new one is 1 or more
    "s 1",
    "t 3 committed - - 100",  # no time
    "t 3 committed error - 100 5",  # committed has no cause (but fenced: a paused instance's)
    "late 5 5",  # an empty range
    "late 5",
    "p 0 5",
    "t 3 aborted - - 100 5",  # not committed: a cause
    "t 3 lost planned - 100 5",
    "t 3 aborted later - 100 5",
    "t -1 aborted planned - 100 5",
    "handed now",
    "result [1]",
    'result {"handed": -1}',
    'result {"handed": true}',
    "hello",
    "",
])
def test_anything_else_is_a_protocol_error(line):
    with pytest.raises(ProtocolError):
        parse(line, partitions=3)


# -- the outcomes -------------------------------------------------------------------------------------------------
def test_only_errors_that_prove_nothing_was_written_are_rejections():
    assert KAFKA_PYTHON.rejected("MessageSizeTooLargeError") and KAFKA_PYTHON.rejected("TopicAuthorizationFailedError")
    for name in ("KafkaTimeoutError", "KafkaConnectionError", "NotLeaderForPartitionError", "IllegalStateError",
                 "OutOfOrderSequenceNumberError", "RequestTimedOutError"):
        assert not KAFKA_PYTHON.rejected(name) and not AIOKAFKA.rejected(name)
    assert AIOKAFKA.rejected("RecordTooLargeError") and not KAFKA_PYTHON.rejected("RecordTooLargeError")
    assert KAFKA_CLIENTS.rejected("RecordTooLargeException") and not KAFKA_CLIENTS.rejected("TimeoutException")
    for impl in FOREIGN.values():  # the settings that would make it transactional are not "owned": refused apart
        assert impl.transactional not in impl.owned and impl.owned


def rows(path):
    return sorted(pq.read_table(path).to_pylist(), key=lambda r: (r["partition"], r["value"]))


def feed(tmp_path, lines, partitions=2, offsets_told=True, impl=KAFKA_PYTHON, messages=100):
    log = DeliveryLog(tmp_path / "acks.parquet", partitions, offsets_told)
    reports = Reports(log, impl, partitions, offsets_told, messages)
    stream = io.BytesIO(b"".join(x if isinstance(x, bytes) else x.encode() + b"\n" for x in lines))
    while (event := read_event(stream, partitions, messages)) is not None:  # as the run reads a child's output
        reports.apply(event)
    reports.close()
    return log, rows(tmp_path / "acks.parquet")


def test_the_lines_become_the_delivery_log_with_the_same_accounting(tmp_path):
    lines = ["chunk 1764250000000", "a 0 0 0 2.0", "a 1 0 0 3.0", "e 0 1 KafkaTimeoutError 30000.0",
             "e 1 1 MessageSizeTooLargeError 1.0", "r 0 2 KafkaTimeoutError", "sent 6", "a 1 2 1 4.0",
             'result {"handed": 7, "interrupted": false, "error": "x", "fatal": "y", "duration": 1.0}']
    log, got = feed(tmp_path, lines)
    # message 6 (partition 0, value 3) was handed and never reported: unknown, no error
    assert log.sent == 7 == sum(log.counts.values())
    assert log.counts == {"acked": 3, "rejected": 2, "unknown": 2}
    by = {(r["partition"], r["value"]): r for r in got}
    assert (by[0, 0]["outcome"], by[0, 0]["offset"], by[0, 0]["latency_ms"]) == ("acked", 0, 2.0)
    assert (by[0, 1]["outcome"], by[0, 1]["error"]) == ("unknown", "KafkaTimeoutError")  # may have been written
    assert (by[1, 1]["outcome"], by[1, 1]["error"]) == ("rejected", "MessageSizeTooLargeError")
    assert (by[0, 2]["outcome"], by[0, 2]["error"], by[0, 2]["latency_ms"]) == ("rejected", "KafkaTimeoutError", None)
    assert (by[0, 3]["outcome"], by[0, 3]["error"], by[0, 3]["offset"]) == ("unknown", None, None)
    assert all(r["sent_at"].timestamp() == 1764250000.0 for r in got)  # the chunk's time, as the child said


def test_a_frame_of_acknowledgements_is_each_of_its_sends(tmp_path):
    # partitions 2: message 3 is (partition 1, value 1); none told (message 0): -1, as librdkafka's untold offset
    log, got = feed(tmp_path, ["chunk 1", frame((3, 40, 1_000_000), (5, 41, 2_000_000), (7, 42, 3_000_000)),
                               frame((0, None, 4_000_000)), "sent 8"], messages=8)
    assert log.counts == {"acked": 4, "rejected": 0, "unknown": 4}
    acked = [(r["partition"], r["value"], r["offset"], r["latency_ms"]) for r in got if r["outcome"] == "acked"]
    assert acked == [(0, 0, -1, 4.0), (1, 1, 40, 1.0), (1, 2, 41, 2.0), (1, 3, 42, 3.0)]


def test_with_acks_0_a_frame_records_no_offset(tmp_path):
    log, got = feed(tmp_path, ["chunk 1", frame((0, -1, 5), (1, None, 5)), "sent 2"], offsets_told=False)
    assert [r["offset"] for r in got] == [None, None] and log.counts["acked"] == 2


@pytest.mark.parametrize("lines, said", [
    (["a 0 0 0 1.0", "e 0 0 KafkaTimeoutError 2.0"], "partition 0, value 0 reported twice"),
    (["a 1 1 0 1.0", frame((1, 0, 5), (3, 1, 5))], "partition 1, value 1 reported twice"),
    ([frame((2, 0, 5), (2, 1, 5))], "partition 0, value 1 reported twice"),  # twice in one frame
    (["a 1 2 0 1.0"], "a report of a send the workload does not have: partition 1, value 2"),  # message 5 of 4
])
def test_a_send_reported_twice_or_beyond_the_workload_is_a_protocol_error(tmp_path, lines, said):
    with pytest.raises(ProtocolError, match=said):
        feed(tmp_path, ["chunk 1", *lines], messages=4)


def test_with_acks_0_no_offset_is_recorded_whatever_the_client_says(tmp_path):
    log, got = feed(tmp_path, ["chunk 1", "a 0 0 -1 1.0", "a 1 0 -1 1.0", "sent 2"], offsets_told=False)
    assert [r["offset"] for r in got] == [None, None] and log.counts["acked"] == 2


def test_a_child_that_died_leaves_every_send_it_reported_or_said_it_handed(tmp_path):
    # No result: the most it said it handed (sent 4), and a report beyond that (message 5) counts too.
    log, got = feed(tmp_path, ["chunk 1", "sent 4", "a 1 2 0 1.0"], partitions=2)
    assert log.sent == 6 and log.counts == {"acked": 1, "rejected": 0, "unknown": 5}
    assert {(r["partition"], r["value"]) for r in got} == {(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)}


def test_the_child_names_an_error_by_its_class_and_keeps_words_on_one_line():
    class KafkaTimeoutError(Exception):
        pass

    class MessageSizeTooLargeError(Exception):
        pass

    e = KafkaTimeoutError("Batch for TopicPartition(topic='t', partition=0)\ncontaining 3 record(s) expired")
    assert pychild.error_name(e) == "KafkaTimeoutError"
    assert pychild.words(e) == ("KafkaTimeoutError: Batch for TopicPartition(topic='t', partition=0) containing "
                                "3 record(s) expired")
    assert pychild.words(KafkaTimeoutError("KafkaTimeoutError: x")) == "KafkaTimeoutError: x"
    assert pychild.said(KafkaTimeoutError("KafkaTimeoutError: x")) == "x"  # the result's error; its fatal names it
    assert pychild.said(KafkaTimeoutError()) == pychild.words(KafkaTimeoutError()) == "KafkaTimeoutError"



def test_a_python_childs_workload_ends_on_the_clients_held_fatal_error_first_then_on_what_ended_it():
    class ProducerFencedError(Exception):
        pass

    class KafkaTimeoutError(Exception):
        pass

    never = lambda: pytest.fail("held_fatal() asked after the workload had ended")  # noqa: E731
    r = pychild.Result()
    assert not r.ends(lambda: None) and r.error == r.fatal == ""  # nothing held, nothing ended it: it goes on
    assert r.ends(lambda: ProducerFencedError("fenced"), KafkaTimeoutError("expired"))
    assert (r.error, r.fatal) == ("fatal error: fenced", "ProducerFencedError")  # the held error, not e
    assert r.ends(never, KafkaTimeoutError("later")) and r.fatal == "ProducerFencedError"  # the first stands
    r = pychild.Result()
    assert r.ends(lambda: None, KafkaTimeoutError("expired"))
    assert (r.error, r.fatal) == ("expired", "KafkaTimeoutError")  # not said fatal: the client holds nothing


# -- the run's side, with a stand-in child ------------------------------------------------------------------------
CHILD = textwrap.dedent('''
    import json, signal, sys, time
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    task = json.loads(sys.stdin.readline())
    mode = sys.argv[1]
    print("client kafka-python " + sys.argv[2], flush=True)
    print("ready", flush=True)
    assert sys.stdin.readline().strip() == "go"
    P, n = task["partitions"], task["messages"]
    print("chunk %d" % int(time.time() * 1000), flush=True)
    for i in range(n):
        if mode == "stop" and i == 3:
            print("sent 3", flush=True)
            while not stop:
                time.sleep(0.01)
            print("e 0 1 IllegalStateError 1.0", flush=True)
            print("result " + json.dumps({"handed": 3, "interrupted": True, "error": "", "fatal": "",
                                          "duration": 0.1}), flush=True)
            sys.exit(0)
        if i % 3 != 2:
            print("a %d %d %d 1.0" % (i % P, i // P, i // P), flush=True)
    print("sent %d" % n, flush=True)
    if mode == "die":
        sys.exit(1)
    print("handed", flush=True)
    assert sys.stdin.readline().strip() == "flush"
    for i in range(n):
        if i % 3 == 2:
            print("e %d %d KafkaTimeoutError 5.0" % (i % P, i // P), flush=True)
    print("result " + json.dumps({"handed": n, "interrupted": False, "error": "", "fatal": "", "duration": 0.2}),
          flush=True)
''')


def producer(tmp_path, mode, version="3.0.12", stop=None, asked="3.0.12"):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = ForeignEnv("kafka-python", asked, (sys.executable, str(script), mode, version))
    return ForeignProducer(env, "127.0.0.1:9", "t", 2, 8, {"acks": "all"}, tmp_path / "acks.parquet", True,
                           tmp_path / "producer.log", None, 5.0, stop or threading.Event())


def test_the_run_writes_the_log_from_a_child_and_heals_before_its_flush(tmp_path):
    p = producer(tmp_path, "ok")
    healed = []
    result = p.run(before_flush=lambda: healed.append(p.reports.handed))
    assert healed == [8]  # the faults were healed once everything was handed, before the child flushed
    assert (result.sent, result.acked, result.rejected, result.unknown) == (8, 6, 0, 2)
    assert p.versions == "kafka-python 3.0.12" and not result.interrupted
    assert pq.read_table(tmp_path / "acks.parquet").num_rows == 8


def test_a_stop_reaches_the_child_which_still_reports(tmp_path):
    stop = threading.Event()
    p = producer(tmp_path, "stop", stop=stop)
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    result = p.run(before_flush=None)
    timer.join()
    assert result.interrupted and result.sent == 3 == result.acked + result.rejected + result.unknown
    assert result.acked == 2 and result.unknown == 1  # its one error is unknown (it may have been written)


def test_a_child_that_dies_fails_the_run_and_its_log_is_still_closed(tmp_path):
    p = producer(tmp_path, "die")
    with pytest.raises(InfraError, match="without its result"):
        p.run(before_flush=None)
    assert p.result.sent == 8 and p.result.unknown == 8 - p.result.acked
    assert pq.read_table(tmp_path / "acks.parquet").num_rows == 8


def test_a_child_of_another_version_than_asked_fails_the_run(tmp_path):
    p = producer(tmp_path, "ok", version="2.2.0")
    with pytest.raises(InfraError, match="asked for kafka-python 3.0.12, the child runs kafka-python 2.2.0"):
        p.run(before_flush=None)


# A stand-in child that says the lines it is given after `go` (and its answers to `handed`).
SCRIPTED = textwrap.dedent('''
    import json, struct, sys
    task = json.loads(sys.stdin.readline())
    said = json.loads(sys.argv[1])
    print("client kafka-clients 4.1.0", flush=True)
    print("ready", flush=True)
    assert sys.stdin.readline().strip() == "go"
    for line in said:
        if isinstance(line, list):  # a B frame: [[index, offset, ns], ...]
            flat = [x for triple in line for x in triple]
            sys.stdout.buffer.write(b"B %d\\n" % len(line) + struct.pack(f"<{len(flat)}q", *flat))
            sys.stdout.buffer.flush()
            continue
        print(line, flush=True)
        if line == "handed":
            assert sys.stdin.readline().strip() == "flush"
''')


def result_line(handed):
    """The result line of a child that handed `handed` messages and ended cleanly."""
    return "result " + json.dumps({"handed": handed, "interrupted": False, "error": "", "fatal": "", "duration": 0.1})


def txn_rows(tmp_path):
    """acks.parquet's rows as (session, partition, value, outcome, offset, txn), sorted."""
    return sorted((r["session"], r["partition"], r["value"], r["outcome"], r["offset"], r["txn"])
                  for r in rows(tmp_path / "acks.parquet"))


def scripted(tmp_path, lines, messages=8, **task):
    script = tmp_path / "scripted.py"
    script.write_text(SCRIPTED)
    env = ForeignEnv("kafka-clients", "4.1.0", (sys.executable, str(script), json.dumps(lines)))
    return ForeignProducer(env, "127.0.0.1:9", "t", 2, messages, {"acks": "all"}, tmp_path / "acks.parquet", True,
                           tmp_path / "producer.log", None, 5.0, threading.Event(), **task)


def test_the_java_clients_fatal_error_is_the_results_fatal_and_its_sends_keep_their_rules(tmp_path):
    # The Java child found the client failed for good between chunks (ClusterAuthorizationException: it aborts
    # every batch); what send() refused is rejected, the batches it aborted are rejected only by that name.
    fatal = "fatal error: Cluster authorization failed."
    p = scripted(tmp_path, ["chunk 1", [[0, 0, 10**6], [2, 1, 10**6]], "a 1 0 0 1.0", "e 1 1 ClusterAuthorizationException 2.0",
                            "e 0 2 ProducerFencedException 2.0", "r 1 2 ClusterAuthorizationException", "sent 6",
                            "handed", "result " + json.dumps({"handed": 6, "interrupted": False, "error": fatal,
                                                              "fatal": "ClusterAuthorizationException",
                                                              "duration": 0.1})])
    result = p.run(before_flush=None)
    assert (result.fatal, result.error) == ("ClusterAuthorizationException", fatal)
    assert (result.sent, result.acked, result.rejected, result.unknown) == (6, 3, 2, 1)
    by = {(r["partition"], r["value"]): r for r in rows(tmp_path / "acks.parquet")}
    assert (by[0, 2]["outcome"], by[0, 2]["error"]) == ("unknown", "ProducerFencedException")  # may be written
    assert (by[1, 2]["outcome"], by[1, 2]["error"]) == ("rejected", "ClusterAuthorizationException")


def test_a_transactional_childs_lines_become_both_logs(tmp_path):
    # 2 partitions, transactions of 3 sends: transaction 1 is messages 3, 4, 5 (partition 1 value 1, ...)
    txlog = TransactionsLog(tmp_path / "transactions.parquet")
    p = scripted(tmp_path, ["b 0 0 3", "chunk 1", [[0, 0, 10**6], [2, 1, 10**6]], [[1, 0, 10**6]],
                            "t 0 committed - - 3 1764250000000", "b 1 3 6",
                            "a 1 1 2 1.0", "a 0 2 3 1.0", "e 1 2 TimeoutException 9.0",
                            "t 1 aborted planned - 3 1764250000500", "b 2 6 7", "a 0 3 5 1.0",
                            "t 2 unknown error TimeoutException 1 1764250001000", "sent 7", "handed",
                            result_line(7)],
                 messages=7, txlog=txlog, size=3, aborts=[1])
    assert p.task["transactions"] == {"size": 3, "aborts": [1], "planned": 3}  # 7 messages: 3 transactions
    result = p.run(before_flush=None)
    assert (result.sent, result.acked, result.unknown) == (7, 6, 1)
    txn = {(r["partition"], r["value"]): r["txn"] for r in rows(tmp_path / "acks.parquet")}
    assert txn == {(0, 0): 0, (1, 0): 0, (0, 1): 0, (1, 1): 1, (0, 2): 1, (1, 2): 1, (0, 3): 2}
    got = pq.read_table(tmp_path / "transactions.parquet").to_pylist()
    assert [(r["txn"], r["session"], r["outcome"], r["cause"], r["error"], r["sends"]) for r in got] == [
        (0, 0, "committed", None, None, 3), (1, 0, "aborted", "planned", None, 3),
        (2, 0, "unknown", "error", "TimeoutException", 1)]
    assert got[1]["ended_at"].timestamp() == 1764250000.5
    assert txlog.counts() == {"committed": 1, "aborted": 1, "unknown": 1}


def test_a_restarted_transactional_childs_b_lines_say_what_each_transaction_holds(tmp_path):
    # 2 partitions, transactions of 3, 6 messages. Session 0: transaction 0 (messages 0, 1, 2) hands 0 and 1, a
    # restart aborts it (1 failed as the instance closed; 2 never handed): session 1 hands fresh messages from 3,
    # transaction 1 holds 0, 1, 2 sent again and then 3; transaction 2 holds 4, 5.
    txlog = TransactionsLog(tmp_path / "transactions.parquet")
    p = scripted(tmp_path, ["b 0 0 3", "chunk 1", [[0, 7, 10**6]], "e 1 0 TimeoutException 2.0",
                            "t 0 aborted restart - 2 1764250000000", "s 1 2 3",
                            "b 1 3 4 0 1 2", [[0, 8, 10**6], [1, 9, 10**6], [2, 10, 10**6], [3, 11, 10**6]],
                            "t 1 committed - - 4 1764250000500", "b 2 4 6", [[4, 12, 10**6], [5, 13, 10**6]],
                            "t 2 committed - - 2 1764250001000", "sent 6", "handed",
                            result_line(6)],
                 messages=6, txlog=txlog, size=3, aborts=[], planned=3)
    result = p.run(before_flush=None)
    # session 0 handed 0 and 1; session 1 handed 3, 4, 5 fresh and 0, 1, 2 again
    assert (result.sent, result.acked, result.rejected, result.unknown) == (8, 7, 0, 1)
    got = txn_rows(tmp_path)
    assert got == [(0, 0, 0, "acked", 7, 0), (0, 1, 0, "unknown", None, 0),
                   (1, 0, 0, "acked", 8, 1), (1, 0, 1, "acked", 10, 1), (1, 0, 2, "acked", 12, 2),
                   (1, 1, 0, "acked", 9, 1), (1, 1, 1, "acked", 11, 1), (1, 1, 2, "acked", 13, 2)]
    log = pq.read_table(tmp_path / "transactions.parquet").to_pylist()
    assert [(r["txn"], r["session"], r["outcome"], r["cause"], r["sends"]) for r in log] == [
        (0, 0, "aborted", "restart", 2), (1, 1, "committed", None, 4), (2, 1, "committed", None, 2)]


def test_a_paused_sessions_reports_come_between_z_lines_and_stay_its_own(tmp_path):
    # 2 partitions, 6 messages. Session 0 handed 0..3, was told 0 and 1 acknowledged, then paused (p): session 1
    # hands 2 and 3 again, then 4 and 5, all acknowledged. As it resumes, session 0 tells that 2 was acknowledged
    # and 3 failed: both stay session 0's (a send told in two sessions is no protocol error).
    p = scripted(tmp_path, ["chunk 1", [[0, 10, 10**6], [1, 11, 10**6]], "sent 4", "p 1 4",
                            [[2, 12, 10**6], [3, 13, 10**6], [4, 14, 10**6], [5, 15, 10**6]], "sent 6",
                            "z 0", [[2, 20, 10**6]], "e 1 1 TimeoutException 5.0", "z -", "handed",
                            result_line(6)],
                 messages=6)
    result = p.run(before_flush=None)
    assert (result.sent, result.acked, result.rejected, result.unknown) == (8, 7, 0, 1)
    got = sorted((r["session"], r["partition"], r["value"], r["outcome"], r["offset"]) for r in rows(tmp_path / "acks.parquet"))
    assert got == [(0, 0, 0, "acked", 10), (0, 0, 1, "acked", 20), (0, 1, 0, "acked", 11), (0, 1, 1, "unknown", None),
                   (1, 0, 1, "acked", 12), (1, 0, 2, "acked", 14), (1, 1, 1, "acked", 13), (1, 1, 2, "acked", 15)]


def test_a_paused_transactional_sessions_rest_and_reports_stay_in_its_own_session_and_transaction(tmp_path):
    # 2 partitions, transactions of 4, 8 messages. Session 0's transaction 0 (messages 0..3) hands 0 and 1, then is
    # paused: session 1 sends 0 and 1 again in its transaction 1 (with fresh 4 and 5), committed, then transaction 2
    # (6, 7). As it resumes, session 0 tells 0 acknowledged, hands the rest of its transaction (2, 3: `late`), 3 is
    # refused, 1 and 2 fail fenced, and so does its commit. Its rows keep transaction 0, the successor's resends transaction 1.
    txlog = TransactionsLog(tmp_path / "transactions.parquet")
    p = scripted(tmp_path, ["b 0 0 4", "chunk 1", "p 1 2 4", "b 1 4 6 0 1",
                            [[0, 10, 10**6], [1, 11, 10**6], [4, 12, 10**6], [5, 13, 10**6]],
                            "t 1 committed - - 4 1764250000000", "b 2 6 8", [[6, 14, 10**6], [7, 15, 10**6]],
                            "t 2 committed - - 2 1764250000100",
                            "z 0", "late 2 4", [[0, 9, 10**6]], "e 1 0 ProducerFencedException 5.0",
                            "e 0 1 ProducerFencedException 1.0", "r 1 1 ProducerFencedException",
                            "t 0 aborted fenced ProducerFencedException 4 1764250000200", "z -", "sent 8", "handed",
                            result_line(8)],
                 messages=8, txlog=txlog, size=4, aborts=[], planned=3)
    result = p.run(before_flush=None)
    # session 0 handed 0, 1 and late 2, 3 (3 refused, 1 and 2 unknown); session 1: 0, 1 again and 4..7
    assert (result.sent, result.acked, result.rejected, result.unknown) == (10, 7, 1, 2)
    got = txn_rows(tmp_path)
    assert got == [(0, 0, 0, "acked", 9, 0), (0, 0, 1, "unknown", None, 0), (0, 1, 0, "unknown", None, 0),
                   (0, 1, 1, "rejected", None, 0),
                   (1, 0, 0, "acked", 10, 1), (1, 0, 2, "acked", 12, 1), (1, 0, 3, "acked", 14, 2),
                   (1, 1, 0, "acked", 11, 1), (1, 1, 2, "acked", 13, 1), (1, 1, 3, "acked", 15, 2)]
    log = pq.read_table(tmp_path / "transactions.parquet").to_pylist()
    assert [(r["txn"], r["session"], r["outcome"], r["cause"], r["error"], r["sends"]) for r in log] == [
        (0, 0, "aborted", "fenced", "ProducerFencedException", 4), (1, 1, "committed", None, None, 4),
        (2, 1, "committed", None, None, 2)]


@pytest.mark.parametrize("lines, said", [
    (["z 0"], "session 0's reports: it is not the paused one"),
    (["p 1 0", "p 2 0"], "session 2 after a pause: one is paused already"),
    (["p 1 0", "z 1"], "session 1's reports: it is not the paused one"),
])
def test_z_lines_out_of_turn_are_protocol_errors(tmp_path, lines, said):
    reports = Reports(DeliveryLog(tmp_path / "acks.parquet", 2), KAFKA_CLIENTS, 2, True, 6)
    with pytest.raises(ProtocolError, match=said):
        for line in lines:
            reports.apply(parse(line, 2))


@pytest.mark.parametrize("lines, said", [
    (["b 0 0 3", "b 2 3 6"], "transaction 2 of messages 3..5 and 0 sent again: not the next one"),
    (["b 0 0 3", "s 1 3 3", "b 1 3 6 4"], "transaction 1 of messages 3..5 and 1 sent again: .*not messages handed"),
    (["b 0 0 3", "s 1 2"], "session 1 after 2 messages"),  # a transactional child's session says where fresh ones go
    (["b 0 0 3", "t 1 committed - - 3 1"], "transaction 1: not one of the workload's"),  # never begun
    (["late 0 2"], "messages 0..1 handed late: not by a paused transactional session"),
    (["b 0 0 3", "p 1 1 3", "late 1 3"], "handed late: not by a paused"),  # not between z lines
])
def test_transactional_lines_out_of_turn_are_protocol_errors(tmp_path, lines, said):
    reports = Reports(DeliveryLog(tmp_path / "acks.parquet", 2), KAFKA_CLIENTS, 2, True, 6,
                      TransactionsLog(tmp_path / "tx.parquet"), 3)
    with pytest.raises(ProtocolError, match=said):
        for line in lines:
            reports.apply(parse(line, 2))


def test_a_session_out_of_turn_is_a_protocol_error(tmp_path):
    reports = Reports(DeliveryLog(tmp_path / "acks.parquet", 2), KAFKA_CLIENTS, 2, True, 8)
    reports.apply(parse("s 1 4", 2))
    with pytest.raises(ProtocolError, match="session 3 after 6 messages: the log is at session 1"):
        reports.apply(parse("s 3 6", 2))


@pytest.mark.parametrize("lines, said", [
    (["b 0 0 3", "t 0 committed - - 3 1", "t 0 committed - - 3 1"],
     "transaction 0: not one of the workload's, or ended twice"),
    (["b 0 0 3", "t 1 committed - - 3 1"], "transaction 1: not one of the workload's"),  # never begun
    (["chunk 1", "a 0 0 1 1.0"], "a report of partition 0, value 0, in no transaction begun"),
])
def test_a_transaction_ended_twice_or_beyond_the_workload_is_a_protocol_error(tmp_path, lines, said):
    log = DeliveryLog(tmp_path / "acks.parquet", 2)
    reports = Reports(log, KAFKA_CLIENTS, 2, True, 7, TransactionsLog(tmp_path / "tx.parquet"), 3)
    with pytest.raises(ProtocolError, match=said):
        for line in lines:
            reports.apply(parse(line, 2))


def test_the_java_clients_transactions_follow_the_harness_plan_of_aborts(tmp_path, monkeypatch):
    from harness.workload import producers
    monkeypatch.setattr(producers, "ensure_foreign",
                        lambda name, version: ForeignEnv(name, version, (sys.executable, "-c", "")))
    sending = producers.Sending({"bootstrap.servers": "127.0.0.1:9"}, "t", 3, 1000, {"transactional.id": "x"},
                                tmp_path / "acks.parquet", tmp_path / "p.log", None, 5.0, threading.Event(),
                                lambda n: None, None, None)
    made = producers.make_producer(sending, ("kafka-clients", "4.1.0"), True, tmp_path / "tx.parquet", 30, 0.3, 42)
    plan = made.child.task["transactions"]
    # 34 transactions fill the messages; each restart may add one (its aborted transaction sent again)
    assert plan["size"] == 30 and plan["planned"] == 34 + producers.RESTART_TRANSACTIONS
    assert plan["aborts"] == [k for k in range(plan["planned"]) if planned_abort(42, k, 0.3)]
    assert 0 < len(plan["aborts"]) < plan["planned"]  # some aborted, not all
    assert producers.make_producer(sending, ("kafka-clients", "4.1.0"), False, tmp_path / "tx.parquet", 30, 0.3,
                                   42).child.task["transactions"] is None


def test_each_implementation_is_transactional_by_its_own_setting_but_another_confluent_kafka_is_not(tmp_path):
    spec = load(tmp_path, {"workload": {"messages": 100, "rate": 100, "transaction_size": 10, "abort_ratio": 0.2},
                           "variants": [{"name": "j", "client": {"kafka-clients": "4.1.0"},
                                         "producer": {"transactional.id": "j-tx"}},
                                        {"name": "k", "client": {"kafka-python": "3.0.12"},
                                         "producer": {"transactional_id": "k-tx"}},
                                        {"name": "a", "client": {"aiokafka": "0.14.0"},
                                         "producer": {"transactional_id": "a-tx"}},
                                        {"name": "plain", "client": {"aiokafka": "0.14.0"}}]})
    assert [spec.transactional(v) for v in spec.variants] == [True, True, True, False]
    with pytest.raises(Exception, match=r"runs confluent-kafka 2.2.0 in a child process.*\(transactional.id\)"):
        load(tmp_path, {"variants": [{"name": "c", "client": {"confluent-kafka": "2.2.0"},
                                      "producer": {"transactional.id": "c-tx"}}]})


# -- the spec -----------------------------------------------------------------------------------------------------
def load(tmp_path, doc):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "workload": {"messages": 100, "rate": 100}, **doc}, sort_keys=False))
    return load_spec(path)


def test_a_matrix_ranges_over_an_implementations_versions_with_its_own_settings(tmp_path):
    spec = load(tmp_path, {"matrix": {"kafka-python": ["3.0.12", "2.2.0"], "enable_idempotence": [True, False]},
                           "expectations": {"kafka-python=2.2.0": {"duplicates": "<= 10"}}})
    got = {v.name: (spec.client_library(v), spec.producer_config(v), spec.client_version(v)) for v in spec.variants}
    assert list(got) == ["kafka-python-3.0.12_idem-true", "kafka-python-3.0.12_idem-false",
                         "kafka-python-2.2.0_idem-true", "kafka-python-2.2.0_idem-false"]
    # the version goes to the variant's client, not its producer; the consumer group's confluent-kafka is ours
    assert got["kafka-python-2.2.0_idem-false"] == (("kafka-python", "2.2.0"), {"enable_idempotence": False}, None)
    assert [n for n in got if spec.rules(n)] == ["kafka-python-2.2.0_idem-true", "kafka-python-2.2.0_idem-false"]


def test_a_variants_client_replaces_the_experiments(tmp_path):
    spec = load(tmp_path, {"client": {"confluent-kafka": "2.2.0"},
                           "variants": [{"name": "a"}, {"name": "b", "client": {"aiokafka": "0.14.0"}}]})
    a, b = spec.variants
    assert (spec.client_library(a), spec.client_version(a)) == (("confluent-kafka", "2.2.0"), "2.2.0")
    # b's consumer group, if it had one, runs the harness's own confluent-kafka
    assert (spec.client_library(b), spec.client_version(b)) == (("aiokafka", "0.14.0"), None)
    assert spec.selectable(b) == {"aiokafka": "0.14.0"}


def test_the_child_program_imports_nothing_of_the_harness():
    source = Path(pychild.__file__).read_text()
    assert "harness" not in "".join(line for line in source.splitlines() if line.startswith(("import", "from")))
    assert pychild.IMPLEMENTATIONS.keys() == {n for n, i in FOREIGN.items() if i.language == "python"}


def test_the_task_says_where_and_what_to_send_in_the_implementations_own_settings(tmp_path):
    p = producer(tmp_path, "ok")
    task = json.loads(json.dumps(p.task))
    assert task == {"topic": "t", "partitions": 2, "messages": 8, "rate": None, "chunk": CHUNK, "flush_timeout": 5.0,
                    "hang_grace": 30.0, "bootstrap": "127.0.0.1:9", "settings": {"acks": "all"},
                    "transactions": None}


# -- the Java client: its jars come from KAFKA_HOME ----------------------------------------------------------------
def run_java_variant(tmp_path, monkeypatch, home):
    from click.testing import CliRunner

    from harness.cli import main
    if home is None:
        monkeypatch.delenv("KAFKA_HOME", raising=False)
    else:
        monkeypatch.setenv("KAFKA_HOME", str(home))
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"name": "j", "workload": {"messages": 100, "rate": 100},
                                   "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"},
                                                 "producer": {"acks": "all"}}]}))
    out = tmp_path / "reports"
    result = CliRunner().invoke(main, ["run", str(exp), "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert not any(out.glob("*"))  # nothing started
    return result.output


def test_the_java_client_without_kafka_home_is_bad_input(tmp_path, monkeypatch):
    said = run_java_variant(tmp_path, monkeypatch, None)
    assert "variants.0 (java): client.kafka-clients: the Java client comes from a Kafka distribution: set KAFKA_HOME" \
        in said


def test_the_java_client_of_another_version_than_kafka_home_holds_is_bad_input(tmp_path, monkeypatch):
    libs = tmp_path / "kafka" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka-clients-4.0.0.jar").write_bytes(b"")
    said = run_java_variant(tmp_path, monkeypatch, tmp_path / "kafka")
    assert f"client.kafka-clients: 4.1.0 is not in {libs} (it holds 4.0.0)" in said


# A stand-in `java` that compiles: it records its arguments and writes a class file into -d, or fails as javac does.
FAKE_JAVAC = textwrap.dedent('''
    import pathlib, sys
    args = sys.argv[1:]
    calls = pathlib.Path(__file__).with_suffix(".calls")
    calls.write_text((calls.read_text() if calls.exists() else "") + " ".join(args) + "\\n")
    if "broken" in args[args.index("-cp") + 1]:
        print("ChaosProducer.java:12: error: package org.apache.kafka.clients.producer does not exist", file=sys.stderr)
        print("1 error", file=sys.stderr)
        sys.exit(1)
    (pathlib.Path(args[args.index("-d") + 1]) / "ChaosProducer.class").write_bytes(b"")
''')


def test_the_java_programs_are_compiled_once_per_sources_jars_and_jvm(tmp_path, monkeypatch):
    from harness.workload.foreignenv import ClientEnvError, ensure
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text(f"#!{sys.executable}\n" + FAKE_JAVAC)
    java.chmod(0o755)
    calls = java.with_suffix(".calls")
    libs = tmp_path / "kafka" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka-clients-4.1.0.jar").write_bytes(b"x")
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path / "kafka"))
    monkeypatch.setenv("PATH", str(java.parent), prepend=":")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    env = ensure("kafka-clients", "4.1.0")
    [compiled] = calls.read_text().splitlines()
    assert compiled.startswith("-m jdk.compiler/com.sun.tools.javac.Main -d ") and compiled.endswith(
        "ChaosProducer.java " + str(Path(pychild.__file__).parent / "java" / "ChaosMember.java"))
    assert f"-cp {libs / 'kafka-clients-4.1.0.jar'} " in compiled  # javac expands no wildcard: each jar named
    classpath = env.command[env.command.index("-cp") + 1]
    folder, path = Path(classpath.split(":")[0]), classpath.split(":")[1]
    assert env.command == (str(java), "-XX:MetaspaceSize=64m", "-cp", f"{folder}:{libs}/*", "ChaosProducer")
    assert path == f"{libs}/*"
    assert env.member[-1] == "ChaosMember" and (folder / "ChaosProducer.class").exists()
    assert folder.parent == tmp_path / "cache" / "kafka-chaos" / "clients"
    assert ensure("kafka-clients", "4.1.0") == env and len(calls.read_text().splitlines()) == 1  # compiled once
    (libs / "kafka-clients-4.1.0.jar").write_bytes(b"another build")  # the jars changed: compiled again
    assert ensure("kafka-clients", "4.1.0").command[-2] != env.command[-2]  # another classes folder
    assert len(calls.read_text().splitlines()) == 2
    (libs / "broken.jar").write_bytes(b"")
    with pytest.raises(ClientEnvError, match=r"client\.kafka-clients: the Java programs do not compile against "
                                             r".* \(ChaosProducer\.java:12: error: package org\.apache\.kafka"):
        ensure("kafka-clients", "4.1.0")
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no half-made folder left


# -- the cache of a foreign Python client, with a fake pip ---------------------------------------------------------
FAKE_PIP = textwrap.dedent('''
    import pathlib, sys
    args = sys.argv[1:]
    calls = pathlib.Path(__file__).with_suffix(".calls")
    calls.write_text((calls.read_text() if calls.exists() else "") + " ".join(args) + "\\n")
    target, (name, wanted) = pathlib.Path(args[args.index("--target") + 1]), args[-1].split("==")
    if wanted == "9.9.9":
        print("ERROR: No matching distribution found for " + args[-1], file=sys.stderr)
        sys.exit(1)
    says = {"2.0.1": "2.0.2"}.get(wanted, wanted)  # a registry that hands over another version
    package = target / {"kafka-python": "kafka", "aiokafka": "aiokafka"}[name]
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"__version__ = {says!r}\\n")
''')


@pytest.fixture
def pip(tmp_path):
    script = tmp_path / "fakepip.py"
    script.write_text(FAKE_PIP)
    calls = script.with_suffix(".calls")
    return [sys.executable, str(script)], lambda: calls.read_text().splitlines() if calls.exists() else []


def test_an_implementation_is_installed_once_and_asked_its_version_by_the_child_itself(tmp_path, pip):
    from harness.workload.foreignenv import MARKER, PYCHILD, ensure
    command, calls = pip
    env = ensure("kafka-python", "3.0.12", tmp_path / "cache", command)
    folder = tmp_path / "cache" / "kafka-python-3.0.12"
    assert env == ForeignEnv("kafka-python", "3.0.12", (sys.executable, "-I", str(PYCHILD), "kafka-python",
                                                        str(folder)))
    assert (folder / MARKER).exists() and ensure("kafka-python", "3.0.12", tmp_path / "cache", command) == env
    [call] = calls()  # once, with its dependencies, binary wheels only
    assert "--only-binary=:all:" in call and "--no-deps" not in call and call.endswith("kafka-python==3.0.12")
    (folder / MARKER).unlink()  # a damaged copy is installed again, never used
    assert ensure("kafka-python", "3.0.12", tmp_path / "cache", command) == env and len(calls()) == 2
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["kafka-python-3.0.12"]  # no temporary left


@pytest.mark.parametrize("name, version, said", [
    ("aiokafka", "9.9.9", "client.aiokafka: 9.9.9 could not be installed (ERROR: No matching distribution found "
                          "for aiokafka==9.9.9)"),
    ("aiokafka", "2.0.1", "client.aiokafka: asked for 2.0.1, the installed package answers 2.0.2"),
    ("kafka-python", "3.0", "client.kafka-python: '3.0' is not a version"),
])
def test_an_implementation_that_cannot_be_had_is_bad_input(tmp_path, pip, name, version, said):
    from harness.exits import Exit
    from harness.workload.foreignenv import ClientEnvError, ensure
    with pytest.raises(ClientEnvError) as e:
        ensure(name, version, tmp_path / "cache", pip[0])
    assert said in str(e.value) and e.value.exit == Exit.USAGE
    assert not any((tmp_path / "cache").glob(f"{name}-*"))


# -- pychild.py itself, over a stand-in kafka-python (no broker) ----------------------------------------------------
FAKE_KAFKA = textwrap.dedent('''
    __version__ = "9.0.0"

    class KafkaTimeoutError(Exception):
        pass

    class MessageSizeTooLargeError(Exception):
        pass

    class OutOfOrderSequenceNumberError(Exception):
        pass

    class _Metadata:
        def __init__(self, offset):
            self.offset = offset

    class KafkaConnectionError(Exception):
        pass

    class _Future:
        """Done at once, or (held) when fail() or succeed() is called."""
        def __init__(self, value=None, error=None, held=False):
            self.value, self.error, self.held, self.errbacks, self.callbacks = value, error, held, [], []

        def add_callback(self, f, *args):
            if self.held:
                self.callbacks.append((f, args))
            elif self.error is None:
                f(*args, self.value)

        def succeed(self):
            for f, args in self.callbacks:
                f(*args, self.value)

        def add_errback(self, f, *args):
            if self.held:
                self.errbacks.append((f, args))
            elif self.error is not None:
                f(*args, self.error)

        def fail(self, e):
            for f, args in self.errbacks:
                f(*args, e)

    class KafkaError(Exception):
        pass

    class ProducerFencedError(Exception):
        pass

    class _Manager:
        def __init__(self):
            self.last_error = None

        def has_fatal_error(self):
            return self.last_error is not None

    class KafkaProducer:
        """Acknowledges every send at once (offset = value), but: mode refuse: send() of message 5 raises;
        mode fail: message 4 fails (timeout); mode fatal: after message 2000 its idempotence state is fatal;
        mode stall: send() of message 5 times out three times (no metadata), then takes it; mode hold: the first
        instance holds messages 5 and up until its flush (acknowledged) or its close (failed).
        Transactions (transactional_id set): mode txfail: the commit of transaction 2 fails (abortable), mode
        fenced: that commit fails with the client fenced for good; mode hang: the commit of transaction 1 never
        returns. `calls` is what the workload asked, in order."""

        INSTANCES = []

        def __init__(self, bootstrap_servers, mode="ok", transactional_id=None, **rest):
            self.mode, self.sent, self.calls, self.txn = mode, 0, [], -1
            self._transaction_manager = _Manager()
            self.held = []
            KafkaProducer.INSTANCES.append(self)

        def init_transactions(self):
            self.calls.append("init")

        def begin_transaction(self):
            if self.calls[-1:] not in (["init"], ["commit"], ["abort"]):
                raise KafkaError("begin while in a transaction")
            self.txn += 1
            self.calls.append("begin")

        def commit_transaction(self):
            self.calls.append("commit")
            if self.txn == 1 and self.mode == "hang":  # waits for an answer that never comes
                import sys, threading
                print("commit hangs", file=sys.stderr, flush=True)
                threading.Event().wait()
            if self.txn == 2 and self.mode == "txfail":
                raise KafkaError("abortable: InvalidProducerEpoch")
            if self.txn == 2 and self.mode == "fenced":
                self._transaction_manager.last_error = ProducerFencedError("fenced by a newer producer")
                raise self._transaction_manager.last_error

        def abort_transaction(self):
            self.calls.append("abort")

        def partitions_for(self, topic):
            return {0, 1}

        def send(self, topic, value, partition):
            i = int(value) * 2 + partition
            self.sent += 1
            if self.mode == "refuse" and i == 5:
                raise MessageSizeTooLargeError("The message is 2000000 bytes when serialized")
            if self.mode == "stall" and i == 5 and self.sent < 9:  # three timeouts, then it takes it
                raise KafkaTimeoutError("Failed to update metadata after 60.0 secs.")
            if self.mode == "fatal" and i == 2000:
                self._transaction_manager.last_error = OutOfOrderSequenceNumberError("out of order")
            if self.mode == "fail" and i == 4:
                return _Future(error=KafkaTimeoutError("Batch expired"))
            if self.mode == "hold" and i >= 5 and len(KafkaProducer.INSTANCES) == 1:  # the first instance's
                self.held.append(_Future(_Metadata(int(value)), held=True))
                return self.held[-1]
            return _Future(_Metadata(int(value)))

        def flush(self, timeout=None):
            for future in self.held:
                future.succeed()
            self.held = []

        def close(self, timeout=None):
            for future in self.held:  # aborted: what was in flight fails
                future.fail(KafkaConnectionError("closed"))
            self.held = []
''')


def fake_child(tmp_path, mode, messages=10, txlog=None, size=0, aborts=None, stop=None, faults=None, settings=None):
    from harness.workload.foreignenv import PYCHILD
    folder = tmp_path / "site"
    (folder / "kafka").mkdir(parents=True)
    (folder / "kafka" / "__init__.py").write_text(FAKE_KAFKA)
    env = ForeignEnv("kafka-python", "9.0.0", (sys.executable, "-I", str(PYCHILD), "kafka-python", str(folder)))
    settings = {"mode": mode, **({"transactional_id": "x"} if txlog is not None else {}), **(settings or {})}
    return ForeignProducer(env, "127.0.0.1:9", "t", 2, messages, settings, tmp_path / "acks.parquet", True,
                           tmp_path / "producer.log", None, 5.0, stop or threading.Event(), None, txlog, size,
                           aborts, faults)


def transactions(tmp_path):
    return [(r["txn"], r["outcome"], r["cause"], r["error"], r["sends"])
            for r in pq.read_table(tmp_path / "transactions.parquet").to_pylist()]


def test_the_child_program_reports_every_send_and_heals_before_its_flush(tmp_path):
    p = fake_child(tmp_path, "fail")
    healed = []
    result = p.run(before_flush=lambda: healed.append(p.reports.handed))
    assert healed == [10] and p.versions == "kafka-python 9.0.0"
    assert (result.sent, result.acked, result.rejected, result.unknown, result.error) == (10, 9, 0, 1, "")
    by = {(r["partition"], r["value"]): r for r in rows(tmp_path / "acks.parquet")}
    assert (by[0, 2]["outcome"], by[0, 2]["error"]) == ("unknown", "KafkaTimeoutError")
    assert (by[1, 3]["outcome"], by[1, 3]["offset"]) == ("acked", 3)
    assert "first send acknowledged (a 0 0 0 " in (tmp_path / "producer.log").read_text()


def test_a_send_the_client_refuses_ends_the_workload_as_rejected(tmp_path):
    p = fake_child(tmp_path, "refuse")
    result = p.run(before_flush=lambda: None)
    assert (result.sent, result.acked, result.rejected, result.unknown) == (6, 5, 1, 0)
    assert (result.fatal, result.error) == ("MessageSizeTooLargeError", "The message is 2000000 bytes when serialized")
    assert {r["outcome"] for r in rows(tmp_path / "acks.parquet") if (r["partition"], r["value"]) == (1, 2)} == \
        {"rejected"}


def test_a_fatal_idempotence_error_ends_the_workload_between_chunks(tmp_path):
    p = fake_child(tmp_path, "fatal", messages=5 * CHUNK)
    result = p.run(before_flush=lambda: None)
    assert result.sent == (2000 // CHUNK + 1) * CHUNK == result.acked  # up to the end of the chunk it failed in
    assert (result.fatal, result.error) == ("OutOfOrderSequenceNumberError", "fatal error: out of order")


def test_the_python_child_commits_and_aborts_transactions_as_planned(tmp_path):
    # 25 messages in transactions of 10 (the last one 5), transaction 1 aborted on purpose
    p = fake_child(tmp_path, "tx", messages=25, txlog=TransactionsLog(tmp_path / "transactions.parquet"), size=10,
                   aborts=[1])
    result = p.run(before_flush=lambda: None)
    assert (result.sent, result.acked, result.error) == (25, 25, "")
    assert transactions(tmp_path) == [(0, "committed", None, None, 10), (1, "aborted", "planned", None, 10),
                                      (2, "committed", None, None, 5)]
    assert {r["txn"] for r in rows(tmp_path / "acks.parquet") if r["partition"] == 0 and r["value"] == 12} == {2}


def test_a_failed_commit_is_aborted_when_the_client_can_and_the_workload_goes_on(tmp_path):
    p = fake_child(tmp_path, "txfail", messages=40, txlog=TransactionsLog(tmp_path / "transactions.parquet"),
                   size=10, aborts=[])
    result = p.run(before_flush=lambda: None)
    assert (result.sent, result.error) == (40, "")
    assert [t[:4] for t in transactions(tmp_path)] == [(0, "committed", None, None), (1, "committed", None, None),
                                                       (2, "aborted", "error", "KafkaError"),
                                                       (3, "committed", None, None)]


def test_a_fenced_python_producer_ends_the_workload_with_its_transaction_unknown(tmp_path):
    p = fake_child(tmp_path, "fenced", messages=40, txlog=TransactionsLog(tmp_path / "transactions.parquet"),
                   size=10, aborts=[])
    result = p.run(before_flush=lambda: None)
    assert result.sent == 30  # nothing handed after the fenced commit
    assert (result.fatal, result.error) == ("ProducerFencedError", "fatal error: fenced by a newer producer")
    assert transactions(tmp_path)[2] == (2, "unknown", "error", "ProducerFencedError", 10)
    assert len(transactions(tmp_path)) == 3


def test_a_stop_cuts_a_commit_short_and_its_outcome_is_unknown(tmp_path):
    stop = threading.Event()
    p = fake_child(tmp_path, "hang", messages=40, txlog=TransactionsLog(tmp_path / "transactions.parquet"),
                   size=10, aborts=[], stop=stop)
    log = tmp_path / "producer.log"

    def stop_once_the_commit_hangs():
        while not (log.exists() and "commit hangs" in log.read_text()):
            threading.Event().wait(0.02)
        stop.set()

    watcher = threading.Thread(target=stop_once_the_commit_hangs, daemon=True)
    watcher.start()
    result = p.run(before_flush=lambda: None)
    assert result.interrupted and result.sent == 20 == result.acked + result.unknown
    assert transactions(tmp_path) == [(0, "committed", None, None, 10), (1, "unknown", "interrupted", None, 10)]


def test_a_commit_that_never_returns_is_cut_short_as_the_clients_hang_and_ends_the_workload(tmp_path, monkeypatch):
    """The child's watchdog: a call that waits without a timeout still waiting hang_grace past all the client's own
    timeouts (here 1 ms each, and a grace of 2 s: long beside a commit that returns at once, so the commit before
    the hanging one is never taken for a hang on a busy machine) is cut short; its transaction's outcome is unknown (error Hung),
    the workload ends with the hang as its error, not as a stop, and every thread's stack is in the client log."""
    from harness.workload import foreignproc
    monkeypatch.setattr(foreignproc, "HANG_GRACE", 2.0)
    timeouts = {"delivery_timeout_ms": 1, "request_timeout_ms": 1, "transaction_timeout_ms": 1}
    p = fake_child(tmp_path, "hang", messages=40, txlog=TransactionsLog(tmp_path / "transactions.parquet"),
                   size=10, aborts=[], settings=timeouts)
    result = p.run(before_flush=lambda: None)
    assert not result.interrupted and result.fatal == "" and result.sent == 20 == result.acked + result.unknown
    assert result.error == ("the client hangs: commit_transaction() has not returned after 2.003 s (all its own "
                            "timeouts together, and 2 s more)")
    assert transactions(tmp_path) == [(0, "committed", None, None, 10), (1, "unknown", "error", "Hung", 10)]
    log = (tmp_path / "producer.log").read_text()
    assert "commit hangs" in log and "in commit_transaction" in log  # the stacks, the main thread's in the call


def served_before_flush(faults, *asks):
    """As Nemesis.finish: each (verb, step) still due is asked, and served by the producer while it waits to flush."""
    def heal():
        for verb, step in asks:
            asking = threading.Thread(target=faults.ask, args=(verb, step))
            asking.start()
            while asking.is_alive():
                faults.idle()
                asking.join(0.01)
    return heal


def test_a_restart_hands_again_in_a_new_session_what_the_old_instance_did_not_acknowledge(tmp_path):
    # The first instance acknowledges messages 0-4 and holds 5-9; the run asks a restart once all 10 are handed
    # (as the nemesis serves the faults still due while the run heals): closed, the old instance fails 5-9
    # (unknown: KafkaConnectionError proves nothing), and a new one sends them again, in session 1.
    from harness.faults.channel import RESTART_PRODUCER, WorkloadFaults
    stop = threading.Event()
    faults = WorkloadFaults(stop)
    p = fake_child(tmp_path, "hold", faults=faults)
    result = p.run(before_flush=served_before_flush(faults, (RESTART_PRODUCER, "apply")))
    assert (result.sent, result.acked, result.rejected, result.unknown, result.error) == (15, 10, 0, 5, "")
    got = sorted((r["session"], r["partition"], r["value"], r["outcome"]) for r in rows(tmp_path / "acks.parquet"))
    assert sorted(g[1:3] for g in got if g[0] == 0 and g[3] == "unknown") == [(0, 3), (0, 4), (1, 2), (1, 3), (1, 4)]
    assert sorted(g[1:] for g in got if g[0] == 1) == [(0, 3, "acked"), (0, 4, "acked"), (1, 2, "acked"),
                                                      (1, 3, "acked"), (1, 4, "acked")]
    assert "producer restarted: session 1 after 10 messages" in (tmp_path / "producer.log").read_text()


def test_a_paused_instance_runs_on_and_its_reports_are_told_in_its_own_session_as_it_resumes(tmp_path):
    # The first instance acknowledges messages 0-4 and holds 5-9; a pause once all 10 are handed: it is left as it
    # is and a new instance sends 5-9 again (session 1, acknowledged); healed, the paused one flushes, which
    # acknowledges its 5-9 too: those reports come between `z 0` and `z -` and are written in session 0.
    from harness.faults.channel import PAUSE_PRODUCER, WorkloadFaults
    stop = threading.Event()
    faults = WorkloadFaults(stop)
    p = fake_child(tmp_path, "hold", faults=faults)
    result = p.run(before_flush=served_before_flush(faults, (PAUSE_PRODUCER, "apply"), (PAUSE_PRODUCER, "heal")))
    assert (result.sent, result.acked, result.rejected, result.unknown, result.error) == (15, 15, 0, 0, "")
    got = sorted((r["session"], r["partition"] + r["value"] * 2, r["outcome"], r["offset"])
                 for r in rows(tmp_path / "acks.parquet"))
    assert got == sorted([(0, i, "acked", i // 2) for i in range(10)] + [(1, i, "acked", i // 2) for i in range(5, 10)])
    log = (tmp_path / "producer.log").read_text()
    assert "producer paused: session 1 after 10 messages" in log and "session 0 resumed and closed" in log


class AskedOnce:
    """pychild.Commands with one command, there once `ready()` says so: taken by the first poll that does not keep
    it for later."""

    def __init__(self, command, ready=lambda: True):
        self.asked, self.ready = [command], ready

    def poll(self, keep=()):
        return self.asked.pop() if self.asked and self.ready() and self.asked[0] not in keep else None


def transactional_steps(command, after_ends=0, messages=8, size=4):
    """The steps a transactional child's send loop takes (every call succeeds) when `command` is asked once
    `after_ends` transactions have ended, and its Transactions."""
    lines = pychild.Lines()
    tx = pychild.Transactions({"size": size, "aborts": [], "planned": 9}, lines)
    taken = []

    def do(kind, arg):
        taken.append((kind, arg))
        lines.emit()
        return kind != "failed"

    commands = AskedOnce(command, lambda: [kind for kind, _ in taken].count("end") >= after_ends)
    pychild.take(pychild.send_loop({"messages": messages, "chunk": 100, "rate": None}, tx, lines, pychild.Result(),
                                   threading.Event(), commands), do)
    return taken, tx


def test_a_pause_inside_a_transaction_leaves_its_rest_to_the_paused_instance_and_its_handed_part_to_the_next(capsys):
    # Transactions of 4 (pieces of 2), 8 messages: the pause comes once transaction 0 has handed 0 and 1. The new
    # instance's line will say the old one handed fresh messages up to 2, its own start at 4; the paused one keeps 2
    # and 3 (tx.zombie) and its transaction is not ended here; transaction 1 sends 0 and 1 again, then 4 and 5.
    taken, tx = transactional_steps("pause")
    said = capsys.readouterr().out.splitlines()
    assert [(kind, arg) for kind, arg in taken if kind in ("pause", "restart")] == [("pause", (2, 4))]
    assert [arg for kind, arg in taken if kind == "send"] == [0, 1, 0, 1, 4, 5, 6, 7]
    assert [line for line in said if line[0] in "bt"] == ["b 0 0 4", "b 1 4 6 0 1", "b 2 6 8"]
    assert tx.zombie == (0, [2, 3], 2)
    assert [kind for kind, _ in taken].count("end") == 2  # transactions 1 and 2, not the paused one's


def test_a_pause_asked_between_two_transactions_waits_for_a_send_of_the_next_one(capsys):
    # Asked once transaction 0 (0..3) has ended: kept at the boundary, served after transaction 1 (4..7) handed 4, 5.
    taken, tx = transactional_steps("pause", after_ends=1)
    said = capsys.readouterr().out.splitlines()
    assert [(kind, arg) for kind, arg in taken if kind == "pause"] == [("pause", (6, 8))]
    assert [arg for kind, arg in taken if kind == "send"] == [0, 1, 2, 3, 4, 5, 4, 5]
    assert [line for line in said if line[0] == "b"] == ["b 0 0 4", "b 1 4 8", "b 2 8 8 4 5"]
    assert tx.zombie == (1, [6, 7], 2)


def test_a_restart_inside_a_transaction_ends_it_and_sends_all_of_it_again(capsys):
    taken, tx = transactional_steps("restart")
    said = capsys.readouterr().out.splitlines()
    assert [(kind, arg) for kind, arg in taken if kind == "restart"] == [("restart", (2, 4))]
    assert [arg for kind, arg in taken if kind == "send"] == [0, 1, 0, 1, 2, 3, 4, 5, 6, 7]
    assert [line for line in said if line[0] == "b"] == ["b 0 0 4", "b 1 4 4 0 1 2 3", "b 2 4 8"]
    assert [line.rsplit(" ", 1)[0] for line in said if line[0] == "t"] == ["t 0 aborted restart - 2"]
    assert tx.zombie is None


def test_a_send_that_timed_out_is_handed_again_as_an_application_would(tmp_path):
    p = fake_child(tmp_path, "stall")
    result = p.run(before_flush=lambda: None)
    assert (result.sent, result.acked, result.rejected, result.unknown, result.error) == (10, 10, 0, 0, "")
    log = (tmp_path / "producer.log").read_text()
    assert log.count("send of partition 1 value 2: KafkaTimeoutError: Failed to update metadata after 60.0 secs.; "
                     "handing it again") == 3


def test_a_childs_frames_are_written_at_the_end_or_past_their_own_bound(tmp_path, monkeypatch):
    # Frames wait in memory (the run's CPU is the child's and the broker's while they send) up to SPILL_MANY sends.
    monkeypatch.setattr(DeliveryLog, "SPILL_MANY", 6)
    log = DeliveryLog(tmp_path / "acks.parquet", 2)
    reports = Reports(log, KAFKA_CLIENTS, 2, True, 10)
    stream = io.BytesIO(b"chunk 1\n" + frame(*[(i, i, 5) for i in range(4)]) + b"chunk 2\n"
                        + frame(*[(i, i, 5) for i in range(4, 8)]) + b"chunk 3\n")
    written = []
    while (event := read_event(stream, 2, 10)) is not None:
        reports.apply(event)
        written.append(log.counts["acked"])
    assert written == [0, 0, 0, 0, 8]  # 4 waiting at chunk 2; 8 >= 6 at chunk 3: written
    reports.close()
    assert log.counts == {"acked": 8, "rejected": 0, "unknown": 0}


class AbortableError(Exception):
    pass


@pytest.mark.parametrize("commit, fatal, calls, outcome, error", [
    (None, None, ["commit"], "committed", "-"),  # the broker let the zombie commit
    (AbortableError("epoch"), None, ["commit", "abort"], "aborted", "AbortableError"),
    (AbortableError("epoch"), AbortableError("fenced"), ["commit"], "aborted", "AbortableError"),  # held fatal
])
def test_a_zombies_failed_commit_is_aborted_unless_the_client_holds_a_fatal_error(capsys, commit, fatal, calls,
                                                                                  outcome, error):
    made = []

    def call(name):
        made.append(name)
        if name == "commit" and commit is not None:
            raise commit

    line = pychild.drive(pychild.Transactions.zombie_steps(7, 40, lambda: fatal, 3), call)
    assert made == calls
    assert line.split()[:6] == ["t", "7", outcome, "fenced", error, "40"]
    log = capsys.readouterr().err
    assert ("paused session 3: abort_transaction() after the failed commit: returned" in log) == ("abort" in calls)


def test_a_zombies_abort_that_fails_is_said_and_a_sigterm_ends_its_steps_with_the_line(capsys):
    def refused(name):
        raise AbortableError(f"{name} refused")

    line = pychild.drive(pychild.Transactions.zombie_steps(2, 5, lambda: None, 1), refused)
    assert line.split()[1:6] == ["2", "aborted", "fenced", "AbortableError", "5"]  # the commit's error, not the abort's
    assert "paused session 1: abort_transaction() after the failed commit: AbortableError: abort refused" in \
        capsys.readouterr().err

    def stopped(name):
        raise pychild.Stopped()

    assert pychild.drive(pychild.Transactions.zombie_steps(2, 5, lambda: None, 1), stopped).split()[1:6] == \
        ["2", "aborted", "fenced", "-", "5"]
