"""Consumer group members of the Java client (KAFKA_HOME's kafka-clients, workload/java/ChaosMember.java) on real
Apache Kafka (one KRaft node): a kafka-clients variant's group runs one JVM per member, whose sink lines the run
relays into the sink, under a member kill (SIGKILL of the JVM, caught mid-batch) and a member pause (SIGSTOP, then
SIGCONT), with the classic group protocol and with KIP-848's consumer protocol. commit-after must process every
acknowledged value at least once, and a kill mid-batch makes the next owner process again what the dead member
processed and had not committed; transactional and idempotent-sink (the sink read back through the relay's answers)
process each once."""

import json
import sqlite3

import pyarrow.parquet as pq
import pytest

from harness.workload.consumers import MID_BATCH_WAIT

from tests.integration.test_quickstart import accounting
from tests.kafka.test_experiments import run
from tests.kafka.test_foreign_clients import ONE_NODE, java_version


def experiment(name, protocol):
    java = java_version()
    # The producer (a JVM too) sends first (consumer.when: after): a backlog, so the kill lands mid-batch. The group
    # processes 2 ms a record (~1,500 records/s for 3 members): 24,000 records last past both faults. Each JVM
    # compiles its source first (2-5 s on 2 cores): in the 02:07-02:11 runs the group held partitions 6-10 s after
    # its start, when the kill (at 9 s, waiting up to 10 s for a member mid-batch) caught one; nothing is processed
    # again until the dead member's session (6 s) ends, and its replacement's join rebalances once more. The pause
    # (3 s, shorter than the session) comes after that (~19-24 s), so it freezes a member that holds partitions: at
    # 14 s (both protocols) and 19 s (consumer) it froze one that held none, mid-rebalance.
    cluster = dict(ONE_NODE)
    if protocol == "consumer":  # KIP-848's session is the broker's (45 s at least by default): the classic's 6 s
        cluster["broker_config"] = {"group.consumer.min.session.timeout.ms": 2000,
                                    "group.consumer.session.timeout.ms": 6000,
                                    "group.consumer.min.heartbeat.interval.ms": 500,
                                    "group.consumer.heartbeat.interval.ms": 1500}
    return {"name": name, "seed": 7, "cluster": cluster, "topic": {"partitions": 6},
            "workload": {"messages": 24000, "rate": 12000},
            "client": {"kafka-clients": java}, "producer": {"acks": "all", "linger.ms": 5},
            "consumer": {"members": 3, "when": "after", "batch": 100, "processing_ms": 2.0,
                         "strategy": "commit-after", "group.protocol": protocol},
            "fault_window": 30,
            "variants": [{"name": "java"}],
            "faults": [{"kind": "consumer-kill", "at": 9.0, "duration": 1.0},
                       {"kind": "consumer-pause", "at": 26.0, "duration": 3.0}],
            "expectations": {"java": {"skipped": 0, "unconsumed": 0}}}


