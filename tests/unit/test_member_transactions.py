"""The librdkafka member's transaction calls (workload/member.py), without a broker: a stand-in producer raises
the errors librdkafka raises, and the sink (a real SQLite file) keeps what the member said."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.workload import member as members
from harness.workload import sink as sinks


class Producer:
    """Raises each of `errors` in turn from its transaction calls (None: the call succeeds); records the calls."""

    def __init__(self, errors):
        self.errors = list(errors)
        self.calls = []

    def _call(self, name, args):
        self.calls.append((name, args))
        error = self.errors.pop(0) if self.errors else None
        if error is not None:
            raise KafkaException(error)

    def begin_transaction(self):
        self.calls.append(("begin_transaction", ()))

    def produce(self, *args, **kwargs):
        pass

    def send_offsets_to_transaction(self, *args):
        self._call("send_offsets_to_transaction", args)

    def commit_transaction(self, *args):
        self._call("commit_transaction", args)

    def abort_transaction(self, *args):
        self._call("abort_transaction", args)


class Message:
    def __init__(self, partition, offset):
        self._p, self._o = partition, offset

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def value(self):
        return str(self._o).encode()


class Consumer:
    def consumer_group_metadata(self):
        return "group-metadata"


TIMED_OUT = KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True)
ABORTABLE = KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, "bumped", txn_requires_abort=True)
FENCED = KafkaError(KafkaError._FENCED, "fenced", fatal=True)


def member(tmp_path, producer):
    sinks.create(tmp_path / "sink.sqlite")
    m = members.Member.__new__(members.Member)  # its clients are the stand-ins: no broker
    m.cfg = {"output": "out", "processing_ms": 0.0}
    m.name, m.topic, m.strategy, m.stopping, m.session, m.n = "m0", "in", "transactional", False, 0, 0
    m.sink = sinks.Sink(tmp_path / "sink.sqlite", "m0")
    m.producer, m.consumer = producer, Consumer()
    m.calling = None
    m.rewound = []
    m._rewind = lambda records: m.rewound.append(len(records))
    return m


def events(m):
    return [tuple(r) for r in m.sink.db.execute("SELECT event, detail FROM events ORDER BY rowid")]


def test_a_retriable_timeout_is_made_again_until_the_call_succeeds(tmp_path):
    p = Producer([None, TIMED_OUT, TIMED_OUT, None])  # send_offsets ok; commit times out twice, then commits
    m = member(tmp_path, p)
    m._batch_transactional([Message(0, 5), Message(1, 7)])
    assert [name for name, _ in p.calls] == ["begin_transaction", "send_offsets_to_transaction"] + [
        "commit_transaction"] * 3
    assert all(args[-1] == -1 for name, args in p.calls[1:])  # the transaction's remaining time, every call
    assert [e for e, _ in events(m)] == ["retry", "retry"]
    assert "commit_transaction: _TIMED_OUT" in events(m)[0][1]
    assert m.rewound == []


def test_an_abortable_error_aborts_and_rewinds_and_is_not_retried(tmp_path):
    p = Producer([ABORTABLE, None])  # send_offsets fails abortably; the abort succeeds
    m = member(tmp_path, p)
    m._batch_transactional([Message(2, 3)])
    assert [name for name, _ in p.calls] == ["begin_transaction", "send_offsets_to_transaction",
                                             "abort_transaction"]
    assert [e for e, _ in events(m)] == ["abort"]
    assert m.rewound == [1]


def test_a_fatal_error_ends_the_member_unretried(tmp_path):
    p = Producer([None, FENCED])
    m = member(tmp_path, p)
    with pytest.raises(KafkaException):
        m._batch_transactional([Message(0, 1)])
    assert [name for name, _ in p.calls][-1] == "commit_transaction"
    assert events(m) == []


def test_a_stop_ends_the_retrying_and_leaves_the_transaction(tmp_path):
    p = Producer([None] + [TIMED_OUT] * 5)
    m = member(tmp_path, p)
    m.stopping = True  # SIGTERM came while the member was in the batch
    with pytest.raises(members.Abandoned):
        m._batch_transactional([Message(0, 1)])
    assert [name for name, _ in p.calls].count("commit_transaction") == 1  # not made again once stopping
    assert "abort_transaction" not in [name for name, _ in p.calls]
    assert [e for e, _ in events(m)] == ["retry"]


def test_a_call_is_overdue_only_past_its_timeout_and_the_grace():
    assert members.overdue("send_offsets_to_transaction", 20.0, 20.0 + members.GRACE) == ""  # may still return
    said = members.overdue("send_offsets_to_transaction", 20.0, 20.0 + members.GRACE + 1.0)
    assert said == "send_offsets_to_transaction has not returned after 51 s (its timeout 20 s)"


def test_the_watchdog_counts_its_own_ticks_says_a_hang_once_and_starts_again_for_the_next_call():
    watch, call = members.Watch(), ("commit_transaction", 100.0, 20.0)
    said = [watch.tick(call, 1.0) for _ in range(52)]  # the first tick sees the call begin: 51 s waited after
    assert said[:51] == [""] * 51
    assert said[51] == "commit_transaction has not returned after 51 s (its timeout 20 s)"
    assert watch.tick(call, 1.0) == ""  # said once per call
    again = ("commit_transaction", 160.0, 20.0)  # the next call, even of the same name, waits from 0
    assert [watch.tick(again, 1.0) for _ in range(10)] == [""] * 10
    assert watch.tick(None, 1.0) == "" and watch.waited == 0.0


def test_a_frozen_member_is_not_its_client_taking_time():
    """A SIGSTOPped member's watchdog does not run: the pause is one late tick, never the pause's length."""
    watch, call = members.Watch(), ("send_offsets_to_transaction", 0.0, 20.0)
    watch.tick(call, 1.0)
    for _ in range(10):
        watch.tick(call, 1.0)
    # a 60 s consumer-pause: no tick while frozen; the tick that spans it counts as one
    assert watch.tick(call, 1.0) == "" and watch.waited == 11.0


def test_the_call_in_progress_is_known_while_it_runs_and_forgotten_after(tmp_path):
    m = member(tmp_path, Producer([]))
    seen = []
    m._call("committed", 30.0, lambda *a: seen.append(m.calling))
    assert seen[0][0] == "committed" and seen[0][2] == 30.0
    assert m.calling is None
    with pytest.raises(KafkaException):
        m._call("committed", 30.0, lambda: (_ for _ in ()).throw(KafkaException(TIMED_OUT)))
    assert m.calling is None
