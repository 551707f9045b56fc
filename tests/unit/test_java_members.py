"""Consumer group members of the Java client without a JVM or a broker: the lines a member writes instead of the
sink (workload/memberlines.py) parsed, applied to a real temporary sink and relayed from a pipe; the choice of Java
members for a kafka-clients variant, their settings and the strategies refused; and the supervisor running members
that speak the lines (a stand-in program) under a kill caught mid-batch and a stop."""

import dataclasses
import json
import os
import signal
import sqlite3
import sys
import threading
import time

import select

import pytest
import yaml

from harness import clients, preflight
from harness.clients import KAFKA_CLIENTS
from harness.exits import Exit
from harness.spec import STRATEGIES, ConsumerSpec, SpecError, load_spec
from harness.workload import consumers, foreignenv, sink as sinks
from harness.workload.javamember import member_settings
from harness.workload.memberlines import (Batch, Begin, Event, Hold, Processed, ProtocolError, Query, Relay, apply,
                                          frame, parse)
from tests.fakeclock import FakeClock


# -- the lines -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, said", [
    ("e 1700000000123.456 start - pid 42", Event(1700000000123.456, "start", None, "pid 42")),
    ("e 1.5 assign [0,2] ", Event(1.5, "assign", [0, 2], "")),
    ("e 1.5 revoke []", Event(1.5, "revoke", [], "")),
    ("e 2 commit-failed [3] CommitFailedException: the group rebalanced",
     Event(2.0, "commit-failed", [3], "CommitFailedException: the group rebalanced")),
    ("e 3 abort [0,1] TimeoutException: x", Event(3.0, "abort", [0, 1], "TimeoutException: x")),  # transactional
    ("e 4 hung - commitTransaction has not returned after 91 s (its timeout 60 s)",  # the member's watchdog
     Event(4.0, "hung", None, "commitTransaction has not returned after 91 s (its timeout 60 s)")),
    ("h 200 100", Hold(200, 100)),
    ("p after 1 17 5 3 201 1700000000000.125", Processed("after", (1, 17, 5, 3, 201, 1700000000000.125))),
    ("p before 0 0 - 1 0 5.0", Processed("before", (0, 0, None, 1, 0, 5.0))),
    ("p auto 2 9 4 2 7 5", Processed("auto", (2, 9, 4, 2, 7, 5.0))),
    ("p atomic 2 9 - 2 7 5", Processed("atomic", (2, 9, None, 2, 7, 5.0))),  # a record of an atomic batch
    ("q 3", Query((3,))),
    ("q 0,2,11", Query((0, 2, 11))),
    ("b 100", Begin(100)),
])
def test_each_line_is_read_as_what_it_says(line, said):
    assert parse(line) == said


@pytest.mark.parametrize("line", [
    "", "x 1 2", "e 1.0 joined - ", "e nan start -", "e 1.0 assign [0,-1]", "e 1.0 assign [0, 1] spaces",
    "e 1.0 assign {\"a\":1}", "e 1.0", "h 5", "h 5 0", "h -1 3", "p after 1 2 3 4 5", "p later 1 2 3 4 5 6",
    "p after 1 2 x 4 5 6", "p after -1 2 3 4 5 6", "p after 1 2 3 4 5 inf", "p after 1 2 3 4 5 6 7",
    "q", "q ", "q 1,", "q 1,-2", "q 1 2", "q x", "b", "b 0", "b -1", "b 2 3", "b x",
])
def test_anything_else_is_a_protocol_error(line):
    with pytest.raises(ProtocolError):
        parse(line)


@pytest.mark.parametrize("lines, words", [
    (["p atomic 0 0 0 1 0 1"], "an atomic record outside a batch: 'p atomic 0 0 0 1 0 1'"),
    (["b 2", "p atomic 0 0 0 1 0 1", "e 2 stop - "], "a batch of 2 records broken off after 1 by 'e 2 stop - '"),
    (["b 1", "p after 0 0 0 1 0 1"], "broken off after 0 by 'p after 0 0 0 1 0 1'"),
])
def test_an_atomic_batch_is_its_header_and_its_count_of_atomic_records_and_nothing_else(lines, words):
    framed = ["b 2", "p atomic 0 0 0 1 0 1", "p atomic 1 5 - 1 1 2", "e 3 stop - "]
    assert frame(framed) == [
        Batch(((0, 0, 0, 1, 0, 1.0), (1, 5, None, 1, 1, 2.0))), Event(3.0, "stop", None, "")]
    with pytest.raises(ProtocolError) as e:
        frame(lines)
    assert words in str(e.value)