def sink(run_dir, sql):
    db = sqlite3.connect(run_dir / "java" / "sink.sqlite")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def acked_values(run_dir):
    acks = pq.read_table(run_dir / "java" / "acks.parquet", columns=["partition", "value", "outcome"]).to_pylist()
    return {(a["partition"], a["value"]) for a in acks if a["outcome"] == "acked"}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_members_process_every_acknowledged_value_under_a_kill_and_a_pause(tmp_path, protocol):
    from tests.integration.test_quickstart import run_dirs
    r, summary, faults = run(tmp_path, experiment(f"java-members-{protocol}", protocol))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]  # the verdict: pass, expectations held
    assert summary["status"] == "complete" and summary["verdict"] == "pass", summary
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    v = summary["variants"]["java"]
    assert v["client"] == f"kafka-clients {java_version()}" and accounting(v) and v["lost"] == 0, v
    assert v["consumer"]["client"] == f"kafka-clients {java_version()}", v["consumer"]
    assert v["consumer"]["group.protocol"] == protocol
    assert v["skipped"] == 0 and v["unconsumed"] == 0, v
    assert {(f["kind"], f["outcome"]) for f in faults} == {("consumer-kill", "healed"), ("consumer-pause", "healed")}
    # A kill that caught a member mid-batch (within MID_BATCH_WAIT) makes the next owner process again what the dead
    # member had processed and not committed. On a loaded machine no member may be mid-batch for 10 s (the JVMs
    # still compiling or joining); the kill then takes one in turn, journaled 10 s late, and nothing need repeat.
    [kill] = [f for f in faults if f["kind"] == "consumer-kill"]
    if kill["late_s"] < MID_BATCH_WAIT:
        assert v["reprocessed"] > 0, (kill, v)
    # The Java members' rows, by member name, all committed after their processing
    members = {m for (m,) in sink(run_dir, "SELECT DISTINCT member FROM processed")}
    assert members and members <= {"m0.0", "m1.0", "m2.0", "m0.1", "m1.1", "m2.1"}, members
    assert sink(run_dir, "SELECT DISTINCT committed FROM processed") == [("after",)]
    # Every acknowledged value processed at least once
    processed = set(sink(run_dir, "SELECT partition, value FROM processed WHERE value IS NOT NULL"))
    acked = acked_values(run_dir)
    assert len(acked) == 24000 and acked <= processed, sorted(acked - processed)[:10]
    # The faults reached the JVMs: one killed (its replacement started), one frozen and resumed
    events = dict(sink(run_dir, "SELECT event, count(*) FROM events GROUP BY event"))
    assert (events.get("killed"), events.get("replaced"), events.get("paused"), events.get("resumed")) == (1, 1, 1, 1)
    [(killed, replacement)] = sink(run_dir, "SELECT member, detail FROM events WHERE event = 'replaced'")
    assert killed[:2] == replacement[:2] and replacement.endswith(".1")
    # every member said its start (from the JVM: its pid), and each but the killed one its stop
    started = {m for (m,) in sink(run_dir, "SELECT member FROM events WHERE event = 'start'")}
    stopped = {m for (m,) in sink(run_dir, "SELECT member FROM events WHERE event = 'stop'")}
    assert started == {"m0.0", "m1.0", "m2.0", replacement} and stopped == started - {killed}, (started, stopped)
    log = (run_dir / "logs").glob(f"*{replacement}*")
    assert any(f"kafka-clients {java_version()}, group.protocol {protocol}" in p.read_text() for p in log)


@pytest.mark.nightly  # two consumer groups on Kafka: ~2 minutes
def test_java_commit_before_skips_what_a_killed_member_committed_and_auto_commit_skips_nothing(tmp_path):
    # The same timeline (classic). commit-before commits a batch, then processes it: the member killed mid-batch had
    # committed records it never processed (at-most-once: skipped > 0, allowed). The Java client's auto-commit
    # commits, inside poll() and close(), what the previous poll() returned: this member's loop has processed it by
    # then, so a kill repeats what it processed since the last commit and skips nothing (librdkafka's stores an
    # offset as it hands the record over: member.py; consumer-crash allows it to skip). Runs of 02:17, 02:21, 02:23:
    # commit-before skipped 97, 93, 85 (the killed member had processed 3, 7, 15 of its batch of 100), auto-commit
    # reprocessed 54, 166, 248.
    from tests.integration.test_quickstart import run_dirs
    doc = experiment("java-strategies", "classic")
    doc["variants"] = [{"name": "commit-before", "consumer": {"strategy": "commit-before"}, "allow": ["skipped"]},
                       {"name": "auto-commit", "consumer": {"strategy": "auto-commit",
                                                            "config": {"auto.commit.interval.ms": 1000}}}]
    doc["expectations"] = {"commit-before": {"reprocessed": 0}, "auto-commit": {"skipped": 0, "unconsumed": 0}}
    r, summary, faults = run(tmp_path, doc)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert summary["status"] == "complete" and summary["verdict"] == "pass", summary
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    # What a kill costs shows only when it caught a member mid-batch (within MID_BATCH_WAIT); on a loaded machine
    # it may take one in turn, journaled late, and nothing need be skipped or repeated.
    for name, metric in (("commit-before", "skipped"), ("auto-commit", "reprocessed")):
        [kill] = [f for f in faults if f["kind"] == "consumer-kill" and f["variant"] == name]
        if kill["late_s"] < MID_BATCH_WAIT:
            assert summary["variants"][name][metric] > 0, (name, kill, summary["variants"][name])
    for name, committed in (("commit-before", "before"), ("auto-commit", "auto")):
        v = summary["variants"][name]
        assert v["consumer"]["client"] == f"kafka-clients {java_version()}" and v["unconsumed"] == 0, v
        db = sqlite3.connect(run_dir / name / "sink.sqlite")
        try:
            assert db.execute("SELECT DISTINCT committed FROM processed").fetchall() == [(committed,)]
            assert db.execute("SELECT count(*) FROM events WHERE event = 'killed'").fetchone() == (1,)
            # every record of the log processed, but those skipped
            distinct = db.execute("SELECT count(*) FROM (SELECT DISTINCT partition, offset FROM processed)").fetchone()
        finally:
            db.close()
        assert distinct[0] == 24000 - v["skipped"], (name, v)
    assert {(f["variant"], f["kind"], f["outcome"]) for f in faults} == {
        (v, k, "healed") for v in ("commit-before", "auto-commit") for k in ("consumer-kill", "consumer-pause")}


