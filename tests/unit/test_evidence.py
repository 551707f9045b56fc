"""`kafka-chaos evidence`: the parser of kafka-dump-log.sh's output (cluster/dumplog.py), its join with a delivery log
(evidence.join), the choice of variant and partition, and the command's bad input (exit 2, one line each). The tool
itself is a stand-in here (a script printing dump text for each file it is given); tests/kafka runs the real one."""

import json
import os
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness import terminal
from harness.cli import main
from harness.cluster.dumplog import DumpLogError, batch_line, parse, record_line
from harness.cluster.segments import leader_epochs
from harness.evidence import (NOT_KEPT, Replica, choose, join, parse_offsets, segment_files)
from harness.exits import UsageError
from harness.formats import ACKS_SCHEMA
from harness.runfolder import RunFolder

pytestmark = pytest.mark.usefixtures("signal_handlers_restored")

TIME = "CreateTime: 1764250000000"


def batch_text(base: int, values: list, epoch: int, pid: int = 7, pepoch: int = 0, seq: int = 0, position: int = 0,
               transactional: bool = False, control: str | None = None) -> list[str]:
    """A batch and its records as DumpLogSegments prints them (kafka/tools/DumpLogSegments.scala, 3.x and 4.x)."""
    last = base + len(values) - 1
    lines = [f"baseOffset: {base} lastOffset: {last} count: {len(values)} baseSequence: {seq if pid >= 0 else -1} "
             f"lastSequence: {seq + len(values) - 1 if pid >= 0 else -1} producerId: {pid} producerEpoch: {pepoch} "
             f"partitionLeaderEpoch: {epoch} isTransactional: {str(transactional).lower()} isControl: "
             f"{str(control is not None).lower()} deleteHorizonMs: OptionalLong.empty position: {position} {TIME} "
             f"size: 90 magic: 2 compresscodec: none crc: 2045139734 isvalid: true"]
    for i, v in enumerate(values):
        s = seq + i if pid >= 0 and control is None else -1
        sizes = f"keySize: {4 if control else -1} valueSize: {6 if control else len(str(v))}"
        head = f"| offset: {base + i} {TIME} {sizes} sequence: {s} headerKeys: []"
        lines.append(head + (f" endTxnMarker: {control} coordinatorEpoch: 0" if control else f" payload: {v}"))
    return lines


def dump_text(name: str, *batches: list[str], start: int = 0, trailing: int = 0) -> str:
    lines = [f"Dumping {name}", f"Log starting offset: {start}"] + [x for b in batches for x in b]
    if trailing:
        lines.append(f"Found {trailing} invalid bytes at the end of {Path(name).name}")
    return "\n".join(lines) + "\n"


# -- the parser ------------------------------------------------------------------------------------------------------
def test_a_batch_line_gives_every_field_the_evidence_shows():
    [line] = batch_text(340, [1, 2, 3], epoch=5, pid=12, pepoch=3, seq=100, position=4096, transactional=True)[:1]
    b = batch_line(line)
    assert (b.base_offset, b.last_offset, b.leader_epoch, b.producer_id, b.producer_epoch, b.base_sequence,
            b.last_sequence, b.transactional, b.control, b.position) == (340, 342, 5, 12, 3, 100, 102, True, False,
                                                                       4096)


def test_a_record_line_keeps_a_payload_with_spaces_and_a_marker():
    r = record_line(f"| offset: 9 {TIME} keySize: 3 valueSize: 7 sequence: 4 headerKeys: [a,b] key: k 1 "
                    "payload: x y: 1")
    assert (r.offset, r.sequence, r.payload, r.marker) == (9, 4, "x y: 1", None)
    r = record_line(f"| offset: 10 {TIME} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT "
                    "coordinatorEpoch: 0")
    assert (r.offset, r.payload, r.marker) == (10, None, "ABORT")