@pytest.fixture
def sink_path(tmp_path):
    path = tmp_path / "sink.sqlite"
    sinks.create(path)
    return path


def rows(path, sql):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_lines_applied_to_the_sink_are_what_the_python_member_writes(sink_path):
    relayed = sinks.Sink(sink_path, "m0.0")
    apply(relayed, [parse(line) for line in [
        "e 1000.5 start - pid 7", "e 1001 assign [1,0] ", "h 0 3",
        "p after 0 10 5 1 0 1002.25", "p after 1 4 2 1 1 1003",
        "e 1004 commit-failed [0,1] CommitFailedException"]])
    relayed.close()
    assert rows(sink_path, "SELECT at, member, event, partitions, detail FROM events ORDER BY rowid") == [
        (1000.5, "m0.0", "start", None, "pid 7"), (1001.0, "m0.0", "assign", "[0, 1]", None),
        (1004.0, "m0.0", "commit-failed", "[0, 1]", "CommitFailedException")]
    assert rows(sink_path, "SELECT partition, offset, value, member, session, n, processed_at, committed "
                           "FROM processed ORDER BY seq") == [(0, 10, 5, "m0.0", 1, 0, 1002.25, "after"),
                                                              (1, 4, 2, "m0.0", 1, 1, 1003.0, "after")]
    harness = sinks.Sink(sink_path, "harness")
    assert harness.holdings() == {"m0.0": {0, 1}}
    assert harness.mid_batch("m0.0")  # 2 of its 3 records in hand processed
    harness.close()


def test_a_change_of_commit_order_keeps_the_rows_in_their_order(sink_path):
    relayed = sinks.Sink(sink_path, "m1.0")
    apply(relayed, [parse("p before 0 0 0 1 0 1"), parse("h 1 1"), parse("p before 0 1 1 1 1 2"),
                    parse("p auto 0 2 2 1 2 3")])
    relayed.close()
    assert rows(sink_path, "SELECT offset, committed FROM processed ORDER BY seq") == [
        (0, "before"), (1, "before"), (2, "auto")]
    assert rows(sink_path, "SELECT member, first_n, count FROM in_hand") == [("m1.0", 1, 1)]


def pipe_relay(sink_path, member="m0.0"):
    r, w = os.pipe()
    relay = Relay(os.fdopen(r, "rb", buffering=0), sinks.Sink(sink_path, member))
    return relay, w


def test_settle_applies_every_whole_line_in_the_pipe_and_keeps_half_a_line_for_later(sink_path):
    relay, w = pipe_relay(sink_path)  # not started: settle() alone reads
    os.write(w, b"e 1 assign [0] \nh 0 2\np after 0 0 0 1 0 2\np after 0 1 ")
    relay.settle()
    assert rows(sink_path, "SELECT offset FROM processed") == [(0,)]
    os.write(w, b"1 1 1 3\n")
    relay.settle()
    assert rows(sink_path, "SELECT offset, value FROM processed ORDER BY seq") == [(0, 0), (1, 1)]
    os.close(w)
    relay.start()
    assert relay.join(30)  # the end of the pipe ends it
    assert relay.error == ""


def test_a_dead_members_pipe_is_drained_before_the_relay_ends(sink_path):
    relay, w = pipe_relay(sink_path)
    lines = b"".join(b"p after 0 %d %d 1 %d %d\n" % (i, i, i, 1000 + i) for i in range(5000))
    writer = threading.Thread(target=lambda: (os.write(w, lines), os.close(w)))  # more than a pipe holds
    writer.start()
    relay.start()
    assert relay.join(60)
    writer.join()
    assert rows(sink_path, "SELECT count(*), min(offset), max(offset) FROM processed") == [(5000, 0, 4999)]
    with pytest.raises(ValueError):  # the relay closed its end of the pipe
        relay.pipe.fileno()


def test_a_line_the_protocol_does_not_have_stops_the_relay_with_its_words(sink_path):
    relay, w = pipe_relay(sink_path)
    os.write(w, b"e 1 start - pid 1\ne 2 exploded - \n")
    relay.start()
    assert relay.join(30)
    os.close(w)
    assert "no such event: 'exploded'" in relay.error
    assert rows(sink_path, "SELECT event FROM events") == [("start",)]


