"""kafka-chaos command line.

Exit codes: 0 every expectation held, 1 an expectation failed, 2 bad input or usage,
3 infrastructure failed (cluster, proxy, Spark), 130/143 interrupted (SIGINT/SIGTERM).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from . import __version__
from .spec import SpecError, load_spec
from .summary import ACCOUNTING, TABLE_COLUMNS, passed

EXIT_OK, EXIT_EXPECTATION, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3

console = Console(soft_wrap=True)  # never break paths or messages: CI logs get read and grepped
err_console = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
    sys.exit(code)


def _writable_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".kafka-chaos-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        _fail(f"--out {path}: not a writable folder ({e.strerror or e})", EXIT_USAGE)


def print_summary(summary: dict, run_dir: Path | None = None) -> None:
    """Metrics as rows and variants as columns, so the table fits a narrow terminal."""
    variants = summary["variants"]
    table = Table(title=f"{summary['experiment']} · {summary['status']}", title_justify="left")
    table.add_column("")
    for name in variants:
        table.add_column(name, justify="right")
    for key, label in TABLE_COLUMNS + [(k, k) for k in ACCOUNTING]:
        table.add_row(label, *(f"{v[key]:,}" if isinstance(v.get(key), int) else "-" for v in variants.values()),
                      style="dim" if key in ACCOUNTING else None)
    console.print(table)
    for name, v in variants.items():
        for e in v.get("expectations", []):
            mark = "[green]pass[/]" if e["passed"] else "[bold red]FAIL[/]"
            console.print(f"  {mark}  {name}: {e['metric']} {e['rule']} (actual {e['actual']})", highlight=False)
    if summary.get("reason"):
        console.print(f"[yellow]{summary['reason']}[/]", highlight=False)
    if run_dir is not None:
        console.print(f"report: {run_dir / 'index.html'}", highlight=False, soft_wrap=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafka-chaos")
def main() -> None:
    """Chaos tests for Kafka delivery guarantees.

    A producer writes increasing integers per partition while faults are injected
    (lost acks, connection resets, latency, bandwidth, partitions, brokers isolated
    from their peers, broker pauses, kills and restarts); a PySpark job reads the log back and counts duplicates,
    jump-backs and losses for every variant (e.g. idempotence off vs on) under the
    same seeded fault schedule. Start with: kafka-chaos run experiments/quickstart.yaml
    """


@main.command()
@click.argument("experiment", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"), show_default=True,
              help="Folder that receives the run folder <run-id>/.")
@click.option("--seed", type=int, default=None, help="Seed of the fault schedule (default: the experiment's seed).")
@click.option("--replay", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Apply the fault schedule recorded in a run's faults.jsonl instead of planning one.")
@click.option("--spark-master", default=None, help="Spark master for the analysis (default local[*]).")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write JUnit XML here: one test case per variant and expectation, for CI.")
def run(experiment: Path, out: Path, seed: int | None, replay: Path | None, spark_master: str | None,
        junit: Path | None) -> None:
    """Run EXPERIMENT (a YAML file) and write a report.

    The experiment's cluster section picks the brokers: backend local with
    broker tansu (the default: started here, no install), local with broker
    kafka (KRaft nodes from KAFKA_HOME), compose (compose/docker-compose.yml:
    3 Apache Kafka brokers behind Toxiproxy) or external (bootstrap_servers).

    Exit 0 when every expectation held, 1 when one failed, 2 on bad input,
    3 when the cluster or the harness failed.
    """
    from .cluster import InfraError, input_problems, unsupported_faults
    from .runner import Interrupted, Run, handle_signals

    try:
        spec = load_spec(experiment)
    except SpecError as e:
        _fail(str(e), EXIT_USAGE)
    from .faults.schedule import ScheduleError, load, plan

    try:  # planned here, so a schedule the cluster cannot take (overlapping broker faults) is bad input
        schedule = load(replay, spec) if replay is not None else plan(spec, spec.seed if seed is None else seed)
    except ScheduleError as e:
        _fail(str(e) if replay is not None else f"{experiment}: {e}", EXIT_USAGE)
    kinds = {f.kind for f in (schedule if replay is not None else spec.faults)}
    cannot = unsupported_faults(spec.cluster, kinds)
    if cannot:
        _fail(f"{experiment}: faults: backend {spec.cluster.backend} with broker {spec.cluster.broker} cannot "
              f"inject {', '.join(cannot)}", EXIT_USAGE)
    problems = input_problems(spec.cluster)
    if problems:
        _fail("\n".join(f"{experiment}: {p}" for p in problems), EXIT_USAGE)
    _writable_dir(out)
    handle_signals()
    the_run = Run(spec, out, spec.seed if seed is None else seed, console, spark_master, schedule)
    origin = f"replayed from {replay}" if replay else f"seed {the_run.seed}"
    console.print(f"[bold]{spec.name}[/]: {len(spec.variants)} variant(s) × {spec.workload.messages:,} messages, "
                  f"{len(the_run.schedule)} planned fault(s), {origin}", highlight=False)
    for warning in the_run.warnings:
        console.print(f"[yellow]note:[/] {warning}", highlight=False)
    started = time.monotonic()
    try:
        summary = the_run.execute()
    except Interrupted as e:
        _write_junit(junit, the_run, started)
        err_console.print("interrupted; partial results kept in " + str(the_run.run_dir), highlight=False)
        sys.exit(e.code)
    except InfraError as e:
        _write_junit(junit, the_run, started)
        _fail(f"{e}\npartial results kept in {the_run.run_dir}", EXIT_INFRA)
    except Exception:  # a harness bug must not look like a failed expectation (exit 1)
        _write_junit(junit, the_run, started)
        traceback.print_exc()
        _fail(f"the harness failed unexpectedly (traceback above)\npartial results kept in {the_run.run_dir}",
              EXIT_INFRA)
    _write_junit(junit, the_run, started)
    print_summary(summary, the_run.run_dir)
    sys.exit(EXIT_OK if passed(summary) else EXIT_EXPECTATION)


def _write_junit(path: Path | None, the_run, started: float) -> None:
    summary = getattr(the_run, "summary", None)
    if path is not None and summary is not None:
        from .junit import write

        write(path, summary, time.monotonic() - started)


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--spark-master", default=None, help="Spark master for the analysis (default local[*]).")
def analyze(run_dir: Path, spark_master: str | None) -> None:
    """Re-run the analysis of a stored RUN_DIR from its Parquet files (no broker needed).

    Needs <variant>/log.parquet and <variant>/acks.parquet; rewrites summary.json and
    index.html. Expectations come from RUN_DIR/spec.yaml when it is there.
    """
    from . import summary as summary_mod
    from .analysis.job import analyze_run, spark_session, variant_dirs
    from .report.render import render

    dirs = variant_dirs(run_dir)
    if not dirs:
        _fail(f"{run_dir}: no <variant>/acks.parquet found; is this a kafka-chaos run folder?", EXIT_USAGE)
    missing = [str(d / "log.parquet") for d in dirs if not (d / "log.parquet").exists()]
    if missing:
        _fail(f"missing {', '.join(missing)}", EXIT_USAGE)
    spark = spark_session(spark_master)
    try:
        with console.status("analysing with Spark"):
            summary = analyze_run(spark, run_dir)
    except (ValueError, FileNotFoundError) as e:
        _fail(str(e), EXIT_USAGE)
    finally:
        spark.stop()
    summary_mod.write(run_dir / "summary.json", summary)
    render(run_dir)
    print_summary(summary, run_dir)
    sys.exit(EXIT_OK if passed(summary) else EXIT_EXPECTATION)


@main.command()
@click.argument("run_dir", required=False, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--index", "index_dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Rebuild DIR/index.html, the list of every run in DIR with the trend across runs.")
def report(run_dir: Path | None, index_dir: Path | None) -> None:
    """Re-render RUN_DIR/index.html from its summary.json, faults.jsonl and anomalies (no Spark needed)."""
    from .report.render import render, render_index

    if (run_dir is None) == (index_dir is None):
        _fail("give a RUN_DIR, or --index DIR", EXIT_USAGE)
    if index_dir is not None:
        console.print(f"index: {render_index(index_dir)}", highlight=False)
        return
    if not (run_dir / "summary.json").exists():
        _fail(f"{run_dir}: no summary.json; run `kafka-chaos analyze {run_dir}` first", EXIT_USAGE)
    console.print(f"report: {render(run_dir)}", highlight=False)


@main.command()
def doctor() -> None:
    """Show what is available (Tansu, Java, Spark, toxiproxy-server, Docker, KAFKA_HOME) and how to fix what is not.

    Exit 0 when the embedded default (local Tansu broker, embedded proxy, Spark) can run, 1 otherwise.
    """
    from .doctor import embedded_default_ready, run_checks

    checks = run_checks()
    for c in checks:
        mark = "[green]ok     [/]" if c.ok else ("[bold red]MISSING[/]" if c.needed else "[yellow]absent [/]")
        console.print(f"{mark} {c.name:<17} {c.detail}", highlight=False)
        if not c.ok and c.fix:
            console.print(f"         fix: {c.fix}", highlight=False)
    ready = embedded_default_ready(checks)
    console.print("the embedded default can run" if ready else "[bold red]the embedded default cannot run[/]")
    sys.exit(EXIT_OK if ready else EXIT_EXPECTATION)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8474, show_default=True, type=int)
def proxy(host: str, port: int) -> None:
    """Run the embedded Toxiproxy-compatible proxy on its own (for users without toxiproxy-server)."""
    from .proxy.server import serve

    try:
        serve(host, port, ready=lambda p: console.print(f"Toxiproxy API on http://{host}:{p} (Ctrl-C stops)"))
    except OSError as e:
        _fail(f"cannot listen on {host}:{port}: {e.strerror or e}", EXIT_USAGE)
