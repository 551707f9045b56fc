"""lso_stall: how long an open transaction held read_committed readers back after the workload, on a fake clock
(each look at the watermarks advances it; the sleep between looks too)."""

import pytest

from harness.workload import readback


class Broker:
    """Watermarks whose last stable offset on partition 1 reaches the high watermark only at `catch_up_at` s."""

    def __init__(self, catch_up_at):
        self.now, self.catch_up_at = 100.0, catch_up_at

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.now += s

    def watermarks(self, client, topic, partitions, isolation):
        hw = [(0, 50), (0, 80)]
        if isolation == "read_committed" and self.now - 100.0 < self.catch_up_at:
            return [(0, 50), (0, 60)]  # an open transaction from offset 60 on partition 1
        return hw


@pytest.fixture
def broker(monkeypatch):
    def make(catch_up_at):
        b = Broker(catch_up_at)
        monkeypatch.setattr(readback, "watermarks", b.watermarks)
        monkeypatch.setattr(readback.time, "monotonic", b.monotonic)
        monkeypatch.setattr(readback.time, "sleep", b.sleep)
        return b
    return make


def test_no_stall_when_every_partition_is_stable_at_the_first_look(broker):
    broker(catch_up_at=0)
    assert readback.lso_stall({}, "t", 2) == (0.0, {})


def test_a_transaction_that_ends_late_stalls_for_as_long_as_it_stayed_open(broker):
    broker(catch_up_at=3.2)
    stall, behind = readback.lso_stall({}, "t", 2, wait=15)
    assert 3.2 <= stall <= 3.2 + readback.LOOK and behind == {}  # known to within one look


def test_a_hanging_transaction_is_still_behind_when_the_wait_ends(broker):
    broker(catch_up_at=1e9)
    stall, behind = readback.lso_stall({}, "t", 2, wait=15)
    assert 15.0 <= stall <= 15.0 + readback.LOOK and behind == {1: (60, 80)}
