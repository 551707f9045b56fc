"""kafka-chaos: a chaos-testing harness for Kafka delivery guarantees.

    from harness import open_run      # a stored run as pandas DataFrames (see runfolder.py)
"""

__version__ = "0.1.0"


def open_run(path):
    """A stored run folder: .spec, .summary, .faults, .log(v), .acks(v), .anomalies(v, table)."""
    from .runfolder import open_run as _open_run

    return _open_run(path)