# -- the answers to an idempotent-sink member's requests -------------------------------------------------------------
def asking_relay(sink_path, member="m0.0"):
    """A relay with an answer channel: (relay, the member's end of its stdout, the member's end of its stdin)."""
    r, w = os.pipe()
    ar, aw = os.pipe()
    relay = Relay(os.fdopen(r, "rb", buffering=0), sinks.Sink(sink_path, member), os.fdopen(aw, "wb", buffering=0))
    return relay, w, ar


def answer(fd):
    """The relay's next answer on the member's stdin (the 30 s are a deadlock guard, not a timing)."""
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], 30)
        assert ready, f"no answer from the relay (so far {line!r})"
        data = os.read(fd, 1)
        assert data, f"the relay closed the answers (so far {line!r})"
        line += data
    return line[:-1].decode()


def nothing_to_read(fd):
    return select.select([fd], [], [], 0)[0] == []


def store(sink_path, rows_, member="m9.0"):
    """Another member's batch applied (its next offsets stored)."""
    other = sinks.Sink(sink_path, member)
    try:
        assert other.apply(rows_) == {}
    finally:
        other.close()


def test_the_relay_answers_a_query_with_the_next_offsets_the_sink_stored(sink_path):
    store(sink_path, [(0, 4, 4, 1, 0, 1.0), (2, 8, 8, 1, 1, 2.0)])  # next offsets: 0 -> 5, 2 -> 9
    relay, w, answers = asking_relay(sink_path)
    relay.start()
    os.write(w, b"q 0,1,2\n")
    assert answer(answers) == "o 0=5 2=9"  # none for partition 1: it has no stored offset
    os.write(w, b"q 1\n")
    assert answer(answers) == "o"
    os.close(w)
    assert relay.join(30) and relay.error == ""
    assert os.read(answers, 10) == b""  # the relay closed the member's stdin as it ended
    os.close(answers)


def test_an_atomic_batch_is_applied_in_one_transaction_once_whole_and_answered_with_what_it_fenced(sink_path):
    store(sink_path, [(1, 10, 110, 1, 0, 1.0), (1, 11, 111, 1, 1, 2.0)])  # partition 1: another member's, next 12
    relay, w, answers = asking_relay(sink_path)  # not started: settle() alone reads
    os.write(w, b"b 4\np atomic 0 0 100 2 0 5\np atomic 1 11 111 2 1 6\np atomic 0 1 101 2 2 7\np ato")
    relay.settle()
    assert rows(sink_path, "SELECT count(*) FROM processed WHERE member = 'm0.0'") == [(0,)]  # not whole yet
    assert nothing_to_read(answers)
    os.write(w, b"mic 1 12 112 2 3 8\n")
    relay.settle()
    assert answer(answers) == "f 1=12"  # partition 1's first record (11) is below its stored next offset: fenced
    assert rows(sink_path, "SELECT partition, offset, value, member, session, n, committed FROM processed "
                           "ORDER BY seq") == [(1, 10, 110, "m9.0", 1, 0, "atomic"), (1, 11, 111, "m9.0", 1, 1, "atomic"),
                                               (0, 0, 100, "m0.0", 2, 0, "atomic"), (0, 1, 101, "m0.0", 2, 2, "atomic")]
    assert rows(sink_path, "SELECT partition, value, offset, member FROM records ORDER BY partition, value") == [
        (0, 100, 0, "m0.0"), (0, 101, 1, "m0.0"), (1, 110, 10, "m9.0"), (1, 111, 11, "m9.0")]
    assert rows(sink_path, "SELECT partition, next_offset FROM offsets ORDER BY partition") == [(0, 2), (1, 12)]
    # the relay wrote the fenced event, as member.py does (the member says nothing of it)
    [(member, partitions, detail)] = rows(sink_path, "SELECT member, partitions, detail FROM events "
                                                     "WHERE event = 'fenced'")
    assert (member, partitions, json.loads(detail)) == ("m0.0", "[1]", {"1": 12})
    os.write(w, b"b 1\np atomic 0 2 102 3 4 9\n")
    relay.settle()
    assert answer(answers) == "f"  # none fenced: answered all the same (the member waits for one answer)
    assert rows(sink_path, "SELECT next_offset FROM offsets WHERE partition = 0") == [(3,)]
    os.close(w)
    relay.start()
    assert relay.join(30) and relay.error == ""
    os.close(answers)


