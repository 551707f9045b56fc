"""What a try's outcome says went wrong and what it saw (harness/explore/signature.py), and the corpus of tries
that saw something new (harness/explore/corpus.py). The log lines are real: from a quickstart and a transactions
run on Tansu and a three-node Apache Kafka 4.1 run, copied as they were written."""

import copy
import random

import pytest

from harness.explore.corpus import Corpus
from harness.explore.signature import broker_events, client_events, error_events, signature, template, not_as_planned

# librdkafka, as the run folder's client log holds it (logfile.py)
CLIENT = [
    "2026-11-27 07:59:49,431 FAIL [rdkafka#producer-14] [thrd:127.0.0.1:38459/111]: 127.0.0.1:38459/111: "
    "Disconnected: connection closed by peer: receive 0 after POLLIN (after 551ms in state UP)",
    "2026-11-27 07:59:53,272 FAIL [rdkafka#producer-14] [thrd:127.0.0.1:41871/111]: 127.0.0.1:41871/111: "
    "Disconnected: connection closed by peer: receive 0 after POLLIN (after 73ms in state UP, 2 identical error(s) "
    "suppressed)",
    "2026-11-27 07:59:50,353 FAIL [rdkafka#producer-14] [thrd:127.0.0.1:38459/bootstrap]: 127.0.0.1:38459/bootstrap: "
    "Disconnected: connection closed by peer: receive 0 after POLLIN (after 526ms in state UP)",
    "2026-11-27 07:59:49,431 GETPID [rdkafka#producer-14] [thrd:main]: Failed to acquire idempotence PID from broker "
    "127.0.0.1:38459/111: Local: Broker transport failure: retrying",
    "2026-11-27 08:58:38,484 GETPID [rdkafka#producer-14] [thrd:main]: Failed to acquire idempotence PID from broker "
    "127.0.0.1:38347/2: Broker: Coordinator load in progress: retrying",
    "2026-11-27 08:18:09,636 REQTMOUT [rdkafka#producer-6] [thrd:TxnCoordinator]: TxnCoordinator: Timed out 0 "
    "in-flight, 0 retry-queued, 1 out-queue, 0 partially-sent requests",
    "2026-11-27 08:18:12,395 REQTMOUT [rdkafka#producer-7] [thrd:TxnCoordinator]: TxnCoordinator: Timed out 3 "
    "in-flight, 0 retry-queued, 12 out-queue, 1 partially-sent requests",
    "member m0.0: confluent-kafka 2, librdkafka 2.16.0",
]
# Kafka's broker log (log4j), with a stack trace after an ERROR line
BROKER = [
    "[2026-11-27 08:58:00,101] WARN [RaftManager id=1] Connection to node 1 (/127.0.0.1:31647) could not be "
    "established. Node may not be available. (org.apache.kafka.clients.NetworkClient)",
    "[2026-11-27 08:58:51,267] WARN [RaftManager id=2] Connection to node 3 (/127.0.0.1:37279) could not be "
    "established. Node may not be available. (org.apache.kafka.clients.NetworkClient)",
    "[2026-11-27 08:58:47,061] WARN [ReplicaFetcher replicaId=1, leaderId=3, fetcherId=0] Error in response for "
    "fetch request (type=FetchRequest, replicaId=1, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={}, "
    "isolationLevel=read_uncommitted, removed=, replaced=, metadata=(sessionId=734125024, epoch=42), rackId=) "
    "(kafka.server.ReplicaFetcherThread)",
    "[2026-11-27 08:58:23,531] WARN [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] Error in response for "
    "fetch request (type=FetchRequest, replicaId=2, maxWait=500, minBytes=1, maxBytes=10485760, "
    "fetchData={kc-idempotence-off-f21a06-1=PartitionData(topicId=lNY83sYrSNSVDL3OHaYGRA, fetchOffset=5461, "
    "logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional[0], lastFetchedEpoch=Optional[0])}, "
    "isolationLevel=read_uncommitted, removed=, replaced=, metadata=(sessionId=729904, epoch=INITIAL), rackId=) "
    "(kafka.server.ReplicaFetcherThread)",
    "[2026-11-27 08:58:50,352] ERROR [ControllerApis nodeId=1] Unexpected error handling request "
    "RequestHeader(apiKey=BROKER_HEARTBEAT, apiVersion=1, clientId=1, correlationId=19, headerVersion=2) -- "
    "BrokerHeartbeatRequestData(brokerId=1, brokerEpoch=77, currentMetadataOffset=178, wantFence=false, "
    "wantShutDown=false, offlineLogDirs=[]) with context RequestContext(header=RequestHeader(apiKey=BROKER_HEARTBEAT, "
    "apiVersion=1, clientId=1, correlationId=19, headerVersion=2), connectionId='127.0.0.1:31647-127.0.0.1:53396-0-3'"
    ", clientAddress=/127.0.0.1) (kafka.server.ControllerApis)",
    "java.util.concurrent.CompletionException: org.apache.kafka.common.errors.NotControllerException: The active "
    "controller appears to be node 3.",
    "\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332) ~[?:?]",
    "[2026-11-27 08:58:03,801] INFO [BrokerServer id=1] Waiting for the broker to be unfenced (kafka.server.BrokerServer)",
]


