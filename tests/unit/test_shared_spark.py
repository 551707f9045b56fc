"""SharedSpark: one Spark session for a series' runs, a fresh one after a run that did not complete (no JVM:
the starter is a fake)."""

from harness.engine import session as module


class FakeStarter:
    started: list["FakeStarter"] = []

    def __init__(self, master=None, log=None):
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


def test_pyspark_is_imported_before_the_starter_thread_runs():
    """The cause of shrink's `ImportError: cannot import name 'SQLContext' from partially initialized module
    'pyspark.sql'`: the starter's thread and the run's imported pyspark.sql at once. A fresh interpreter (nothing
    imported yet) checks that, when the starter's thread begins, pyspark.sql and the final read's module are
    already wholly imported by the thread that made the starter."""
    import subprocess
    import sys

    probe = (
        "import sys, threading\n"
        "from harness.engine import session as m\n"
        "assert 'pyspark.sql' not in sys.modules\n"
        "seen = {}\n"
        "def fake(master, log=None):\n"
        "    seen['modules'] = {n: getattr(sys.modules.get(n), '__spec__', None) is not None and\n"
        "                       not getattr(getattr(sys.modules.get(n), '__spec__', None), '_initializing', False)\n"
        "                       for n in ('pyspark.sql', 'harness.engine.readback')}\n"
        "m.spark_session = fake\n"
        "s = m.SparkStarter('local[1]')\n"
        "s._future.result(); s._pool.shutdown()\n"
        "print(seen['modules'])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{'pyspark.sql': True, 'harness.engine.readback': True}", out.stdout