def test_java_transactional_members_process_each_acknowledged_value_once_under_a_kill_and_a_pause(tmp_path):
    # consume-transform-produce in the Java client's own transactions (ChaosMember.transact): the batch's output
    # records and its offsets committed together. The member killed mid-transaction leaves it open; its replacement's
    # initTransactions (the slot's transactional.id) aborts it, and the partitions' next owner processes those
    # records again from the committed offsets: the committed output holds each record once (reprocessed 0).
    from tests.integration.test_quickstart import run_dirs
    doc = experiment("java-transactional", "classic")
    doc["consumer"] = {**doc["consumer"], "strategy": "transactional"}
    doc["expectations"] = {"java": {"skipped": 0, "unconsumed": 0, "reprocessed": 0}}
    r, summary, faults = run(tmp_path, doc)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]  # the verdict: pass, expectations held
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    v = summary["variants"]["java"]
    assert v["consumer"]["client"] == f"kafka-clients {java_version()}" and v["consumer"]["strategy"] == "transactional"
    assert (v["skipped"], v["unconsumed"], v["reprocessed"], v["lost"]) == (0, 0, 0, 0), v
    assert {(f["kind"], f["outcome"]) for f in faults} == {("consumer-kill", "healed"), ("consumer-pause", "healed")}
    # the committed output, read back as the group's processed rows, holds every acknowledged value; the rows are
    # the Java members' (named in the output records' keys)
    processed = set(sink(run_dir, "SELECT partition, value FROM processed WHERE value IS NOT NULL"))
    acked = acked_values(run_dir)
    assert len(acked) == 24000 and acked <= processed, sorted(acked - processed)[:10]
    members = {m for (m,) in sink(run_dir, "SELECT DISTINCT member FROM processed")}
    assert members and members <= {"m0.0", "m1.0", "m2.0", "m0.1", "m1.1", "m2.1"}, members


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_idempotent_sink_members_process_each_acknowledged_value_once_under_a_kill_and_a_pause(tmp_path,
                                                                                                     protocol):
    # No Kafka commit: each batch's output (upserted by value), its rows and its next offsets in one transaction of
    # the sink, which the member's relay applies (ChaosMember.idempotent, the `b` lines); on each assignment the
    # member asks the sink for the offsets it stored (`q`) and seeks there. The member killed mid-batch either said
    # its whole batch (applied) or not (never applied); its partitions' next owners go on from the stored offsets:
    # no record is processed twice (reprocessed 0).
    from tests.integration.test_quickstart import run_dirs
    doc = experiment(f"java-idempotent-sink-{protocol}", protocol)
    doc["consumer"] = {**doc["consumer"], "strategy": "idempotent-sink"}
    # The kill later than the others' (9 s): an idempotent-sink kill does not wait for a member mid-batch, and at 9 s
    # (00:30, consumer) it took a member that had not joined yet, so no partition moved with stored offsets. At 13 s
    # each member is in the middle of its first partition (~8 s each at 2 ms a record).
    doc["faults"] = [{**doc["faults"][0], "at": 13.0}, doc["faults"][1]]
    doc["expectations"] = {"java": {"skipped": 0, "unconsumed": 0, "reprocessed": 0}}
    r, summary, faults = run(tmp_path, doc)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]  # the verdict: pass, expectations held
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    v = summary["variants"]["java"]
    assert v["consumer"]["client"] == f"kafka-clients {java_version()}", v["consumer"]
    assert v["consumer"]["strategy"] == "idempotent-sink" and v["consumer"]["group.protocol"] == protocol
    assert (v["skipped"], v["unconsumed"], v["reprocessed"], v["lost"]) == (0, 0, 0, 0), v
    assert {(f["kind"], f["outcome"]) for f in faults} == {("consumer-kill", "healed"), ("consumer-pause", "healed")}
    events = dict(sink(run_dir, "SELECT event, count(*) FROM events GROUP BY event"))
    assert (events.get("killed"), events.get("replaced"), events.get("paused"), events.get("resumed")) == (1, 1, 1, 1)
    # Every row atomic, by the Java members; each record processed once, every acknowledged value among them
    assert sink(run_dir, "SELECT DISTINCT committed FROM processed") == [("atomic",)]
    members = {m for (m,) in sink(run_dir, "SELECT DISTINCT member FROM processed")}
    assert members and members <= {"m0.0", "m1.0", "m2.0", "m0.1", "m1.1", "m2.1"}, members
    assert sink(run_dir, "SELECT count(*), count(DISTINCT partition || ':' || offset) FROM processed") == [
        (24000, 24000)]
    acked = acked_values(run_dir)
    assert len(acked) == 24000
    # The output: each (partition, value) once (its key), every acknowledged one, at the offset processed
    output = sink(run_dir, "SELECT partition, value, offset FROM records")
    assert len(output) == 24000 and {(p, value) for p, value, _ in output} == acked
    assert set(output) == set(sink(run_dir, "SELECT partition, value, offset FROM processed"))
    assert sink(run_dir, "SELECT sum(next_offset) FROM offsets") == [(24000,)]  # each partition's end stored
    # The partitions the killed member held went to their next owner (its first assignment of each after the kill)
    # at the next offsets the sink stored (the assign event's detail: what it sought to), where any was stored.
    [(killed, killed_at)] = sink(run_dir, "SELECT member, at FROM events WHERE event = 'killed'")
    held = set()
    for event, partitions in sink(run_dir, f"SELECT event, partitions FROM events WHERE member = '{killed}' "
                                           f"AND event IN ('assign', 'revoke', 'lost') AND at < {killed_at}"):
        held = held | set(json.loads(partitions)) if event == "assign" else held - set(json.loads(partitions))
    stored = dict(sink(run_dir, f"SELECT partition, max(offset) + 1 FROM processed WHERE processed_at < {killed_at} "
                                f"GROUP BY partition"))
    after = [(set(json.loads(partitions)), json.loads(detail or "{}")) for partitions, detail in sink(
        run_dir, f"SELECT partitions, detail FROM events WHERE event = 'assign' AND at > {killed_at} ORDER BY at")]
    for p in held & set(stored):
        sought = next(detail for partitions, detail in after if p in partitions)
        assert sought.get(str(p)) == stored[p], (p, stored[p], after)