def test_two_occurrences_of_one_event_give_one_template_and_two_events_two():
    events = client_events(CLIENT)
    assert events == {
        "client FAIL: <addr>/<n>: Disconnected: connection closed by peer: receive <n> after POLLIN (after <n>ms in "
        "state UP)",
        "client FAIL: <addr>/bootstrap: Disconnected: connection closed by peer: receive <n> after POLLIN (after "
        "<n>ms in state UP)",
        "client GETPID: Failed to acquire idempotence PID from broker <addr>/<n>: Local: Broker transport failure: "
        "retrying",
        "client GETPID: Failed to acquire idempotence PID from broker <addr>/<n>: Broker: Coordinator load in "
        "progress: retrying",
        "client REQTMOUT: TxnCoordinator: Timed out <n> in-flight, <n> retry-queued, <n> out-queue, <n> "
        "partially-sent requests",
    }


def test_broker_events_keep_the_logger_and_count_a_stack_trace_once():
    events = broker_events(BROKER)
    assert events == {
        "broker WARN: [RaftManager id=<n>] Connection to node <n> (/<addr>) could not be established. Node may not "
        "be available. (org.apache.kafka.clients.NetworkClient)",
        "broker WARN: [ReplicaFetcher replicaId=<n>, leaderId=<n>, fetcherId=<n>] Error in response for fetch "
        "request (…) (kafka.server.ReplicaFetcherThread)",
        "broker ERROR: [ControllerApis nodeId=<n>] Unexpected error handling request RequestHeader(apiKey="
        "BROKER_HEARTBEAT, apiVersion=<n>, clientId=<client>, correlationId=<n>, headerVersion=<n>) -- "
        "BrokerHeartbeatRequestData(…) with context RequestContext(…) (kafka.server.ControllerApis)",
    }


def test_tansu_lines_in_rust_tracing_form():
    # Tansu logs through Rust's tracing (its fmt layer's default form); the stored Tansu logs hold no warning,
    # so these are made in that form.
    lines = ["2026-11-27T07:59:15.123456Z  WARN tansu_server::broker: connection reset addr=127.0.0.1:38459",
             "\x1b[2m2026-11-27T07:59:16.5Z\x1b[0m \x1b[31mERROR\x1b[0m tansu_storage: segment 17 missing",
             "2026-11-27T07:59:15.123456Z  INFO tansu_server::broker: ready in 12ms"]
    assert broker_events(lines) == {"broker WARN: tansu_server::broker: connection reset addr=<addr>",
                                    "broker ERROR: tansu_storage: segment <n> missing"}


@pytest.mark.parametrize("text, expected", [
    ("producer kc-quickstart-a4560f-0 fenced", "producer <name> fenced"),
    ("topic 'kc-tx-3f2a' partition [2]", "topic <name> partition [<n>]"),
    ("id 0x7f3a2c done at @2e3f072c", "id <hex> done at @<hex>"),
    ("member 1b4e28ba-2fa1-11d2-883f-0016d3cca427 left", "member <id> left"),
    ("leader localhost:9092 took 1.5 s, offset -1", "leader <addr> took <n> s, offset <n>"),
    ("Produce v3 refused", "Produce v3 refused"),
])
def test_template_strips_what_varies(text, expected):
    assert template(text) == expected