def test_only_the_batches_and_records_in_the_range_are_kept_and_the_log_end_is_known():
    text = dump_text("node-0/t-0/00000000000000000000.log", batch_text(0, [0, 1, 2], 0),
                     batch_text(3, [3], 0, seq=3), batch_text(4, [4, 5, 6, 7, 8], 1, seq=4),
                     batch_text(9, [9, 10], 1, seq=9), trailing=17)
    [(name, seg)] = parse(text.splitlines(), first=2, last=4).items()
    assert name == "node-0/t-0/00000000000000000000.log" and seg.start == 0 and seg.trailing_bytes == 17
    assert [(b.base_offset, [r.offset for r in b.records]) for b in seg.batches] == [(0, [2]), (3, [3]), (4, [4])]
    assert [b.leader_epoch for b in seg.batches] == [0, 0, 1]
    assert seg.last_offset == 10  # of the last batch, though it was not asked for
    every = parse(text.splitlines())["node-0/t-0/00000000000000000000.log"]
    assert sum(len(b.records) for b in every.batches) == 11


def test_several_files_are_told_apart_by_their_dumping_lines():
    text = dump_text("node-0/t-0/0.log", batch_text(0, [0, 1], 0)) + dump_text("node-1/t-0/0.log",
                                                                              batch_text(0, [0], 0))
    found = parse(text.splitlines())
    assert {k: sum(len(b.records) for b in v.batches) for k, v in found.items()} == {"node-0/t-0/0.log": 2,
                                                                                     "node-1/t-0/0.log": 1}


@pytest.mark.parametrize("lines, error", [
    (["Dumping a.log", "| offset: 0 sequence: 0 payload: 1"], "line 2: a record before any batch"),
    (["Dumping a.log", "baseOffset: x lastOffset: 1"], "line 2: no whole number baseOffset"),
    (["Dumping a.log", batch_text(0, [1], 0)[0].replace("isTransactional: false", "isTransactional: maybe")],
     "line 2: no true or false isTransactional"),
])
def test_output_that_cannot_be_read_is_an_error_naming_the_line(lines, error):
    with pytest.raises(DumpLogError, match=error):
        parse(lines)


def test_the_leader_epoch_checkpoint_is_read():
    assert leader_epochs("0\n2\n0 0\n3 341\n") == [(0, 0), (3, 341)]
    with pytest.raises(ValueError):
        leader_epochs("1\n0\n")


# -- the join --------------------------------------------------------------------------------------------------------
def replica(broker: int, text: str, first: int, last: int) -> Replica:
    [seg] = parse(text.splitlines(), first, last).values()
    return Replica(broker, Path(f"node-{broker}"), batches=seg.batches)


def acks(*rows) -> list[dict]:
    return [dict(zip(("value", "outcome", "offset", "error", "session", "txn"), r)) for r in rows]


def test_each_replica_s_record_is_joined_with_what_the_client_was_told_about_its_value():
    # Broker 0 led under epoch 0 and acknowledged values 4-7 at 4-7; broker 1 was elected (epoch 1) without 6 and 7,
    # and wrote values 8 and 9 there, acknowledged too; broker 2 ends at 5. Value 9 was also sent again (unknown).
    old = dump_text("n0", batch_text(4, [4, 5, 6, 7], 0, seq=4))
    new = dump_text("n1", batch_text(4, [4, 5], 0, seq=4), batch_text(6, [8, 9], 1, seq=8))
    short = dump_text("n2", batch_text(4, [4, 5], 0, seq=4))
    replicas = {0: replica(0, old, 5, 7), 1: replica(1, new, 5, 7), 2: replica(2, short, 5, 7)}
    told = acks((5, "acked", 5, None, 0, None), (6, "acked", 6, None, 0, None), (7, "acked", 7, None, 0, None),
                (8, "acked", 6, None, 0, None), (9, "acked", 7, None, 0, None),
                (9, "unknown", None, "_MSG_TIMED_OUT", 1, None), (3, "acked", 3, None, 0, None))
    at = {row["offset"]: row for row in join(replicas, told, 5, 7)}
    assert list(at) == [5, 6, 7]
    assert at[6]["acked"] == [6, 8]  # two values told the same offset: the truncation
    r0, r1, r2 = (x["record"] for x in at[7]["replicas"])
    assert (r0["value"], r0["leader_epoch"], r0["sequence"], r0["producer_id"]) == (7, 0, 7, 7)
    assert (r1["value"], r1["leader_epoch"], r1["sequence"], r1["batch"]) == (9, 1, 9, [6, 7])
    assert r1["told"] == [{"outcome": "acked", "offset": 7, "error": None, "session": 0, "txn": None},
                          {"outcome": "unknown", "offset": None, "error": "_MSG_TIMED_OUT", "session": 1, "txn": None}]
    assert r2 is None  # broker 2's log ends before 7
    assert [x["record"]["value"] for x in at[5]["replicas"]] == [5, 5, 5]


