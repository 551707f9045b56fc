"""A stored run's anomalies counted again by the test oracle (tests/reference.py) from the run folder's own files.

What a real cluster does under faults varies from run to run (an unclean election may truncate 0 or 683 acknowledged
writes); what must not vary is that the harness names what happened. A real-cluster test compares the harness's
counts with this recount of the same files, instead of asserting what Kafka did.
"""

import json
from pathlib import Path

import pandas as pd

from tests.reference import reference

NAMED = ("lost", "unseen", "inconsistent_offsets", "truncated_acks", "base_offset_minus_one", "duplicates",
         "unexpected", "rejected_visible", "deleted_before_read", "received", "unique")


def recount(run_dir: Path, variant: str) -> dict:
    """The oracle's metrics of one non-transactional variant, from acks.parquet, log.parquet and read.json."""
    vdir = run_dir / variant
    log = pd.read_parquet(vdir / "log.parquet")
    epochs = log["leader_epoch"] if "leader_epoch" in log else pd.Series([None] * len(log))
    log_rows = [(int(p), int(o), None if pd.isna(v) else int(v), None if pd.isna(e) else int(e))
                for p, o, v, e in zip(log["partition"], log["offset"], log["value"], epochs)]
    acks = pd.read_parquet(vdir / "acks.parquet")
    sessions = acks["session"] if "session" in acks else pd.Series([0] * len(acks))
    ack_rows = [(int(p), int(v), str(out), None if pd.isna(o) else int(o), int(s))
                for p, v, out, o, s in zip(acks["partition"], acks["value"], acks["outcome"], acks["offset"],
                                           sessions)]
    read = json.loads((vdir / "read.json").read_text())
    reads = dict(enumerate(zip(read["start"], read["end"]))) if read["complete"] else None
    return reference(log_rows, ack_rows, reads)["metrics"]


def miscounted(run_dir: Path, summary: dict, variant: str) -> dict:
    """{metric: (the harness's count, the oracle's)} wherever they differ; {} when the harness named it all."""
    want = recount(run_dir, variant)
    got = summary["variants"][variant]
    return {k: (got[k], want.get(k, 0)) for k in NAMED if got[k] != want.get(k, 0)}