def test_a_member_that_died_leaves_its_relay_draining_its_pipe_not_waiting_to_answer(sink_path):
    relay, w, answers = asking_relay(sink_path)
    os.close(answers)  # the member is gone: nothing reads its stdin (a write there: a broken pipe)
    os.write(w, b"q 0\nb 1\np atomic 0 0 0 1 0 1\nb 2\np atomic 0 1 1 1 1 2\n")  # its last batch half said
    os.close(w)
    relay.start()
    assert relay.join(30)  # a deadlock guard
    assert relay.error == "" and relay.unanswered == 2
    assert rows(sink_path, "SELECT offset FROM processed") == [(0,)]  # the half-said batch: never applied
    assert rows(sink_path, "SELECT partition, next_offset FROM offsets") == [(0, 1)]


def test_a_member_that_asks_without_reading_its_answers_stops_its_relay_rather_than_blocking_it(sink_path):
    store(sink_path, [(p, 1000000, p, 1, p, 1.0) for p in range(200)])
    relay, w, answers = asking_relay(sink_path)
    ask = b"q " + ",".join(str(p) for p in range(200)).encode() + b"\n"  # each answer ~2.4 KB: 30 fill a pipe
    relay.start()

    def member():
        try:
            for _ in range(100):
                os.write(w, ask)
        except BrokenPipeError:  # the relay ended
            pass
        os.close(w)

    asking = threading.Thread(target=member)
    asking.start()
    assert relay.join(60)  # a deadlock guard
    asking.join(60)
    assert "the member does not read its answers (at 'o 0=1000001 1=1000001" in relay.error
    os.close(answers)


@pytest.mark.parametrize("said, words", [
    (b"b 2\np atomic 0 0 0 1 0 1\nq 0\n", "a batch of 2 records broken off after 1 by 'q 0'"),
    (b"q 0\nq zero\n", "not a member line: 'q zero'"),
])
def test_a_malformed_request_stops_the_relay_naming_it(sink_path, said, words):
    relay, w, answers = asking_relay(sink_path)
    os.write(w, said)
    relay.start()
    assert relay.join(30)
    os.close(w)
    assert words in relay.error
    os.close(answers)


def test_a_request_of_a_member_given_no_answers_is_a_protocol_error(sink_path):
    relay, w = pipe_relay(sink_path)  # a member of a commit strategy: its stdin is not the relay's
    os.write(w, b"e 1 start - pid 1\nq 0\n")
    relay.start()
    assert relay.join(30)
    os.close(w)
    assert relay.error == "a request of a member that is given no answers: 'q 0'"
    assert rows(sink_path, "SELECT event FROM events") == [("start",)]


# -- the choice, the settings, the refusals --------------------------------------------------------------------------
def load(tmp_path, doc):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "workload": {"messages": 100, "rate": 100}, **doc}, sort_keys=False))
    return load_spec(path)


def test_a_kafka_clients_variants_group_runs_java_members_and_every_other_variants_the_harnesss(tmp_path):
    spec = load(tmp_path, {"consumer": {"members": 2},
                           "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"}},
                                        {"name": "librdkafka"},
                                        {"name": "other-version", "client": {"confluent-kafka": "2.2.0"}},
                                        {"name": "kafka-python", "client": {"kafka-python": "3.0.12"}}]})
    assert [spec.member_implementation(v) for v in spec.variants] == [KAFKA_CLIENTS, None, None, None]
    alone = load(tmp_path, {"variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"}}]})
    assert alone.member_implementation(alone.variants[0]) is None  # no consumer group at all


def test_java_members_run_every_strategy_idempotent_sink_too(tmp_path):
    assert set(KAFKA_CLIENTS.member_strategies) == set(STRATEGIES)
    spec = load(tmp_path, {"consumer": {"strategy": "idempotent-sink"},
                           "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"}}]})
    [java] = spec.variants
    assert spec.member_implementation(java) is KAFKA_CLIENTS and spec.consumer_spec(java).strategy == "idempotent-sink"