@pytest.mark.nightly  # beside the test above: the same group under a longer pause, ~1 minute a protocol
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_idempotent_sink_members_fence_a_paused_members_batch_once_the_group_moved_on(tmp_path, protocol):
    # A pause past the session (10 s against 6 s): the group gives the frozen member's partitions to the others, which
    # seek to the offsets the sink stored and process on; the member resumes with its batch in hand (a zombie) and
    # says it: where a new owner processed past its first record the sink fences it (the member seeks there), else it
    # is applied and the new owner's batch that started at the same offset is fenced. Nothing is processed twice.
    # (Runs of 00:44: classic fenced two of the zombie's batches; consumer none, the partition's new owner still busy
    # with another, so the zombie's batch was applied and the partition came back to it at the stored offset after it.)
    from tests.integration.test_quickstart import run_dirs
    doc = experiment(f"java-idempotent-sink-zombie-{protocol}", protocol)
    doc["consumer"] = {**doc["consumer"], "strategy": "idempotent-sink"}
    doc["faults"] = [{"kind": "consumer-pause", "at": 13.0, "duration": 10.0}]
    doc["expectations"] = {"java": {"skipped": 0, "unconsumed": 0, "reprocessed": 0}}
    r, summary, faults = run(tmp_path, doc)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    v = summary["variants"]["java"]
    assert (v["skipped"], v["unconsumed"], v["reprocessed"], v["lost"]) == (0, 0, 0, 0), v
    assert {(f["kind"], f["outcome"]) for f in faults} == {("consumer-pause", "healed")}
    # The group moved on without the frozen member: its partitions went to the others
    [(paused, paused_at)] = sink(run_dir, "SELECT member, at FROM events WHERE event = 'paused'")
    [(resumed_at,)] = sink(run_dir, "SELECT at FROM events WHERE event = 'resumed'")
    moved = sink(run_dir, f"SELECT member FROM events WHERE event = 'assign' AND partitions != '[]' "
                          f"AND at > {paused_at} AND at < {resumed_at}")
    assert moved and paused not in {m for (m,) in moved}, moved
    # Nothing is fenced before the zombie resumed: then its batch, or the batch of its partition's new owner that
    # started where the zombie's did (00:48, consumer: the zombie's batch applied, the new owner's fenced)
    fenced = sink(run_dir, "SELECT member, at FROM events WHERE event = 'fenced'")
    assert all(at > resumed_at for _, at in fenced), (paused, resumed_at, fenced)
    assert sink(run_dir, "SELECT count(*), count(DISTINCT partition || ':' || offset) FROM processed") == [
        (24000, 24000)]
    assert sink(run_dir, "SELECT count(*) FROM records") == [(24000,)]