def test_a_record_that_is_not_the_workload_s_and_a_marker_keep_their_text():
    text = dump_text("n0", batch_text(0, ["hello"], 0, pid=-1), batch_text(1, ["-"], 0, transactional=True,
                                                                           control="COMMIT"))
    [at0, at1] = join({0: replica(0, text, 0, 1)}, [], 0, 1)
    rec = at0["replicas"][0]["record"]
    assert (rec["value"], rec["payload"], rec["producer_id"], rec["sequence"], rec["told"]) == (None, "hello", -1, -1,
                                                                                              [])
    marker = at1["replicas"][0]["record"]
    assert (marker["control"], marker["marker"], marker["transactional"]) == (True, "COMMIT", True)


def test_the_offsets_option(monkeypatch):
    assert parse_offsets("340-345") == (340, 345) and parse_offsets("7") == (7, 7)
    assert parse_offsets(" 1 - 2 ") == (1, 2)
    for bad in ("", "a-b", "5-3", "-3", "1-2-3", "0-20000", "1.5"):
        with pytest.raises(UsageError, match="--offsets"):
            parse_offsets(bad)


def test_only_the_segments_that_may_hold_the_range_are_read(tmp_path):
    for base in (0, 100, 200):
        (tmp_path / f"{base:020d}.log").write_bytes(b"")
    names = lambda a, b: [p.stem.lstrip("0") or "0" for p in segment_files(tmp_path, a, b)]  # noqa: E731
    assert names(0, 5) == ["0"] and names(99, 100) == ["0", "100"] and names(150, 400) == ["100", "200"]
    assert names(250, 260) == ["200"]