def test_a_strategy_an_implementations_members_do_not_run_is_bad_input_naming_the_field_and_the_variant(
        tmp_path, monkeypatch):
    # No strategy is refused to the Java members now; one an implementation's members lacked would be, so:
    lacking = dataclasses.replace(KAFKA_CLIENTS, member_strategies=("commit-after", "commit-before", "transactional"))
    monkeypatch.setitem(clients.FOREIGN, "kafka-clients", lacking)
    with pytest.raises(SpecError, match=r"variants\.1\.consumer\.strategy: variant java runs kafka-clients 4\.1\.0, "
                                        r"whose own consumer group members do not run idempotent-sink \(yet\); use "
                                        "commit-after, commit-before or transactional") as e:
        load(tmp_path, {"consumer": {"strategy": "commit-after"},
                        "variants": [{"name": "librdkafka", "consumer": {"strategy": "idempotent-sink"}},
                                     {"name": "java", "client": {"kafka-clients": "4.1.0"},
                                      "consumer": {"strategy": "idempotent-sink"}}]})
    assert e.value.exit == Exit.USAGE  # bad input: exit 2, before anything starts
    with pytest.raises(SpecError, match=r"consumer\.strategy: variant java runs kafka-clients"):
        load(tmp_path, {"consumer": {"strategy": "auto-commit"},
                        "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"}}]})
    # the harness's own members run it for every other implementation's variant
    load(tmp_path, {"consumer": {"strategy": "auto-commit"},
                    "variants": [{"name": "py", "client": {"kafka-python": "3.0.12"}}]})


def test_a_member_setting_the_harness_owns_in_java_is_bad_input(tmp_path):
    with pytest.raises(SpecError, match=r"variants\.0\.consumer\.config: variant java runs kafka-clients, whose member "
                                        r"setting max\.poll\.records is set by the harness \(use the consumer "
                                        "section's batch field"):
        load(tmp_path, {"consumer": {"members": 1},
                        "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"},
                                      "consumer": {"config": {"max.poll.records": 5}}}]})
    with pytest.raises(SpecError, match=r"consumer\.config: variant java runs kafka-clients, whose member setting "
                                        r"value\.deserializer"):
        load(tmp_path, {"consumer": {"config": {"value.deserializer": "x"}},
                        "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"}}]})
    with pytest.raises(SpecError, match=r"group\.protocol: set by the harness"):  # spec.CONSUMER_OWNED as for all
        load(tmp_path, {"consumer": {"config": {"group.protocol": "consumer"}},
                        "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"}}]})


def test_a_java_members_settings_are_the_harnesss_with_the_experiments_over_them():
    classic = member_settings("127.0.0.1:9092", "g", "m1.0", "commit-after", "classic", 200,
                              {"fetch.max.wait.ms": 100, "session.timeout.ms": 10000})
    assert classic == {"bootstrap.servers": "127.0.0.1:9092", "group.id": "g", "client.id": "m1.0",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "isolation.level": "read_committed", "group.protocol": "classic",
                       "key.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                       "value.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                       "max.poll.records": 200, "session.timeout.ms": 10000, "heartbeat.interval.ms": 1500,
                       "fetch.max.wait.ms": 100}
    kip848 = member_settings("b:1", "g", "m0.0", "auto-commit", "consumer", 100, {})
    assert kip848["enable.auto.commit"] is True and kip848["group.protocol"] == "consumer"
    assert "session.timeout.ms" not in kip848 and "heartbeat.interval.ms" not in kip848  # the broker's, in KIP-848


def test_java_member_settings_are_judged_by_the_java_client_not_by_librdkafka(tmp_path, monkeypatch):
    doc = {"consumer": {"config": {"fetch.max.wait.ms": 100}},  # the Java name; librdkafka's is fetch.wait.max.ms
           "variants": [{"name": "java", "client": {"kafka-clients": "4.1.0"}}]}
    spec = load(tmp_path, doc)
    preflight.check_consumer_configs(spec, tmp_path / "exp.yaml")  # librdkafka leaves the Java members alone
    mixed = load(tmp_path, {**doc, "variants": [*doc["variants"], {"name": "librdkafka"}]})
    with pytest.raises(SpecError, match="fetch.max.wait.ms"):
        preflight.check_consumer_configs(mixed, tmp_path / "exp.yaml")
    env = foreignenv.ForeignEnv("kafka-clients", "4.1.0", ("java", "ChaosProducer.java"), ("java", "ChaosMember.java"))
    asked = []

    def check(env, settings, program=()):
        asked.append((program, settings))
        return "ConfigException: Unknown consumer configuration fetch.max.wait.ms" if program else ""

    monkeypatch.setattr(foreignenv, "ensure", lambda name, version: env)
    monkeypatch.setattr(foreignenv, "check_settings", check)
    with pytest.raises(SpecError, match=r"variants\.0\.consumer \(java\): kafka-clients 4\.1\.0 refuses its member "
                                        "settings: ConfigException: Unknown consumer configuration"):
        preflight.prepare_clients(spec, tmp_path / "exp.yaml")
    assert [program for program, _ in asked] == [(), ("java", "ChaosMember.java")]
    assert asked[1][1]["fetch.max.wait.ms"] == 100 and asked[1][1]["group.protocol"] == "classic"