def test_client_lines_in_librdkafka_form_keep_levels_up_to_notice():
    lines = ["%3|1700000000.123|FAIL|rdkafka#producer-1| [thrd:127.0.0.1:9092/0]: 127.0.0.1:9092/0: Connect "
             "to ipv4#127.0.0.1:9092 failed: Connection refused (after 0ms in state CONNECT)",
             "%5|1700000001.5|PURGE|rdkafka#producer-2| [thrd:app]: Purged 12 messages",
             "%6|1700000001.5|STATE|rdkafka#producer-1| [thrd:main]: state change",
             "%7|1700000001.5|MSGSET|rdkafka#producer-1| [thrd:main]: sent 1 batch"]
    assert client_events(lines) == {
        "client FAIL: <addr>/<n>: Connect to ipv4#<addr> failed: Connection refused (after <n>ms in state CONNECT)",
        "client PURGE: Purged <n> messages"}
    # a client log written with the level name drops debug lines
    assert client_events(["2026-11-27 07:59:49,431 DEBUG MSGSET [rdkafka#producer-1] [thrd:main]: sent 1"]) == set()



def test_client_lines_of_the_java_and_python_clients_count_from_warn_up():
    java = ["01:01:41.848 [kafka-producer-network-thread | producer-1] WARN  org.apache.kafka.clients.producer."
            "internals.Sender - [Producer clientId=producer-1] Got error produce response with correlation id 13 on "
            "topic-partition kc-idempotent-fa841b-0, retrying (2147483646 attempts left). Error: NETWORK_EXCEPTION",
            "01:01:42.001 [main] ERROR org.apache.kafka.clients.consumer.internals.ConsumerCoordinator - [Consumer "
            "clientId=consumer-kc-g-1, groupId=kc-g] Offset commit failed on partition kc-t-2 at offset 7",
            "01:01:42.002 [main] INFO  org.apache.kafka.clients.Metadata - [Producer clientId=producer-1] Cluster ID: x"]
    python = ["2026-11-30 01:01:41,848 WARNING kafka.producer.sender: Got error produce response on topic-partition "
              "TopicPartition(topic='kc-x-1', partition=0), retrying (2 attempts left). Error: NotLeaderForPartitionError",
              "2026-11-30 01:01:41,849 INFO kafka.conn: <BrokerConnection node_id=1>: connected"]
    assert client_events(java + python) == {
        "client Sender: [Producer clientId=<client>] Got error produce response with correlation id <n> on "
        "topic-partition <name>, retrying (<n> attempts left). Error: NETWORK_EXCEPTION",
        "client ConsumerCoordinator: [Consumer clientId=<client>, groupId=<name>] Offset commit failed on "
        "partition <name> at offset <n>",
        "client kafka.producer.sender: Got error produce response on topic-partition TopicPartition(topic=<name>, "
        "partition=<n>), retrying (<n> attempts left). Error: NotLeaderForPartitionError"}
    # a line of the child's own (not its client's log) is no event
    assert client_events(["first send acknowledged (0 at partition 1)"]) == set()
    # two members (or producer instances) saying the same thing: one event
    said = "01:01:41.848 [t] WARN  a.Sender - [Producer clientId={}, transactionalId=kc-t-1] Disconnected"
    assert client_events([said.format("m1.0"), said.format("m2.3")]) == {
        "client Sender: [Producer clientId=<client>, transactionalId=<name>] Disconnected"}


def summary(**variants) -> dict:
    base = {"status": "complete", "variants": {}}
    for name, fields in variants.items():
        entry = {"acked": 10, "verdict": "pass", "expectations": [
            {"metric": "lost", "rule": "== 0 (fatal)", "actual": 0, "status": "pass", "passed": True}]}
        base["variants"][name] = {**entry, **fields}
    return base


def test_signature_says_what_went_wrong_without_numbers():
    assert signature(summary(a={}, b={})) == ()
    failed = summary(a={"verdict": "fail", "expectations": [
        {"metric": "lost", "rule": "== 0 (fatal)", "actual": 17, "status": "fail", "passed": False},
        {"metric": "duplicates", "rule": "== 0", "actual": 3, "status": "fail", "passed": False},
        {"metric": "jump_back_runs", "rule": "== 0", "actual": 0, "passed": True}]}, b={})
    assert signature(failed) == ("a: duplicates", "a: lost")
    again = copy.deepcopy(failed)
    again["variants"]["a"]["expectations"][0]["actual"] = 4000
    assert signature(again) == signature(failed)
    fatal = summary(a={"verdict": "unknown", "client_fatal": "OUT_OF_ORDER_SEQUENCE_NUMBER",
                       "producer_error": "Broker: Broker received an out of order sequence number", "expectations": [
                           {"metric": "producer_failed", "rule": "== 0 (else unknown: ...)", "actual": 1,
                            "status": "unknown", "passed": False}]})
    assert signature(fatal) == ("a: client_fatal OUT_OF_ORDER_SEQUENCE_NUMBER", "a: unknown")
    old = summary(a={"expectations": [{"metric": "lost", "rule": "== 0", "actual": 2, "passed": False}]})
    assert signature(old) == ("a: lost",)  # written before checks had a status
    assert signature({"status": "error", "variants": {}}) == ("run: error",)


