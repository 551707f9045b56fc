"""Anomaly checks: pure DataFrame -> DataFrame functions, one per anomaly (see DESIGN.md, Words).

Inputs:
  log  (partition int, offset long, value long, ...)       the topic as read back
  acks (partition int, value long, outcome string, offset)  the producer's delivery log

Per partition, in offset order:
  duplicate         an extra copy of a value already read (duplicates = received - unique)
  jump-back         a record whose value is not above the highest value read before it
  jump-back run     consecutive jump-backs; size = highest_before - first_value + 1,
                    length = records in the run; kind = duplicate (all values read before),
                    reorder (none read before) or mixed
  reorders          jump-back records whose value had not been read before
  lost              an acked value never read (data loss)
  missing           a rejected or unknown value never read
  received-unacked  a rejected or unknown value that is in the log anyway
  unexpected        a value read that the producer never sent (should never happen)
  gap               a run of consecutive absent values, lost if any of them was acked
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F



def _by_offset():
    # A function, not a constant: a Window needs an active SparkSession to be built.
    return Window.partitionBy("partition").orderBy("offset")


def annotate(log: DataFrame) -> DataFrame:
    """Add highest_before, jump_back and repeat (this value was read at a lower offset)."""
    highest_before = F.max("value").over(_by_offset().rowsBetween(Window.unboundedPreceding, -1))
    copy_number = F.row_number().over(Window.partitionBy("partition", "value").orderBy("offset"))
    return (log.select("partition", "offset", "value")
            .withColumn("highest_before", highest_before)
            .withColumn("jump_back", F.coalesce(F.col("value") <= F.col("highest_before"), F.lit(False)))
            .withColumn("repeat", copy_number > 1))


def duplicates(log: DataFrame) -> DataFrame:
    """One row per value read more than once: copies and the offsets of every copy."""
    return (log.groupBy("partition", "value")
            .agg(F.count("*").alias("copies"), F.sort_array(F.collect_list("offset")).alias("offsets"))
            .where("copies > 1"))


def jump_back_runs(annotated: DataFrame) -> DataFrame:
    starts = F.col("jump_back") & ~F.coalesce(F.lag("jump_back").over(_by_offset()), F.lit(False))
    run = F.sum(starts.cast("int")).over(_by_offset().rowsBetween(Window.unboundedPreceding, 0))
    runs = (annotated.withColumn("run", run).where("jump_back")
            .groupBy("partition", "run")
            .agg(F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
                 F.min_by("value", "offset").alias("first_value"),
                 F.min_by("highest_before", "offset").alias("highest_before"),
                 F.count("*").alias("length"), F.sum(F.col("repeat").cast("int")).alias("repeats")))
    kind = (F.when(F.col("repeats") == F.col("length"), "duplicate")
            .when(F.col("repeats") == 0, "reorder").otherwise("mixed"))
    return (runs.withColumn("size", F.col("highest_before") - F.col("first_value") + 1)
            .withColumn("kind", kind)
            .select("partition", "first_offset", "last_offset", "first_value", "highest_before",
                    "size", "length", "kind"))


def absent(log: DataFrame, acks: DataFrame) -> DataFrame:
    """Sent values that are not in the log, with their outcome."""
    return acks.join(log.select("partition", "value"), ["partition", "value"], "left_anti")


def lost(log: DataFrame, acks: DataFrame) -> DataFrame:
    return absent(log, acks).where(F.col("outcome") == "acked")


def missing(log: DataFrame, acks: DataFrame) -> DataFrame:
    return absent(log, acks).where(F.col("outcome") != "acked")


def received_unacked(log: DataFrame, acks: DataFrame) -> DataFrame:
    return acks.where(F.col("outcome") != "acked").join(
        log.select("partition", "value"), ["partition", "value"], "left_semi")


def unexpected(log: DataFrame, acks: DataFrame) -> DataFrame:
    return log.join(acks.select("partition", "value"), ["partition", "value"], "left_anti")


def gaps(log: DataFrame, acks: DataFrame) -> DataFrame:
    """Runs of consecutive absent values per partition; kind lost if any value in it was acked."""
    by_value = Window.partitionBy("partition").orderBy("value")
    return (absent(log, acks)
            .withColumn("grp", F.col("value") - F.row_number().over(by_value))
            .groupBy("partition", "grp")
            .agg(F.min("value").alias("first_value"), F.max("value").alias("last_value"),
                 F.count("*").alias("values"), F.sum((F.col("outcome") == "acked").cast("int")).alias("lost"))
            .withColumn("kind", F.when(F.col("lost") > 0, "lost").otherwise("missing"))
            .drop("grp"))


def summarize(log: DataFrame, acks: DataFrame) -> dict[str, int]:
    """Every metric of the summary table, as plain ints."""
    annotated = annotate(log).cache()
    try:
        row = annotated.agg(
            F.count("*").alias("received"),
            F.sum(F.col("repeat").cast("long")).alias("duplicates"),
            F.sum((F.col("jump_back") & ~F.col("repeat")).cast("long")).alias("reorders"),
        ).first()
        runs = jump_back_runs(annotated).agg(F.count("*").alias("n"), F.max("size").alias("max")).first()
    finally:
        annotated.unpersist()
    outcomes = {r["outcome"]: r["count"] for r in acks.groupBy("outcome").count().collect()}
    gone = absent(log, acks).agg(
        F.sum((F.col("outcome") == "acked").cast("long")).alias("lost"),
        F.sum((F.col("outcome") != "acked").cast("long")).alias("missing")).first()
    received = row["received"] or 0
    dups = row["duplicates"] or 0
    return {
        "sent": sum(outcomes.values()),
        "acked": outcomes.get("acked", 0),
        "rejected": outcomes.get("rejected", 0),
        "unknown": outcomes.get("unknown", 0),
        "received": received,
        "unique": received - dups,
        "duplicates": dups,
        "jump_back_runs": runs["n"] or 0,
        "max_jump_back": runs["max"] or 0,
        "lost": gone["lost"] or 0,
        "missing": gone["missing"] or 0,
        "received_unacked": received_unacked(log, acks).count(),
        "reorders": row["reorders"] or 0,
        "unexpected": unexpected(log, acks).count(),
    }