# -- the supervisor with members that speak the lines ----------------------------------------------------------------
# A stand-in for the JVM: it says its start and an assignment, takes a batch of 3 in hand and processes 2 of them,
# then waits; SIGTERM: its stop, exit 0 (3 when a second SIGTERM came while it stopped). What it was given is in
# its start event's detail.
STAND_IN = [sys.executable, "-c", """
import json, os, signal, sys, time
cfg = json.loads(os.environ["KAFKA_CHAOS_MEMBER"])
slot = int(cfg["member"][1])
def say(line):
    os.write(1, (line + "\\n").encode())
terms = 0
def stop(*_):  # a member closing its client takes a while: exit 3 if asked to stop twice (the supervisor asks once)
    global terms
    terms += 1
    if terms == 1:
        say("e 3 stop - ")
        time.sleep(0.3)
        os._exit(0 if terms == 1 else 3)
signal.signal(signal.SIGTERM, stop)
s = cfg["settings"]
say("e 1 start - " + " ".join(str(s[k]) for k in ("client.id", "group.protocol", "max.poll.records")))
say(f"e 2 assign [{slot}] ")
say("h 0 3")
for n in range(2):
    say(f"p after {slot} {n} {n} 1 {n} {10 + n}")
    time.sleep(1.0)
while True:
    time.sleep(0.05)
"""]


@pytest.fixture
def group(tmp_path):
    g = consumers.ConsumerGroup({"bootstrap.servers": "127.0.0.1:9"}, "t", 2, ConsumerSpec(members=2, batch=50),
                                tmp_path / "sink.sqlite", lambda m: tmp_path / "logs" / f"{m}.log", "g",
                                threading.Event(), clock=FakeClock(), java=tuple(STAND_IN))
    g.start()
    yield g
    g.stop(timeout=10)
    assert all(s.proc.poll() is not None for incarnations in g.slots for s in incarnations)


def said_enough(g):
    """Until both stand-ins' lines are all in the sink, both records each (a deadlock guard, not a timing): a member
    frozen between its two `p` lines would be caught mid-batch with one."""
    deadline = time.monotonic() + 60
    while rows(g.sink_path, "SELECT member, count(*) FROM processed GROUP BY member ORDER BY member") != [
            ("m0.0", 2), ("m1.0", 2)]:
        assert time.monotonic() < deadline, "the stand-ins' lines never reached the sink"
        time.sleep(0.01)


def test_java_members_write_the_sink_through_their_relays_and_a_kill_finds_one_mid_batch(group):
    assert all(slot.relay is not None for slot in group.current)
    said_enough(group)
    assert group._kill_mid_batch()  # frozen, its lines settled: 2 of its 3 records processed
    [killed] = [slot for slot in group.current if slot.state == "killed"]
    assert killed.proc.returncode == -9
    group.stop(timeout=10)
    assert [s.proc.returncode for s in group.current if s is not killed] == [0]
    assert group.error == ""
    sink = group.sink_path
    assert rows(sink, "SELECT member, detail FROM events WHERE event = 'start' ORDER BY member") == [
        ("m0.0", "m0.0 classic 50"), ("m1.0", "m1.0 classic 50")]
    assert rows(sink, "SELECT member, count(*), min(committed), max(committed) FROM processed GROUP BY member") == [
        ("m0.0", 2, "after", "after"), ("m1.0", 2, "after", "after")]
    stopped = {m for (m,) in rows(sink, "SELECT member FROM events WHERE event = 'stop'")}
    assert stopped == {"m0.0", "m1.0"} - {killed.name}  # said before its exit, applied before stop() returned


