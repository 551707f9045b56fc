"""SharedSpark: one Spark session for a series' runs, a fresh one after a run that did not complete (no JVM:
the starter is a fake)."""

from harness.analysis import spark as module


class FakeStarter:
    started: list["FakeStarter"] = []

    def __init__(self, master=None):
        self.master, self.stopped = master, None
        FakeStarter.started.append(self)

    def get(self):
        return self

    def stop(self, keep_classes=True):
        self.stopped = keep_classes


def test_runs_share_one_session_until_one_is_discarded(monkeypatch):
    monkeypatch.setattr(module, "SparkStarter", FakeStarter)
    FakeStarter.started = []
    shared = module.SharedSpark("local[2]")
    first = shared.get()
    assert shared.get() is first and len(FakeStarter.started) == 1  # started once, at construction
    shared.discard()  # a run that did not complete: its session is not reused, and its class cache not kept
    assert first.stopped is False
    second = shared.get()
    assert second is not first and second.master == "local[2]" and len(FakeStarter.started) == 2
    shared.stop()
    assert second.stopped is True
    shared.stop()  # stopping twice (a finally after a discard) does nothing more
    assert len(FakeStarter.started) == 2