# -- a stored run, and the command -----------------------------------------------------------------------------------
def stored_run(tmp_path: Path, variants=("a",), kept: dict | None = None, cluster="local · kafka 4.1.0 × 3") -> Path:
    """A run folder: summary.json, each variant's delivery log, and kafka-data/node-N/<topic>-P/ as `kept` says
    ({broker: [partitions]}, the first variant's topic) with a segment named 0 and a leader-epoch checkpoint."""
    folder = RunFolder.create(tmp_path / "reports", "exp")
    topics = {v: f"kc-{v}-abcdef" for v in variants}
    folder.write_summary({"run_id": folder.run_id, "experiment": "exp", "status": "complete", "verdict": "fail",
                          "cluster": cluster, "variants": {v: {"topic": t} for v, t in topics.items()}})
    for v in variants:
        folder.variant_dir(v).mkdir()
        rows = [{"partition": 0, "value": i, "outcome": "acked", "offset": i, "error": None, "sent_at": None,
                 "latency_ms": 1.0, "session": 0, "txn": None} for i in range(10)]
        pq.write_table(pa.Table.from_pylist(rows, ACKS_SCHEMA), folder.acks_path(v))
    for broker, parts in (kept or {}).items():
        for p in parts:
            d = folder.broker_data(broker) / f"{topics[variants[0]]}-{p}"
            d.mkdir(parents=True)
            (d / "00000000000000000000.log").write_bytes(b"")
            (d / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 6\n")
    return folder.path


def fake_kafka(tmp_path: Path, monkeypatch, texts: dict[int, str]) -> Path:
    """A KAFKA_HOME whose bin/kafka-dump-log.sh prints, for each file of --files, "Dumping <file>" and then the
    batches in texts[broker] (the broker from the file's node-N/ folder)."""
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    for broker, text in texts.items():
        (home / f"node-{broker}.txt").write_text(text)
    tool = home / "bin" / "kafka-dump-log.sh"
    tool.write_text(f"""#!/bin/sh
[ "$1" = --files ] || exit 9
for f in $(echo "$2" | tr , ' '); do
  echo "Dumping $f"; echo "Log starting offset: 0"
  cat {home}/$(echo "$f" | cut -d/ -f1).txt
done
""")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("KAFKA_HOME", str(home))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # the stand-in needs none; the check wants one named
    return home


def batches_only(*batches) -> str:
    return "\n".join(x for b in batches for x in b) + "\n"


def test_the_command_prints_each_replica_and_the_json_holds_the_same(tmp_path, monkeypatch):
    run_dir = stored_run(tmp_path, kept={0: [0], 1: [0], 2: [0]})
    fake_kafka(tmp_path, monkeypatch, {
        0: batches_only(batch_text(0, [0, 1, 2, 3, 4, 5, 6, 7], 0)),
        1: batches_only(batch_text(0, [0, 1, 2, 3, 4, 5], 0), batch_text(6, [40, 41], 1, pid=8, seq=0)),
        2: batches_only(batch_text(0, [0, 1, 2, 3, 4, 5], 0))})
    result = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "5-7", "--json"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.output)
    assert (view["variant"], view["topic"], view["partition"], view["offsets"]) == ("a", "kc-a-abcdef", 0, [5, 7])
    assert [r["leader_epochs"] for r in view["replicas"]] == [[[0, 0], [1, 6]]] * 3
    assert [r["log_end"] for r in view["replicas"]] == [8, 8, 6]
    at7 = view["at"][2]
    assert at7["acked"] == [7]
    assert [(x["record"] or {}).get("value") for x in at7["replicas"]] == [7, 41, None]
    assert at7["replicas"][1]["record"]["leader_epoch"] == 1 and at7["replicas"][1]["record"]["told"] == []
    monkeypatch.setattr(terminal.console, "width", 160)
    table = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "5-7"])
    assert table.exit_code == 0, table.output
    assert "leader epochs (epoch@start offset) 0@0, 1@6 · log end 8" in table.output
    lines = [x for x in table.output.splitlines() if "not sent" in x or "acked here" in x]
    assert any("41" in x and "not sent" in x and "8/0" in x for x in lines), table.output  # producer 8, epoch 0
    assert "absent from its log" in table.output


@pytest.mark.parametrize("args, kept, error", [
    (["--offsets", "1-2"], {}, NOT_KEPT),
    (["--offsets", "x"], {0: [0]}, "--offsets 'x': give a range A-B"),
    (["--offsets", "1", "--variant", "zz"], {0: [0]}, "--variant zz: no such variant in"),
    (["--offsets", "1", "--partition", "3"], {0: [0, 1]}, "--partition 3: no replica holds partition 3 of topic "
                                                          "kc-a-abcdef; kept: 0, 1"),
    (["--offsets", "1"], {0: [0, 1]}, "--partition: topic kc-a-abcdef has partitions 0, 1; name one"),
])
def test_bad_input_is_one_line_naming_the_option_and_exit_2(tmp_path, monkeypatch, args, kept, error):
    run_dir = stored_run(tmp_path, kept=kept)
    fake_kafka(tmp_path, monkeypatch, {0: ""})
    result = CliRunner().invoke(main, ["evidence", str(run_dir), *args])
    assert result.exit_code == 2, result.output
    assert f"error: {error}" in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output


def test_no_run_folder_and_no_kafka_home_are_exit_2(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    result = CliRunner().invoke(main, ["evidence", str(tmp_path), "--offsets", "1"])
    assert result.exit_code == 2 and f"error: {tmp_path}: not a run folder (no summary.json)" in result.output
    run_dir = stored_run(tmp_path, kept={0: [0]})
    result = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "1"])
    assert result.exit_code == 2 and "error: KAFKA_HOME is not set" in result.output, result.output
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path))
    result = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "1"])
    assert result.exit_code == 2 and f"KAFKA_HOME={tmp_path}: no bin/kafka-dump-log.sh" in result.output


def test_a_tool_that_fails_is_exit_3_with_its_last_error_line(tmp_path, monkeypatch):
    run_dir = stored_run(tmp_path, kept={0: [0]})
    home = fake_kafka(tmp_path, monkeypatch, {0: ""})
    (home / "bin" / "kafka-dump-log.sh").write_text("#!/bin/sh\necho 'Exception in thread main: boom' >&2\nexit 1\n")
    result = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "1"])
    assert result.exit_code == 3, result.output
    assert "kafka-dump-log.sh failed (exit status 1): Exception in thread main: boom" in result.output