# A JVM asked to stop while it still compiles its source exits 143 (its own SIGTERM handling), before the member's.
STARTING_JVM = [sys.executable, "-c", """
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
os.write(1, b"e 1 start - pid 1\\n")
while True:
    time.sleep(0.05)
"""]


@pytest.mark.parametrize("java, error", [(tuple(STARTING_JVM), ""), ((), "exited with code 143 when asked to stop")])
def test_a_jvm_stopped_while_it_starts_is_no_error_but_the_same_code_of_a_python_member_is(tmp_path, monkeypatch,
                                                                                          java, error):
    monkeypatch.setattr(consumers, "MEMBER", STARTING_JVM)  # the Python member's command, for the second case
    g = consumers.ConsumerGroup({"bootstrap.servers": "127.0.0.1:9"}, "t", 1, ConsumerSpec(members=1),
                                tmp_path / "sink.sqlite", lambda m: tmp_path / "logs" / f"{m}.log", "g",
                                threading.Event(), clock=FakeClock(), java=java)
    g.start()
    deadline = time.monotonic() + 60  # a deadlock guard, not a timing: until its handler is set
    while not (rows(g.sink_path, "SELECT count(*) FROM events") == [(1,)] or
               (tmp_path / "logs" / "m0.0.log").exists() and "start" in (tmp_path / "logs" / "m0.0.log").read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    g.stop(timeout=10)
    g.close()
    assert g.current[0].proc.returncode == 143
    assert (error in g.error) if error else g.error == ""


# A stand-in for an idempotent-sink JVM: it asks the sink's offsets for its assignment through its stdin, says a batch
# of 2, then the first of them again (a zombie's batch: fenced), and notes each answer beside the sink; it waits then.
IDEMPOTENT_STAND_IN = [sys.executable, "-c", """
import json, os, signal, sys, time
cfg = json.loads(os.environ["KAFKA_CHAOS_MEMBER"])
def say(line):
    os.write(1, (line + "\\n").encode())
def ask(lines):
    say(lines)
    got = sys.stdin.buffer.readline().decode().rstrip("\\n")
    with open(cfg["sink"] + "." + cfg["member"] + ".answers", "a") as f:
        f.write(got + "\\n")
    return got
signal.signal(signal.SIGTERM, lambda *_: (say("e 9 stop - "), os._exit(0)))
say("e 1 start - pid 1")
say("e 2 assign [0] " + ask("q 0"))
ask("b 2\\np atomic 0 0 0 1 0 3\\np atomic 0 1 1 1 1 4")
ask("b 1\\np atomic 0 0 0 1 2 5")
while True:
    time.sleep(0.05)
"""]


def test_an_idempotent_sink_member_asks_through_its_stdin_and_its_kill_leaves_nothing_waiting(tmp_path):
    g = consumers.ConsumerGroup({"bootstrap.servers": "127.0.0.1:9"}, "t", 1,
                                ConsumerSpec(members=1, strategy="idempotent-sink"), tmp_path / "sink.sqlite",
                                lambda m: tmp_path / "logs" / f"{m}.log", "g", threading.Event(), clock=FakeClock(),
                                java=tuple(IDEMPOTENT_STAND_IN))
    g.start()
    answers = tmp_path / "sink.sqlite.m0.0.answers"
    try:
        deadline = time.monotonic() + 60  # a deadlock guard, not a timing: until its three answers came
        while not (answers.exists() and answers.read_text().count("\n") == 3):
            assert time.monotonic() < deadline, "the stand-in never had its answers"
            time.sleep(0.01)
        assert answers.read_text().splitlines() == ["o", "f", "f 0=2"]
        [slot] = g.current
        slot.relay.settle()  # its lines before the last answer: applied before it
        assert rows(g.sink_path, "SELECT offset, n, committed FROM processed ORDER BY seq") == [
            (0, 0, "atomic"), (1, 1, "atomic")]
        assert rows(g.sink_path, "SELECT event, partitions, detail FROM events WHERE member = 'm0.0' ORDER BY rowid") == [
            ("start", None, "pid 1"), ("assign", "[0]", "o"), ("fenced", "[0]", '{"0": 2}')]
        os.kill(slot.proc.pid, signal.SIGSTOP)  # frozen, then killed: its relay ends with its pipe
        g._kill({})
        assert slot.state == "killed" and slot.proc.returncode == -9 and slot.relay.join(0)
    finally:
        g.stop(timeout=10)
        g.close()
    assert g.error == "" and slot.relay.error == ""