def test_a_java_members_transaction_ends_the_member_only_on_the_errors_kafkaproducer_calls_fatal():
    # KafkaProducer's documentation: fenced, out of order and not authorized end the producer; any other
    # KafkaException aborts the transaction. InvalidProducerEpochException (a retried produce carrying the epoch an
    # earlier transaction's end bumped) is one the client holds as abortable: it ended the member until an
    # exploration of kafka-java-consumers.yaml met it after lost requests (the try lost as an error, exit 4).
    import os
    import shutil
    import subprocess
    from pathlib import Path

    from harness.workload.foreignenv import java_classes

    libs = Path(os.environ["KAFKA_HOME"]) / "libs"
    errors = "org.apache.kafka.common.errors."
    classes = {"ProducerFencedException": "ends", "OutOfOrderSequenceException": "ends",
               "TransactionalIdAuthorizationException": "ends", "TimeoutException": "ends",
               "UnsupportedVersionException": "ends", "InvalidProducerEpochException": "aborts",
               "InvalidTxnStateException": "aborts", "NotEnoughReplicasException": "aborts",
               "CoordinatorNotAvailableException": "aborts"}
    java = shutil.which("java")
    done = subprocess.run([java, "-cp", f"{java_classes(java, libs)}:{libs}/*", "ChaosMember", "--ends",
                           *(errors + name for name in classes)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    said = dict(line.rsplit(" ", 1) for line in done.stderr.splitlines() if line.startswith(errors))
    assert said == {errors + name: does for name, does in classes.items()}