def test_the_variant_is_chosen_when_only_one_topic_was_kept_and_asked_for_otherwise(tmp_path):
    run_dir = stored_run(tmp_path, variants=("a", "b"), kept={0: [0]})
    assert choose(RunFolder(run_dir), None, None)[:3] == ("a", "kc-a-abcdef", 0)
    assert choose(RunFolder(run_dir), "a", 0)[3] == {0: run_dir / "kafka-data" / "node-0" / "kc-a-abcdef-0"}
    with pytest.raises(UsageError, match="--variant b: no broker kept a log of its topic 'kc-b-abcdef'"):
        choose(RunFolder(run_dir), "b", None)
    other = stored_run(tmp_path / "x", variants=("a", "b"), kept={})
    with pytest.raises(UsageError, match="this run did not keep its brokers' logs; rerun with --keep-data"):
        choose(RunFolder(other), None, None)
    tansu = stored_run(tmp_path / "y", cluster="local · tansu 0.5 × 1")
    with pytest.raises(UsageError, match="only a local Apache Kafka run"):
        choose(RunFolder(tansu), None, None)


def test_a_kept_folder_that_leads_out_of_the_run_is_refused(tmp_path, monkeypatch):
    run_dir = stored_run(tmp_path, kept={})
    elsewhere = tmp_path / "elsewhere" / "node-0"
    elsewhere.mkdir(parents=True)
    os.symlink(elsewhere.parent, run_dir / "kafka-data")
    result = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "1"])
    assert result.exit_code == 3 and "leads out of the folder" in result.output, result.output


def test_a_series_run_is_read_from_its_kept_cluster_beside_it_and_nowhere_else(tmp_path, monkeypatch):
    run_dir = stored_run(tmp_path, kept={})
    cluster = run_dir.parent / "20261127T000000Z-exp-repeat-abcdef" / "cluster-123abc" / "kafka-data"
    part = cluster / "node-1" / "kc-a-abcdef-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"")
    summary = json.loads((run_dir / "summary.json").read_text())
    # as the series wrote it, on another machine: only its last three parts are taken, beside the run
    summary["broker_data"] = {"path": f"/ci/work/reports/{cluster.parent.parent.name}/cluster-123abc/kafka-data",
                              "why": "the verdict is fail"}
    RunFolder(run_dir).write_summary(summary)
    fake_kafka(tmp_path, monkeypatch, {1: batches_only(batch_text(0, [0, 1, 2], 0))})
    result = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "1-2", "--json"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.output)
    assert [r["broker"] for r in view["replicas"]] == [1]
    assert [x["replicas"][0]["record"]["value"] for x in view["at"]] == [1, 2]
    summary["broker_data"]["path"] = "/etc"
    RunFolder(run_dir).write_summary(summary)
    result = CliRunner().invoke(main, ["evidence", str(run_dir), "--offsets", "1-2"])
    assert result.exit_code == 3 and "broker_data.path: '/etc' is not a kept cluster's" in result.output


def test_a_tool_that_ends_after_its_last_line_is_waited_for_and_one_that_hangs_is_killed(tmp_path):
    from harness.cluster.dumplog import dump

    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "kafka-dump-log.sh"
    tool.write_text("#!/bin/sh\necho 'Dumping a.log'\nexec 1>&-\nsleep 0.5\nexit 0\n")  # output closed, then a pause
    tool.chmod(0o755)
    with dump(tmp_path, tmp_path, ["a.log"]) as lines:
        assert list(parse(lines)) == ["a.log"]
    tool.write_text("#!/bin/sh\necho 'Dumping a.log'\nexec sleep 60\n")
    with pytest.raises(DumpLogError, match="took longer than 0.5 s"):
        with dump(tmp_path, tmp_path, ["a.log"], timeout=0.5) as lines:
            parse(lines)


