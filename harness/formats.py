"""The run folder's file formats, each defined once: the delivery log (acks.parquet), the final read
(log.parquet/), the transactions log (transactions.parquet), the outcome words they use, and the
guard every JSON line read back goes through (faults.jsonl, read.json, a replayed schedule).

Writers (workload/deliverylog.py, workload/transactional.py, engine/readback.py) write these schemas;
readers (engine/partitions.py, engine/folder.py, runfolder.StoredRun) take their columns from here.
Where each file lives is runfolder.py's business. A faults.jsonl line is the plan (schedule.py,
PlannedFault.to_json) and then what the nemesis journaled (nemesis.py: a FaultOutcome, times).
"""

from __future__ import annotations

import enum
import json
import math

import pyarrow as pa


class Outcome(enum.StrEnum):
    """What became of one send, as the delivery log stores it (workload/outcomes.py decides it)."""

    ACKED = "acked"  # the broker said written, at the offset in the row
    REJECTED = "rejected"  # the client or broker said not written
    UNKNOWN = "unknown"  # nobody knows: timed out, connection lost, purged

    @property
    def code(self) -> int:
        """The analysis's small integer for it: 1, 2, 3 (0 stands for a value never sent)."""
        return _CODES[self]


_CODES = {o: i for i, o in enumerate(Outcome, 1)}


class TxnOutcome(enum.StrEnum):
    """What became of one transaction, as the transactions log stores it."""

    COMMITTED = "committed"
    ABORTED = "aborted"
    UNKNOWN = "unknown"  # the commit was asked and never answered


class TxnCause(enum.StrEnum):
    """Why a transaction was not committed (null in the log when it was)."""

    PLANNED = "planned"  # the workload aborts it on purpose (abort_ratio)
    RESTART = "restart"  # a producer restart (a workload fault) ended it
    FENCED = "fenced"  # a newer instance of the same transactional.id fenced it
    ERROR = "error"  # commit or abort failed
    INTERRUPTED = "interrupted"  # the run was stopped in the middle


class FaultOutcome(enum.StrEnum):
    """What became of one planned fault, as faults.jsonl's `outcome` says (nemesis.py writes it)."""

    APPLIED = "applied"  # applied, not (yet) healed
    HEALED = "healed"
    NOT_REACHED = "not-reached"  # due after the workload ended, or its target never came back
    FAILED = "failed"  # applying or healing it raised; the error says what


_UTC_MS = pa.timestamp("ms", tz="UTC")

# acks.parquet: one row per send (every resend of a restarted producer too).
ACKS_SCHEMA = pa.schema([
    ("partition", pa.int32()),
    ("value", pa.int64()),
    ("outcome", pa.string()),  # an Outcome
    ("offset", pa.int64()),  # null unless acked
    ("error", pa.string()),  # librdkafka's error name, null when acked
    ("sent_at", _UTC_MS),  # handed to the client (to within one chunk of sends)
    ("latency_ms", pa.float64()),  # produce() to delivery report, as librdkafka measured it
    ("session", pa.int32()),  # the producer instance that sent it: 0, 1, 2, ... (one more at each restart)
    ("txn", pa.int64()),  # its transaction (transactional variants), null otherwise
])

# log.parquet/ (and log_read_uncommitted.parquet/): the topic as read back, one row per record.
LOG_SCHEMA = pa.schema([
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("value", pa.int64()),  # null: not a canonical decimal, so not the workload's record
    ("timestamp", pa.timestamp("us", tz="UTC")),
    # The partition leader epoch the record's batch was written under (Kafka's batch header): null when the
    # broker or the client does not say. A later epoch at an acknowledged offset tells a truncated ack.
    ("leader_epoch", pa.int32()),
])

# transactions.parquet: one row per transaction.
TRANSACTIONS_SCHEMA = pa.schema([
    ("txn", pa.int64()),  # 0, 1, 2, ... across the sessions of the variant
    ("session", pa.int32()),  # the producer instance that ran it (as in the delivery log)
    ("outcome", pa.string()),  # a TxnOutcome
    ("error", pa.string()),  # librdkafka's error name when commit or abort failed, else null
    ("cause", pa.string()),  # a TxnCause; null when committed
    ("sends", pa.int64()),  # records handed to the client in it
    ("ended_at", _UTC_MS),
])

# The columns a reader cannot do without (a file lacking one is damaged) and those never null in them;
# the other columns are optional, so that files of older releases still analyse.
REQUIRED = {"acks": ("partition", "value", "outcome"), "log": ("partition", "offset", "value"),
            "transactions": ("txn", "outcome")}
NOT_NULL = {"acks": ("partition", "value", "outcome"), "log": ("partition", "offset"),
            "transactions": ("txn", "outcome")}
SCHEMAS = {"acks": ACKS_SCHEMA, "log": LOG_SCHEMA, "transactions": TRANSACTIONS_SCHEMA}

_DDL = {pa.int32(): "int", pa.int64(): "long", pa.string(): "string", pa.float64(): "double"}


def spark_ddl(schema: pa.Schema) -> str:
    """The schema as a Spark DDL string ("partition int, offset long, ...")."""
    return ", ".join(f"{f.name} {'timestamp' if pa.types.is_timestamp(f.type) else _DDL[f.type]}" for f in schema)


def json_object(line: str, limit: int | None = None) -> dict:
    """One JSON line (or a small JSON file) that must be an object: NaN, Infinity, a number beyond a float's
    range (1e999), a key given twice and a text longer than `limit` characters (when given) are refused
    (ValueError). Linear in the text's length: a line of 200,000 keys is checked for repeats in one pass."""
    if limit is not None and len(line) > limit:
        raise ValueError(f"longer than {limit:,} characters")

    def no_constant(name):
        raise ValueError(f"{name} is not a number JSON allows")

    def finite(text):
        x = float(text)
        if not math.isfinite(x):
            raise ValueError(f"{text[:40]} is beyond the range of a number (a 64-bit float)")
        return x

    def no_repeats(pairs):
        row = dict(pairs)
        if len(row) != len(pairs):  # a key given twice: name the first one repeated
            seen = set()
            for k, _ in pairs:
                if k in seen:
                    raise ValueError(f"key {k!r} given twice")
                seen.add(k)
        return row

    try:
        row = json.loads(line, parse_constant=no_constant, parse_float=finite, object_pairs_hook=no_repeats)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    return row