def test_a_try_unknown_only_for_a_fault_it_could_not_apply_is_not_as_planned():
    unapplied = {"metric": "faults_not_applied", "rule": "== 0 (else unknown: ...)", "actual": 1, "status": "unknown",
                 "passed": False}
    passed = {"metric": "lost", "rule": "== 0 (fatal)", "actual": 0, "status": "pass", "passed": True}
    allowed = {"metric": "duplicates", "rule": "== 0", "actual": 3, "status": "allowed", "passed": True}
    only = summary(a={"verdict": "unknown", "expectations": [passed, allowed, unapplied]}, b={})
    assert signature(only) == ("a: unknown",) and not_as_planned(only)
    # anything else wrong beside it, in that variant or another, or another cause of unknown: a finding as before
    lost = {**passed, "actual": 5, "status": "fail", "passed": False}
    assert not not_as_planned(summary(a={"verdict": "unknown", "expectations": [lost, unapplied]}))
    assert not not_as_planned(summary(a={"verdict": "unknown", "expectations": [unapplied]},
                                      b={"verdict": "fail", "expectations": [lost]}))
    fatal = {"metric": "producer_failed", "rule": "== 0 (else unknown: ...)", "actual": 1, "status": "unknown",
             "passed": False}
    assert not not_as_planned(summary(a={"verdict": "unknown", "expectations": [unapplied, fatal]}))
    assert not not_as_planned(summary(a={"verdict": "unknown", "client_fatal": "X", "expectations": [unapplied]}))
    assert not not_as_planned(summary(a={}, b={}))  # nothing went wrong: nothing to excuse
    assert not not_as_planned({"status": "error", "variants": {}})


def test_error_events_name_the_errors_the_producer_got():
    fatal = summary(a={"client_fatal": "OUT_OF_ORDER_SEQUENCE_NUMBER",
                       "producer_error": "Broker: Broker received an out of order sequence number: seq 17"}, b={})
    assert error_events(fatal, {"_MSG_TIMED_OUT": 12, "REQUEST_TIMED_OUT": 0, "NOT_LEADER_FOR_PARTITION": 1}) == {
        "error _MSG_TIMED_OUT", "error NOT_LEADER_FOR_PARTITION", "error OUT_OF_ORDER_SEQUENCE_NUMBER",
        "producer_error Broker: Broker received an out of order sequence number: seq <n>"}
    assert error_events(summary(a={}), {}) == set()


def test_the_corpus_keeps_a_try_that_saw_something_new():
    corpus = Corpus()
    first = [{"kind": "lost-acks", "at": 1.0}]
    assert corpus.consider(1, first, {"client FAIL: x", "error _MSG_TIMED_OUT"}) == {"client FAIL: x",
                                                                                      "error _MSG_TIMED_OUT"}
    assert corpus.consider(2, [], {"client FAIL: x"}) == set()
    assert corpus.consider(3, [{"kind": "latency", "at": 2.0}], {"client FAIL: x", "broker WARN: y"}) == {
        "broker WARN: y"}
    assert [e.try_id for e in corpus.entries] == [1, 3] and len(corpus) == 2
    assert corpus.seen == {"client FAIL: x", "error _MSG_TIMED_OUT", "broker WARN: y"}
    assert corpus.entries[1].new == {"broker WARN: y"}
    first[0]["at"] = 9.0
    assert corpus.entries[0].faults == [{"kind": "lost-acks", "at": 1.0}]  # its own copy
    rng = random.Random(0)
    picked = [corpus.pick(rng).try_id for _ in range(400)]
    assert 150 < picked.count(1) < 250  # uniform
    replayed = Corpus.replay([(1, first, {"client FAIL: x", "error _MSG_TIMED_OUT"}), (2, [], {"client FAIL: x"}),
                              (3, [], {"client FAIL: x", "broker WARN: y"})])
    assert [e.try_id for e in replayed.entries] == [1, 3] and replayed.seen == corpus.seen
    with pytest.raises(IndexError):
        Corpus().pick(rng)


