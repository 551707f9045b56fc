"""lose-unflushed's log cutting (cluster/segments.py) on a segment Kafka 4.1.0 wrote: 11 records an idempotent
producer sent in 4 batches of 3, 1, 5 and 2 (offsets 0-2, 3, 4-8, 9-10), captured from a local broker."""

import shutil
from pathlib import Path

import pytest

from harness.cluster.segments import CHECKPOINT, batches, cut_position, cut_unflushed, recovery_points

SEGMENT = Path(__file__).parents[1] / "data" / "kafka-4.1.0" / "segment-4-batches.log"
NAME = "00000000000000000000.log"


def test_the_batches_kafka_wrote_are_read_with_their_offsets_and_sizes():
    found = batches(SEGMENT.read_bytes())
    assert [(b.base_offset, b.last_offset, b.records) for b in found] == [(0, 2, 3), (3, 3, 1), (4, 8, 5), (9, 10, 2)]
    assert found[0].position == 0
    assert all(a.position + a.size == b.position for a, b in zip(found, found[1:]))  # back to back
    assert found[-1].position + found[-1].size == SEGMENT.stat().st_size


def test_a_torn_tail_is_no_batch():
    data = SEGMENT.read_bytes()
    assert len(batches(data[:-1])) == 3  # the last batch lacks a byte
    assert len(batches(data[:40])) == 0  # not even a whole header
    assert batches(b"") == []


def test_an_old_message_format_is_refused_not_misread():
    data = bytearray(SEGMENT.read_bytes())
    data[16] = 1  # magic 1 (Kafka before 0.11)
    with pytest.raises(ValueError, match="magic 1"):
        batches(bytes(data))


def test_the_cut_keeps_whole_batches_below_the_flushed_offset_or_drops_the_last_k():
    found = batches(SEGMENT.read_bytes())
    assert cut_position(found, flushed=0, drop_batches=None) == 0
    assert cut_position(found, flushed=4, drop_batches=None) == found[2].position  # batches 0-2 and 3 kept
    assert cut_position(found, flushed=6, drop_batches=None) == found[2].position  # 4-8 is not wholly flushed
    assert cut_position(found, flushed=11, drop_batches=None) == SEGMENT.stat().st_size  # all flushed
    assert cut_position(found, flushed=0, drop_batches=1) == found[3].position
    assert cut_position(found, flushed=0, drop_batches=9) == 0


def test_the_checkpoint_file_is_read_and_a_foreign_one_refused():
    text = "0\n3\nkc-a-1 0 4\nkc-a-1 1 0\n__consumer_offsets 7 12\n"
    assert recovery_points(text) == {("kc-a-1", 0): 4, ("kc-a-1", 1): 0, ("__consumer_offsets", 7): 12}
    with pytest.raises(ValueError):
        recovery_points("1\n0\n")


def _log_dir(tmp_path, checkpoint=None):
    for folder in ("kc-a-1-0", "kc-a-1-1", "__consumer_offsets-0", "kc-b-1-0"):
        (tmp_path / folder).mkdir()
        shutil.copy(SEGMENT, tmp_path / folder / NAME)
    if checkpoint is not None:
        (tmp_path / CHECKPOINT).write_text(checkpoint)
    return tmp_path


def test_only_the_topics_partitions_are_cut_back_to_their_recovery_points_and_journaled(tmp_path):
    log_dir = _log_dir(tmp_path, "0\n1\nkc-a-1 1 4\n")
    cuts = cut_unflushed(log_dir, "kc-a-1")
    size = SEGMENT.stat().st_size
    assert cuts == [
        {"topic": "kc-a-1", "partition": 0, "segment": NAME, "cut_bytes": size, "cut_batches": 4, "cut_records": 11,
         "recovery_point": 0, "first_offset": 0, "last_offset": 10},
        {"topic": "kc-a-1", "partition": 1, "segment": NAME, "cut_bytes": size - 154, "cut_batches": 2,
         "cut_records": 7, "recovery_point": 4, "first_offset": 4, "last_offset": 10},
    ]
    assert (log_dir / "kc-a-1-0" / NAME).stat().st_size == 0
    assert [b.last_offset for b in batches((log_dir / "kc-a-1-1" / NAME).read_bytes())] == [2, 3]
    for untouched in ("__consumer_offsets-0", "kc-b-1-0"):  # internal topics, other variants' topics
        assert (log_dir / untouched / NAME).read_bytes() == SEGMENT.read_bytes()


def test_drop_batches_cuts_the_active_segment_only_and_a_flushed_partition_loses_nothing(tmp_path):
    log_dir = _log_dir(tmp_path, "0\n2\nkc-a-1 0 11\nkc-a-1 1 11\n")
    (log_dir / "kc-a-1-0" / "00000000000000000011.log").write_bytes(SEGMENT.read_bytes())  # the active one
    cuts = cut_unflushed(log_dir, "kc-a-1", drop_batches=2)
    assert [(c["partition"], c["segment"], c["cut_batches"], c["first_offset"]) for c in cuts] == [
        (0, "00000000000000000011.log", 2, 4), (1, NAME, 2, 4)]
    assert (log_dir / "kc-a-1-0" / NAME).read_bytes() == SEGMENT.read_bytes()  # rolled: flushed, kept
    (tmp_path / "again").mkdir()
    flushed = cut_unflushed(_log_dir(tmp_path / "again", "0\n1\nkc-a-1 0 11\n"), "kc-a-1")
    assert flushed[0] == {"topic": "kc-a-1", "partition": 0, "segment": NAME, "cut_bytes": 0, "cut_batches": 0,
                          "cut_records": 0, "recovery_point": 11}


def test_a_checkpoint_a_kill_left_empty_is_needed_only_to_cut_back_to_the_recovery_point(tmp_path):
    # Seen on Kafka 4.1.0: a follower SIGKILLed as a run's cluster stopped left recovery-point-offset-checkpoint empty.
    log_dir = _log_dir(tmp_path, "")
    [cut] = [c for c in cut_unflushed(log_dir, "kc-a-1", drop_batches=1) if c["partition"] == 0]
    assert (cut["cut_batches"], cut["first_offset"], cut["recovery_point"]) == (1, 9, None)
    with pytest.raises(ValueError, match="not an offset checkpoint"):
        cut_unflushed(log_dir, "kc-a-1")
