"""The metric registry: every number the harness reports, defined once.

The summary, the CLI table, the report, JUnit, the names allowed in expectations and
`allow` lists, and the per-partition table are all derived from METRICS; nothing else
lists metric names. The words follow the README's Words.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str  # as in summary.json, expectations and allow lists
    label: str  # as in the report and the CLI table
    meaning: str  # one line, for the README and the report
    combine: str = "sum"  # across partitions and runs: "sum" or "max"
    fatal: bool = False  # fails the run unless the variant allows it
    anomaly: bool = False  # something went wrong when it is above 0 (highlighted in the report)
    trend: bool = False  # drawn across runs in the runs index
    accounting: bool = False  # delivery counts, shown dimmed after the anomalies
    consumer: bool = False  # measured on the consumer group's sink (0 in variants without one)
    transactional: bool = False  # about transactions (0 in variants that send none)
    undecided: bool = False  # above 0 the verdict is unknown (exit 3), unless the variant allows lost
    planned: bool = False  # what the run did of its plan (not measured on the log; no per-partition value): above
    # 0 the verdict is unknown (exit 3) unless an expectation names the metric (verdict.plan_checks)


METRICS: tuple[Metric, ...] = (
    # The seed article's columns first.
    Metric("acked", "confirmed", "sends the broker confirmed, with the offset the client was told (none of "
           "several sends: the verdict is unknown)"),
    Metric("received", "received", "records read back that carry a value the workload sent"),
    Metric("unique", "unique", "distinct values read back"),
    Metric("duplicates", "duplicates", "extra copies of values already read: received - unique",
           anomaly=True, trend=True),
    Metric("jump_back_runs", "jump-back runs",
           "runs of consecutive records whose value is not above the highest value read before", anomaly=True),
    Metric("max_jump_back", "max jump-back", "largest jump-back size: highest value before - first value of the run",
           combine="max"),
    Metric("lost", "lost", "acked values absent from a complete final read, wherever they sat (middle or tail)",
           fatal=True, anomaly=True, trend=True),
    Metric("unseen", "unseen",
           "acked values absent when the final read could not prove it reached a partition's end, with nothing "
           "later read: lost or late, nobody can tell (the verdict is unknown)", anomaly=True, undecided=True),
    Metric("deleted_before_read", "deleted before read",
           "records the broker deleted before the final read (each partition's log start offset above 0); acked "
           "values told an offset among them are counted here, not as lost", fatal=True, anomaly=True),
    Metric("missing", "missing", "rejected or unknown values never read (expected under faults)"),
    Metric("received_unacked", "received-unacked", "unknown values that are in the log anyway"),
    Metric("reorders", "reorders", "jump-back records whose value had not been read before (late, not repeated)"),
    Metric("unexpected", "unexpected", "records read that the workload never sent (foreign format included)",
           fatal=True, anomaly=True),
    Metric("inconsistent_offsets", "inconsistent offsets",
           "acked values that are in the log, but not at the offset the client was told", fatal=True, anomaly=True),
    Metric("truncated_acks", "truncated acks",
           "acked values whose told offset now holds a record of a later leader epoch than the value's copy in the "
           "log: the acknowledged write was truncated and its offset rewritten by a later leader (an unclean election, "
           "lost unflushed data); only an earlier copy of the value survives", fatal=True, anomaly=True),
    Metric("base_offset_minus_one", "base offset -1",
           "the same for sends of a batch the broker acknowledged with base offset -1 (Tansu's answer to a retry it "
           "deduplicated: the client is told -1, 0, 1, ...)", fatal=True, anomaly=True),
    Metric("rejected_visible", "rejected-visible", "values reported as rejected (never written) that are in the log",
           fatal=True, anomaly=True),
    Metric("nonmonotonic_sends", "nonmonotonic sends",
           "acked sends whose offset is below the offset of the send before them in their partition and session"),
    # Transactional variants (the log read with read_committed); 0 elsewhere.
    Metric("aborted_reads", "aborted reads", "records of aborted transactions visible under read_committed",
           fatal=True, anomaly=True, transactional=True),
    Metric("lost_committed", "lost committed", "values of committed transactions never read under read_committed",
           fatal=True, anomaly=True, transactional=True),
    Metric("failed_committed", "failed committed",
           "sends the client reported failed (rejected or unknown, with its error) in a transaction whose commit "
           "returned: the commit should have refused", fatal=True, anomaly=True, transactional=True),
    # Per partition: transactions partly read within it; per variant the driver counts across partitions.
    Metric("torn_transactions", "torn transactions",
           "transactions partly visible under read_committed (some of their values read, some not)",
           fatal=True, anomaly=True, transactional=True),
    Metric("zombie_writes_visible", "zombie writes visible",
           "records of a fenced producer instance's transaction visible under read_committed",
           fatal=True, anomaly=True, transactional=True),
    # Consumer variants (the group's sink against the log read back; analysis/consumption.py); 0 elsewhere.
    Metric("reprocessed", "reprocessed", "records (partition, offset) the consumer group processed more than once",
           anomaly=True, trend=True, consumer=True),
    Metric("skipped", "skipped", "records in the log the group never processed though its final position is past "
           "them (lost to the application)", fatal=True, anomaly=True, trend=True, consumer=True),
    Metric("unconsumed", "unconsumed", "records in the log never processed at or beyond the group's final position "
           "(it stopped before them)", anomaly=True, consumer=True),
    Metric("client_hangs", "client hangs", "consumer group members whose client call did not return, past its "
           "timeout or, after their stop, in close() (the summary's hung_in_call and hung_on_close name the call); "
           "killed at the stop", fatal=True, anomaly=True, consumer=True),
    Metric("poll_skips", "poll skips", "a member's next record of a partition, within one assignment, beyond the "
           "successor of the one before (records jumped over)", anomaly=True, consumer=True),
    Metric("nonmonotonic_polls", "nonmonotonic polls", "a member's next record of a partition, within one "
           "assignment, at or before the one before (read again, or backwards)", anomaly=True, consumer=True),
    Metric("rebalances", "rebalances", "assignments the members were given (each on_assign, every member counted)",
           consumer=True),
    Metric("processed", "processed", "rows in the consumer group's sink: records processed, repeats included "
           "(none while the log holds records: the verdict is unknown)", accounting=True, consumer=True),
    # What the run did of its plan (faults.jsonl, the producer's end): a run that did not do what it planned never
    # passes, unless an expectation names exactly that (`faults_not_applied: "== 1"`).
    Metric("faults_not_applied", "faults not applied", "planned faults never applied (not reached before the "
           "workload ended, or failed): the verdict is unknown", anomaly=True, planned=True),
    Metric("producer_failed", "producer failed", "1 when the producer failed for good (a fatal error ended the "
           "workload early; the summary's client_fatal names it, producer_error says it): the verdict is unknown", anomaly=True,
           planned=True),
    # Delivery accounting: sent = acked + rejected + unknown.
    Metric("sent", "sent", "values handed to the producer", accounting=True),
    Metric("rejected", "rejected", "sends provably never written (refused definitely, or never transmitted)",
           accounting=True),
    Metric("unknown", "unknown", "sends whose fate the client could not learn (timed out, connection lost, purged)",
           accounting=True),
)


@dataclass(frozen=True)
class Figure:
    """A measured quantity that is not a count (timing.py computes these from the delivery log's times)."""

    key: str  # summary.json key (in the variant, and in each of its fault_periods)
    label: str
    meaning: str


FIGURES: tuple[Figure, ...] = (
    Figure("latency_ms", "latency p50 / p95 / p99 / max (ms)",
           "produce() to delivery report of acknowledged sends, to within 1 %"),
    Figure("unavailable_s", "unavailable (s)",
           "the longest stretch with a send pending and no acknowledgement, to 10 ms"),
    # Transactional variants: an open (perhaps hanging) transaction holding read_committed readers back.
    Figure("lso_stall_s", "last stable offset stall (s)",
           "after the workload and healing, how long some partition's last stable offset stayed below its high "
           "watermark (read_committed readers cannot pass an open transaction); \u2265 when it never caught up "
           "in the 15 s the harness waits"),
    # Consumer variants with reprocessed records (analysis/consumption.py).
    Figure("dedup_window_ms", "dedup window p50 / p99 / p100 (ms)",
           "the window, in time since a record's first processing, that catches 50 / 99 / 100 % of its repeats"),
    Figure("dedup_window_records", "dedup window p50 / p99 / p100 (records)",
           "the same in records processed by the group since the first processing"),
)

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}
KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)
FATAL: frozenset[str] = frozenset(m.key for m in METRICS if m.fatal)
UNDECIDED: frozenset[str] = frozenset(m.key for m in METRICS if m.undecided)