def test_a_tries_events_take_in_its_consumer_group_members_logs(tmp_path):
    from types import SimpleNamespace

    from harness.explore.runner import ClusterRunner
    from harness.runfolder import RunFolder

    folder = RunFolder.create(tmp_path, "exp")
    folder.client_log("v").parent.mkdir(parents=True, exist_ok=True)
    folder.client_log("v").write_text("01:01:41.848 [main] WARN  a.b.Sender - retrying\n")
    folder.member_log("v", "m1").write_text("01:01:42.001 [main] ERROR a.b.ConsumerCoordinator - commit failed\n")
    folder.member_log("w", "m2").write_text("%4|1700000000.1|COMMITFAIL|rdkafka#consumer-3| [thrd:main]: failed\n")
    spec = SimpleNamespace(variants=[SimpleNamespace(name="v"), SimpleNamespace(name="w")])
    assert ClusterRunner._events(None, spec, folder, {}, []) == {
        "client Sender: retrying", "client ConsumerCoordinator: commit failed", "client COMMITFAIL: failed"}


def _summary(variant: str, client: str, failed: list[str], **fields) -> dict:
    entry = {"client": client, "verdict": "fail", **fields,
             "expectations": [{"metric": m, "status": "fail"} for m in failed]}
    return {"status": "complete", "verdict": "fail", "variants": {variant: entry}}


def test_the_shipped_known_bugs_explain_their_own_marks_and_nothing_else():
    """The known bugs of the shipped spaces (explore.known), against summaries shaped as the runs that showed them
    write them: each explains its own marks with its evidence, and leaves the same marks without it."""
    from pathlib import Path

    from harness.explore.signature import explained
    from harness.spec import load_spec

    root = Path(__file__).resolve().parents[2] / "experiments" / "explore"
    consumers = load_spec(root / "kafka-consumers.yaml").explore.known
    hung = {"m0.0": "send_offsets_to_transaction has not returned after 51 s (its timeout 20 s)"}
    marks = ["client_hangs", "unconsumed"]
    shown = _summary("classic-transactional", "confluent-kafka 2.16.1, librdkafka 2.16.0", marks,
                     consumer={"strategy": "transactional", "hung_in_call": hung})
    left, by = explained(shown, consumers)
    assert left == () and list(by) == ["librdkafka #5511 (experiments/known-bugs/librdkafka-5511.md)"]
    other = _summary("classic-transactional", "confluent-kafka 2.16.1, librdkafka 2.16.0", marks,
                     consumer={"hung_in_call": {"m0.0": "commit_transaction has not returned after 51 s"}})
    assert explained(other, consumers) == (("classic-transactional: client_hangs",
                                            "classic-transactional: unconsumed"), {})
    sink = _summary("consumer-idempotent-sink", "confluent-kafka 2.16.1", ["client_hangs"],
                    consumer={"hung_in_call": hung})
    assert explained(sink, consumers)[0] == ("consumer-idempotent-sink: client_hangs",)  # not a transactional member

    python = load_spec(root / "kafka-python.yaml").explore.known
    expired = _summary("transactional", "kafka-python 3.0.12", ["failed_committed", "lost_committed"])
    assert explained(expired, python)[0] == ()
    fenced = _summary("transactional", "kafka-python 3.0.12", [], client_fatal="ProducerFencedError")
    fenced["variants"]["transactional"].update(verdict="unknown", expectations=[  # as the run that showed it
        {"metric": "producer_failed", "status": "unknown"}])
    assert signature(fenced) == ("transactional: client_fatal ProducerFencedError", "transactional: unknown")
    assert explained(fenced, python)[0] == ()
    # another client; and 2.x commits no transaction whose sends failed (its fenced producer is the lost request's)
    for summary, client in ((expired, "kafka-clients 4.1.0"), (fenced, "aiokafka 0.14.0"),
                            (expired, "kafka-python 2.2.0")):
        summary = copy.deepcopy(summary)
        summary["variants"]["transactional"]["client"] = client
        assert explained(summary, python)[0] == signature(summary) != (), client
    hung = _summary("transactional", "kafka-python 3.0.12", [],
                    producer_error="the client hangs: commit_transaction() has not returned after 240 s")
    hung["variants"]["transactional"].update(verdict="unknown", expectations=[
        {"metric": "producer_failed", "status": "unknown"}])
    assert explained(hung, python)[0] == ()
    hung["variants"]["transactional"]["producer_error"] = "KafkaTimeoutError: Batch expired"  # not a hang
    assert explained(hung, python)[0] == ("transactional: unknown",)
    duplicated = _summary("transactional", "kafka-python 3.0.12", ["duplicates"])
    assert explained(duplicated, python) == (("transactional: duplicates",), {})