# -- real output -----------------------------------------------------------------------------------------------------
# Kafka 4.1.0's kafka-dump-log.sh --print-data-log --deep-iteration over tests/data/kafka-4.1.0/segment-4-batches.log
# (named 00000000000000000000.log) as "whole/...", then over its first 300 bytes as "torn/..." (a torn last batch).
REAL = Path(__file__).parents[1] / "data" / "kafka-4.1.0" / "dump-log-segment-4-batches.txt"


def test_real_output_gives_every_batch_and_record_of_the_segment():
    found = parse(REAL.read_text().splitlines())
    assert list(found) == ["whole/00000000000000000000.log", "torn/00000000000000000000.log"]
    whole = found["whole/00000000000000000000.log"]
    assert [(b.base_offset, b.last_offset, b.position) for b in whole.batches] == [(0, 2, 0), (3, 3, 85), (4, 8, 154),
                                                                                  (9, 10, 255)]
    assert {(b.producer_id, b.producer_epoch, b.leader_epoch, b.transactional, b.control) for b in whole.batches} == {
        (0, 0, 0, False, False)}
    records = [r for b in whole.batches for r in b.records]
    assert [(r.offset, r.sequence, r.payload) for r in records] == [(i, i, str(i)) for i in range(11)]
    assert whole.start == 0 and whole.trailing_bytes == 0 and whole.last_offset == 10


def test_real_output_of_a_torn_segment_names_the_bytes_after_its_last_whole_batch():
    torn = parse(REAL.read_text().splitlines(), first=8, last=20)["torn/00000000000000000000.log"]
    assert [(b.base_offset, [r.offset for r in b.records]) for b in torn.batches] == [(4, [8])]
    assert torn.trailing_bytes == 45 and torn.last_offset == 8  # 300 bytes: the batch at 255 lacks 33 of its 78


def test_real_output_joined_with_a_delivery_log():
    segments = parse(REAL.read_text().splitlines(), first=7, last=10)
    replicas = {b: Replica(b, Path(name), batches=seg.batches) for b, (name, seg) in enumerate(segments.items())}
    told = acks(*((v, "acked", v, None, 0, None) for v in range(11)))
    at = join(replicas, told, 7, 10)
    assert [[(x["record"] or {}).get("value") for x in row["replicas"]] for row in at] == [[7, 7], [8, 8], [9, None],
                                                                                         [10, None]]
    assert all(row["acked"] == [row["offset"]] for row in at)
    assert at[3]["replicas"][0]["record"]["told"] == [{"outcome": "acked", "offset": 10, "error": None, "session": 0,
                                                       "txn": None}]


# An excerpt of Kafka 4.1.0's dump of a partition that lose-unflushed cut on a 1-node run (tests/kafka/test_evidence.py,
# acks=1, no idempotence): its header, then the last batch of leader epoch 0 and the first batch written at the cut
# offsets after the restart, under leader epoch 2.
TRUNCATED = Path(__file__).parents[1] / "data" / "kafka-4.1.0" / "dump-log-truncated-excerpt.txt"


def test_real_output_of_a_truncated_partition_shows_the_new_epoch_at_the_cut_offsets():
    [seg] = parse(TRUNCATED.read_text().splitlines()).values()
    assert [(b.base_offset, b.last_offset, b.leader_epoch, b.producer_id, b.base_sequence) for b in seg.batches] == [
        (1944, 1963, 0, -1, -1), (1964, 1983, 2, -1, -1)]
    assert [r.payload for r in seg.batches[1].records][:2] == ["2048", "2049"]
    # values 1964-1983 were acknowledged at 1964-1983 before the cut; 2048-2067 there after it
    told = acks(*((v, "acked", v, None, 0, None) for v in range(1944, 1984)),
                *((v, "acked", v - 84, None, 0, None) for v in range(2048, 2068)))
    at = {row["offset"]: row for row in join({0: Replica(0, Path("node-0"), batches=seg.batches)}, told, 1963, 1964)}
    assert at[1963]["acked"] == [1963] and at[1963]["replicas"][0]["record"]["leader_epoch"] == 0
    rec = at[1964]["replicas"][0]["record"]
    assert at[1964]["acked"] == [1964, 2048] and (rec["value"], rec["leader_epoch"], rec["sequence"]) == (2048, 2, -1)
