"""The analysis job: Kafka topic -> log.parquet, and log.parquet + acks.parquet -> metrics.

Used in-process by the CLI, and runnable on its own:
    spark-submit harness/analysis/job.py --run reports/<run-id>
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from harness.analysis import checks
from harness.analysis.kafka_source import KafkaLogSource

LOG_COLUMNS = ["partition", "offset", "value", "timestamp"]
ACKS_COLUMNS = ["partition", "value", "outcome", "offset"]


def spark_session(master: str | None = None) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, and no hostname warning
    log4j = Path(__file__).with_name("log4j2.properties")
    cores = os.cpu_count() or 2
    builder = (SparkSession.builder.appName("kafka-chaos-analysis")
               .config("spark.sql.shuffle.partitions", str(max(2, cores * 2)))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j.as_uri()}")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
               .config("spark.driver.memory", os.environ.get("KAFKA_CHAOS_DRIVER_MEMORY", "2g"))
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
               # One task per file, never split: the final read writes one file per topic partition in
               # offset order, which lets checks.analyze stream each partition without a shuffle.
               .config("spark.sql.files.maxPartitionBytes", str(1 << 40))
               .config("spark.sql.files.openCostInBytes", str(1 << 40)))
    if master:
        builder = builder.master(master)
    elif "spark.master" not in SparkSession.builder._options and not os.environ.get("MASTER"):
        builder = builder.master("local[*]")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaLogSource)
    _warm_up(spark, cores)
    return spark


def _warm(batches):
    import harness.analysis.checks  # noqa: F401  (numpy, pyarrow and the kernel, imported once per worker)

    yield from batches


def _warm_up(spark: SparkSession, cores: int) -> None:
    """Start the Python workers and import the analysis in them now, as part of Spark's start-up
    (the CLI overlaps it with the cluster's), rather than inside the first timed analysis."""
    spark.range(cores, numPartitions=cores).mapInArrow(_warm, "id long").collect()


def read_topic(spark: SparkSession, client: dict, topic: str, partitions: int) -> DataFrame:
    """client: librdkafka connection settings (bootstrap.servers, security)."""
    return (spark.read.format(KafkaLogSource.name())
            .option("client_config", json.dumps(client)).option("topic", topic).option("partitions", str(partitions))
            .load())


def save_log(spark: SparkSession, client: dict, topic: str, partitions: int, path: Path) -> None:
    """The final read: every record of the topic, written to log.parquet."""
    read_topic(spark, client, topic, partitions).write.mode("overwrite").parquet(str(path))


def load_variant(spark: SparkSession, variant_dir: Path) -> tuple[DataFrame, DataFrame]:
    for name in ("log.parquet", "acks.parquet"):
        if not (variant_dir / name).exists():
            raise FileNotFoundError(f"{variant_dir / name} not found")
    log = spark.read.parquet(str(variant_dir / "log.parquet"))
    acks = spark.read.parquet(str(variant_dir / "acks.parquet"))
    for df, cols, name in ((log, LOG_COLUMNS, "log.parquet"), (acks, ACKS_COLUMNS, "acks.parquet")):
        absent = [c for c in cols if c not in df.columns]
        if absent:
            raise ValueError(f"{variant_dir / name}: missing columns {absent}; expected {cols}")
    return log, acks


ANOMALY_TABLES = ("partitions", "jump_back_runs", "duplicates", "lost", "gaps", "series")


def parquet_files(path: Path) -> list[str]:
    """A Parquet dataset's data files: the file itself, or the visible *.parquet files of a folder, sorted."""
    if path.is_file():
        return [str(path)]
    return sorted(str(p) for p in path.rglob("*.parquet") if not p.name.startswith(("_", ".")))


def analyze_variant(spark: SparkSession, variant_dir: Path, details: bool = True) -> dict[str, int]:
    """Metrics of one variant; with details, each anomaly also goes to <variant>/anomalies/<name>.parquet."""
    load_variant(spark, variant_dir)  # validates the files and their columns
    findings = checks.analyze_files(spark, parquet_files(variant_dir / "log.parquet"),
                                    parquet_files(variant_dir / "acks.parquet"))
    try:
        if details:
            for name in ANOMALY_TABLES:
                (getattr(checks, name)(findings).coalesce(1).write.mode("overwrite")
                 .parquet(str(variant_dir / "anomalies" / f"{name}.parquet")))
        return checks.summarize(findings)
    finally:
        findings.unpersist()


def variant_dirs(run_dir: Path) -> list[Path]:
    """Variant folders of a run, in the spec's order when spec.yaml is there."""
    found = sorted(p.parent for p in run_dir.glob("*/acks.parquet"))
    spec = run_dir / "spec.yaml"
    if spec.exists():
        import yaml

        order = [v["name"] for v in (yaml.safe_load(spec.read_text()) or {}).get("variants", [])]
        found.sort(key=lambda p: order.index(p.name) if p.name in order else len(order))
    return found


KEPT_RUN_FIELDS = ("seed", "cluster", "started_at", "ended_at", "faults_planned", "warnings", "reason")


def analyze_run(spark: SparkSession, run_dir: Path) -> dict:
    """The summary of a stored run from its Parquet files alone (what `kafka-chaos analyze` writes).

    Expectations come from spec.yaml when present; what only the live run knew (times,
    cluster, produce duration) is kept from an earlier summary.json.
    """
    import yaml

    from harness import summary as summary_mod

    dirs = variant_dirs(run_dir)
    if not dirs:
        raise FileNotFoundError(f"{run_dir}: no <variant>/acks.parquet found; is this a kafka-chaos run folder?")
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text()) if (run_dir / "spec.yaml").exists() else {}
    old = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    variants = {}
    for d in dirs:
        kept = {k: v for k, v in old.get("variants", {}).get(d.name, {}).items() if k == "produce_seconds"}
        variants[d.name] = {**kept, **analyze_variant(spark, d)}
    return summary_mod.build(old.get("run_id", run_dir.name), (spec or {}).get("name", old.get("experiment", run_dir.name)),
                             old.get("status", "complete"), variants, (spec or {}).get("expectations", {}),
                             {k: old[k] for k in KEPT_RUN_FIELDS if k in old})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="kafka-chaos analysis of a stored run folder: rewrites its "
                                             "summary.json, index.html and anomalies/, and prints the summary")
    ap.add_argument("--run", required=True, type=Path, help="run folder holding <variant>/log.parquet and acks.parquet")
    ap.add_argument("--master", default=None, help="Spark master (default: local[*], or spark-submit's)")
    args = ap.parse_args(argv)
    from harness import summary as summary_mod
    from harness.report.render import render

    spark = spark_session(args.master)
    try:
        summary = analyze_run(spark, args.run)
    finally:
        spark.stop()
    summary_mod.write(args.run / "summary.json", summary)
    render(args.run)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
