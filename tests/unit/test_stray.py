"""The stray-produce fault's request (faults/kinds/stray_produce.py): its encoding, checked field by field against Kafka's
formats, and what it journals from the leader's answers (a fake broker on loopback)."""

import socket
import struct
import threading

import pytest

from harness.faults.kinds import stray_produce as stray
from harness.faults.kind import LeaderTarget
from harness.spec import SpecError, load_spec
from tests.unit.test_spec import BASE, error_of, write


def test_crc32c_is_castagnoli():
    assert stray.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720, B.4)
    assert stray.crc32c(b"") == 0


@pytest.mark.parametrize("n, encoded", [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"),
                                        (64, "8001"), (300, "d804")])
def test_varints_are_zigzag(n, encoded):
    assert stray._varint(n).hex() == encoded


def test_record_batch_carries_the_producer_its_sequence_and_the_transactional_flag():
    values = [b"stray-5", b"stray-6"]
    batch = stray.record_batch(1000, 3, 5, values, 1_700_000_000_000)
    base_offset, length, leader_epoch, magic, crc = struct.unpack_from(">qiibI", batch)
    assert (base_offset, length, leader_epoch, magic) == (0, len(batch) - 12, -1, 2)
    after_crc = batch[21:]
    assert crc == stray.crc32c(after_crc)
    attributes, last_delta, first_ts, max_ts, pid, epoch, seq, count = struct.unpack_from(">hiqqqhii", after_crc)
    assert (attributes & 0x10, last_delta, pid, epoch, seq, count) == (0x10, 1, 1000, 3, 5, 2)
    assert first_ts == max_ts == 1_700_000_000_000
    records = after_crc[struct.calcsize(">hiqqqhii"):]
    # each record: length, attributes 0, timestamp delta 0, offset delta i, key null (-1), value, no headers
    first = stray._varint(0) + stray._varint(0) + stray._varint(-1) + stray._varint(7) + b"stray-5" + stray._varint(0)
    assert records.startswith(stray._varint(len(first) + 1) + b"\x00" + first)
    assert records.endswith(b"stray-6" + stray._varint(0))


def test_produce_request_frame():
    frame = stray.produce_request(7, "kc-stray-t", "t", 2, b"BATCH")
    size, api_key, version, corr = struct.unpack_from(">ihhi", frame)
    assert (size, api_key, version, corr) == (len(frame) - 4, 0, 3, 7)
    rest = frame[12:]
    client_id = b"kafka-chaos-stray"
    txn = b"kc-stray-t"
    assert rest == (struct.pack(">h", len(client_id)) + client_id + struct.pack(">h", len(txn)) + txn
                    + struct.pack(">hi", -1, 30000) + struct.pack(">ih", 1, 1) + b"t"
                    + struct.pack(">iii", 1, 2, 5) + b"BATCH")


def answer(corr: int, error: int, offset: int) -> bytes:
    body = (struct.pack(">ii", corr, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", 1)
            + struct.pack(">ihqq", 0, error, offset, -1) + struct.pack(">i", 0))
    return struct.pack(">i", len(body)) + body


def test_produce_answer_reads_the_partitions_error_and_offset():
    assert stray.produce_answer(answer(1, 0, 417)[4:]) == (0, 417)
    assert stray.produce_answer(answer(1, 48, -1)[4:]) == (48, -1)


class FakeLeader:
    """Answers each Produce it is sent with the next of `errors` (offset 417 when the error is 0)."""

    def __init__(self, errors):
        self.errors = list(errors)
        self.requests = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        for error in self.errors:
            conn, _ = self.server.accept()
            with conn:
                size = struct.unpack(">i", stray._read(conn, 4))[0]
                frame = stray._read(conn, size)
                self.requests.append(frame)
                conn.sendall(answer(struct.unpack_from(">i", frame, 4)[0], error, 417 if error == 0 else -1))


@pytest.fixture
def aborted(monkeypatch, tmp_path):
    """No cluster: the stray producer's own transaction is said to have given producer 1000, epoch 3."""
    monkeypatch.setattr(stray, "_aborted_transaction", lambda client, tid, topic, partition, records: (1000, 3))
    monkeypatch.setattr(stray, "RETRY_AFTER", 0)
    return tmp_path / "stray.log"


def test_a_written_stray_batch_is_journaled_with_its_offset(aborted):
    leader = FakeLeader([0])
    effect = stray.stray_produce({}, leader.address, "t", 0, 5, aborted)
    assert effect["answers"] == ["NONE"] and effect["offset"] == 417
    assert (effect["producer_id"], effect["epoch"], effect["sequence"]) == (1000, 3, 5)
    assert effect["transactional_id"] == "kc-stray-t" and isinstance(effect["took_effect"], float)
    [request] = leader.requests
    assert b"kc-stray-t" in request and b"stray-5" in request and b"stray-9" in request and b"stray-4" not in request


def test_retriable_answers_send_the_same_batch_again_until_a_final_one(aborted):
    leader = FakeLeader([19, 51, 48])  # NOT_ENOUGH_REPLICAS, CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE
    effect = stray.stray_produce({}, leader.address, "t", 0, 5, aborted)
    assert effect["answers"] == ["NOT_ENOUGH_REPLICAS", "CONCURRENT_TRANSACTIONS", "INVALID_TXN_STATE"]
    assert "offset" not in effect
    assert len({r[8:] for r in leader.requests}) == 1  # the same request but for its correlation id


def test_attempts_are_bounded(aborted, monkeypatch):
    monkeypatch.setattr(stray, "ATTEMPTS", 3)
    leader = FakeLeader([19] * 3)
    assert stray.stray_produce({}, leader.address, "t", 0, 5, aborted)["answers"] == ["NOT_ENOUGH_REPLICAS"] * 3


def test_the_stray_fault_targets_its_partitions_leader(tmp_path):
    doc = {**BASE, "faults": [{"kind": "stray-produce", "at": 0.5, "partition": 2}]}
    [fault] = load_spec(write(tmp_path, doc)).faults
    assert fault.target == LeaderTarget(leader_of=2) and fault.records == 5
    same = {**BASE, "faults": [{"kind": "stray-produce", "at": 0.5, "partition": 2, "target": {"leader-of": 2}}]}
    assert load_spec(write(tmp_path, same)).faults[0].target == LeaderTarget(leader_of=2)
    other = {**BASE, "faults": [{"kind": "stray-produce", "at": 0.5, "partition": 2, "target": {"broker": 0}}]}
    assert "leave target out (it is {leader-of: 2})" in error_of(tmp_path, other)
    assert "partition" in error_of(tmp_path, {**BASE, "faults": [{"kind": "stray-produce", "at": 5}]})
    with pytest.raises(SpecError):
        load_spec(write(tmp_path, {**BASE, "faults": [{"kind": "stray-produce", "at": 0.5, "partition": 0,
                                                        "records": 0}]}))