def applies(metric: Metric, variant: dict) -> bool:
    """The metric can be non-zero for this variant (its summary entry): the consumer metrics need a consumer
    group, the transaction metrics transactions; the tables and the CLI leave out the others."""
    if metric.consumer:
        return bool(variant.get("consumer"))
    if metric.transactional:
        return bool(variant.get("transactions"))
    return True


def not_measured(variants: dict[str, dict]) -> list[Metric]:
    """The metrics that apply to none of the variants (said once, as "not measured here")."""
    return [m for m in METRICS if not any(applies(m, v) for v in variants.values())]


def not_measured_text(variants: dict[str, dict]) -> str:
    """The metrics no variant measures, said once with why: "not measured here: aborted reads, ... (no
    variant sends in transactions); reprocessed, ... (no variant runs a consumer group)"; "" when none."""
    absent = not_measured(variants)
    groups = [([m.label for m in absent if m.transactional], "no variant sends in transactions"),
              ([m.label for m in absent if m.consumer], "no variant runs a consumer group")]
    said = [f"{', '.join(labels)} ({why})" for labels, why in groups if labels]
    return "not measured here: " + "; ".join(said) if said else ""


def combine(key: str, values) -> int:
    """Combine one metric's values across partitions (or runs) the way the registry says."""
    values = [int(v) for v in values if v is not None]
    if not values:
        return 0
    return max(values) if BY_KEY[key].combine == "max" else sum(values)


def combine_rows(rows: list[dict]) -> dict[str, int]:
    """Per-partition metric rows -> the variant's metrics (the planned ones are not measured on the log)."""
    return {m.key: combine(m.key, (r.get(m.key) for r in rows)) for m in METRICS if not m.planned}


def accounting_holds(metrics: dict) -> bool:
    return metrics.get("sent") == sum(metrics.get(k, 0) for k in ("acked", "rejected", "unknown"))
