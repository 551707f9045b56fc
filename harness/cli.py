"""kafka-chaos command line: the commands, their wiring, and the exit status of every command. What they
show on the terminal is drawn by terminal.py.

Exit codes (exits.py): 0 every check held, 1 an expectation or a fatal anomaly failed, 2 bad input
(nothing started), 3 infrastructure failed or damaged data, 130/143 interrupted (SIGINT/SIGTERM).
A traceback is shown only with --debug.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

import click

from . import __version__
from .analysis.metrics import METRICS
from .exits import Exit, InfraError, UsageError, exit_for_exception, exit_for_verdict
from .status import COMPLETE, INTERRUPTED
from .terminal import (ProgressListener, console, print_aggregate, print_checks, print_compare, print_summary, say,
                       say_error)
from .verdict import FAIL, PASS


def _exit(code: Exit) -> None:
    sys.exit(int(code))


def _fail(e: BaseException) -> None:
    """Map what went wrong to its exit status, say it in one line (traceback only with --debug)."""
    code, message = exit_for_exception(e)
    if _debug():
        traceback.print_exception(e)
    if code in (Exit.SIGINT, Exit.SIGTERM):
        say(f"interrupted{': ' + message if message != 'interrupted' else ''}", "yellow", err=True)
    else:
        say_error(message)
    _exit(code)


def _debug() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("debug"))


def _writable_dir(path: Path, option: str = "--out") -> None:
    """Create the folder now (paths are used literally: `[`, `*` and `?` are just characters)."""
    if any(c in str(path) for c in "\n\r\0"):
        raise UsageError(f"{option} {str(path)!r}: a path may not hold a line break or NUL")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".kafka-chaos-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"{option} {path}: not a writable folder ({e.strerror or e})") from None


def _writable_file(path: Path, option: str) -> None:
    """A file written at the end of the run: its folder must be writable now, and it must not be a folder."""
    if any(c in str(path) for c in "\n\r\0"):
        raise UsageError(f"{option} {str(path)!r}: a path may not hold a line break or NUL")
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    _writable_dir(path.parent, option)


def exit_help(**meanings: str) -> str:
    """The exit statuses of a command, for its --help: every Exit, the fatal anomalies from the metric
    registry (never a hand-written list); `meanings` (by Exit name) replaces or extends a default."""
    fatal = ", ".join(m.key for m in METRICS if m.fatal)
    default = {
        "OK": "every check held (allowed anomalies are reported as allowed)",
        "FAILED": f"an expectation failed, or a fatal anomaly occurred that the variant does not allow ({fatal})",
        "USAGE": "bad input (nothing was started)",
        "INFRA": "the cluster, Spark or the harness failed, or the data cannot be trusted (a verdict "
                 "neither pass nor fail)",
        "SIGINT": "interrupted by Ctrl-C",
        "SIGTERM": "interrupted by SIGTERM",
    }
    default.update(meanings)  # a meaning given as "" drops that status (a command that never returns it)
    return "Exit status: " + "; ".join(f"{int(code)} {default[code.name]}" for code in Exit
                                       if default[code.name]) + "."


class OneLineErrors(click.Group):
    """click, but a wrong option or argument is one line too (click prints the usage and a hint first)."""

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except getattr(click.exceptions, "NoArgsIsHelpError", ()) as e:  # plain `kafka-chaos`: the help
            e.show()
            sys.exit(e.exit_code)
        except click.ClickException as e:
            where = e.ctx.command_path if isinstance(e, click.UsageError) and e.ctx else "kafka-chaos"
            say_error(f"{e.format_message()} (see {where} --help)")
            sys.exit(e.exit_code)
        except click.Abort:
            say("interrupted", "yellow", err=True)
            sys.exit(int(Exit.SIGINT))
        sys.exit(code or 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafka-chaos")
@click.option("--debug", is_flag=True, help="Show the traceback of any failure (otherwise one line says what failed).")
def main(debug: bool) -> None:
    """Chaos tests for Kafka delivery guarantees.

    A producer writes increasing integers per partition while faults are injected
    (lost acks, connection resets, latency, bandwidth, partitions, brokers isolated
    from their peers, broker pauses, kills and restarts, a power loss that cuts a
    broker's unflushed writes); a PySpark job reads the
    log back and counts duplicates, jump-backs, losses and the other anomalies for
    every variant (e.g. idempotence off vs on) under the same seeded fault schedule.
    Data loss and values nobody sent fail a run unless the variant allows them.

    Start with: kafka-chaos run experiments/quickstart.yaml
    """


@main.command(epilog=exit_help() + " With --repeat: 1 if any run failed, else 3 if any errored or could not be "
              "judged, else 0.")
@click.argument("experiment", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"), show_default=True,
              help="Folder that receives the run folder <run-id>/ and the list of runs index.html.")
@click.option("--seed", type=click.IntRange(-(2**63), 2**63 - 1), default=None,
              help="Seed of the fault schedule (default: the experiment's seed).")
@click.option("--replay", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Apply the fault schedule recorded in a run's faults.jsonl instead of planning one.")
@click.option("--spark-master", default=None, help="Spark master for the analysis (default local[*]).")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write JUnit XML here: one test case per variant and check, for CI.")
@click.option("--repeat", type=click.IntRange(1, 10_000), default=None, metavar="N",
              help="Run the experiment N times (seeds seed, seed+1, ...) and write aggregate.json: per variant "
                   "and metric how often, how many, and the rate per 100,000 acked with a 95% interval.")
@click.option("--same-seed", is_flag=True, help="With --repeat: every run with the same seed (same fault plan).")
@click.option("--until-fail", is_flag=True,
              help="With --repeat: stop at the first run whose verdict is fail and say how to replay it.")
@click.option("--keep-data", is_flag=True,
              help="Keep the brokers' log folders (a local Kafka's kafka-data/) whatever the verdict; they are kept "
                   "anyway when it is fail (with --repeat: those of the series' cluster). `kafka-chaos evidence` "
                   "reads them.")
def run(experiment: Path, out: Path, seed: int | None, replay: Path | None, spark_master: str | None,
        junit: Path | None, repeat: int | None, same_seed: bool, until_fail: bool, keep_data: bool) -> None:
    """Run EXPERIMENT (a YAML file) and write a report.

    The experiment's cluster section picks the brokers: backend local with
    broker tansu (the default: started here, no install), local with broker
    kafka (KRaft nodes from KAFKA_HOME), compose (compose/docker-compose.yml:
    3 Apache Kafka brokers behind Toxiproxy) or external (bootstrap_servers).
    """
    from .preflight import check, prepare_clients

    try:
        if repeat is None and (same_seed or until_fail):
            raise UsageError(f"{'--same-seed' if same_seed else '--until-fail'} needs --repeat N")
        spec, schedule = check(experiment, seed, replay, spark_master)  # the first run's plan
        if repeat is not None:  # each later run's plan is made when it starts (repeat.Series)
            from .repeat import check_seeds

            check_seeds(spec.seed if seed is None else seed, repeat, same_seed,
                        "--seed" if seed is not None else f"{experiment}: seed")
        if junit is not None:
            _writable_file(junit, "--junit")
        _writable_dir(out)
        prepare_clients(spec, experiment)  # last: an install takes minutes, and bad input must not wait for it
    except Exception as e:
        _fail(e)
    _begin(spec)
    if repeat is not None:
        _run_series(spec, schedule, experiment, out, spec.seed if seed is None else seed,
                    replay, spark_master, junit, repeat, same_seed, until_fail, keep_data)
        return
    folder, summary, failure, code = _run_once(spec, schedule, out, spec.seed if seed is None else seed, replay,
                                               spark_master, junit, keep_data=keep_data)
    if failure is not None:
        say(f"partial results kept in {folder.path}", err=True)
        _fail(failure)
    _exit(code)


@main.command(epilog=exit_help(
    OK="the records are shown", FAILED="",
    USAGE="RUN_DIR is not a run folder or kept no broker data, an unknown --variant or --partition, a malformed "
          "--offsets, or no KAFKA_HOME",
    INFRA="a damaged run folder (the message names the file), or kafka-dump-log.sh failed"))
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--variant", default=None,
              help="The variant whose topic to read (default: the run's only variant, or the only one whose "
                   "topic the brokers' logs hold).")
@click.option("--partition", type=click.IntRange(0), default=None,
              help="The partition (default: the topic's only one).")
@click.option("--offsets", required=True, metavar="A-B", help="The offsets to show: A-B, or one offset.")
@click.option("--json", "as_json", is_flag=True, help="Print the view as JSON instead of a table.")
def evidence(run_dir: Path, variant: str | None, partition: int | None, offsets: str, as_json: bool) -> None:
    """What each replica's log holds at some offsets of a stored local-Kafka run, and what the client was told.

    Reads the run's kept brokers' log folders (kept when the verdict is fail, or with run --keep-data) with
    KAFKA_HOME's kafka-dump-log.sh: per offset and replica the value, its batch's leader epoch, producer id
    and epoch, sequence and transactional flag, joined with the delivery log (acks.parquet): what the client
    was told about that value (acked at which offset, rejected, unknown) and which values were acked at that
    offset. Example: kafka-chaos evidence reports/RUN --partition 0 --offsets 340-345
    """
    from .evidence import evidence as view_of
    from .runfolder import RunFolder
    from .terminal import print_evidence

    try:
        view = view_of(RunFolder(run_dir), variant, partition, offsets, os.environ.get("KAFKA_HOME"))
    except Exception as e:
        _fail(e)
    if as_json:
        click.echo(json.dumps(view, indent=1))
    else:
        print_evidence(view)


def _begin(spec) -> None:
    """The input is checked: Ctrl-C from now on is the run's, what killed runs left goes, notes are said."""
    from . import signals

    signals.install()
    _remove_stale_namespaces()
    for note in getattr(spec, "notes", []):  # e.g. matrix combinations librdkafka refuses
        say(f"note: {note}", "yellow")


def _remove_stale_namespaces() -> None:
    """Before a run starts: what runs whose harness was killed (-9) left of their network namespaces goes."""
    from .cluster.netns import remove_stale

    for rid in remove_stale():
        say(f"note: removed the network namespaces and links of run {rid}, whose harness is gone", "yellow")


def _run_once(spec, schedule, out: Path, seed: int, replay: Path | None, spark_master: str | None,
              junit: Path | None, heading: str = "", brief: bool = False, spark=None, cluster=None,
              keep_data: bool = False):
    """One run in a new run folder: progress, summary, report and runs index. spark: a SharedSpark of a
    series of runs (else the run starts its own); cluster: a KeptCluster's get (else the run starts its own);
    keep_data: keep the brokers' log folders whatever the verdict.
    -> (folder, summary, what ended it early or None, exit status)."""
    from .run import Run
    from .runfolder import RunFolder

    listener = ProgressListener(spec.workload.messages)
    folder = RunFolder.create(out, spec.name)
    the_run = Run(spec, folder, seed, listener, spark_master, schedule, spark, cluster, keep_data)
    origin = f"replayed from {replay}" if replay else f"seed {the_run.seed}"
    say(f"{heading}{spec.name}: {len(spec.variants)} variant(s) × {spec.workload.messages:,} messages, "
        f"{len(the_run.schedule)} planned fault(s), {origin}", "bold")
    for warning in the_run.warnings:
        listener.warning(warning)
    started = time.monotonic()
    failure = None
    try:
        with listener.progress:
            the_run.execute()
    except BaseException as e:  # the summary is written; say what ended the run after the report
        failure = e
    summary = the_run.summary
    code = exit_for_exception(failure)[0] if failure else exit_for_verdict(summary["verdict"])
    if summary is not None:
        if junit is not None:
            from .junit import write

            write(junit, summary, time.monotonic() - started)
        if failure is None and not brief:
            print_summary(summary, folder.path)
            _evidence_commands(folder, summary)
        code = _publish(folder, out, code)
    return folder, summary, failure, code


def _evidence_commands(folder, summary: dict) -> None:
    """A run that kept its brokers' logs and failed: the evidence command at each failed variant's first affected
    offset (evidence.commands)."""
    from .evidence import commands

    for line in commands(folder, summary):
        say(f"  {line}")


def _run_series(spec, schedule, experiment: Path, out: Path, first_seed: int, replay: Path | None,
                spark_master: str | None, junit: Path | None, count: int, same_seed: bool, until_fail: bool,
                keep_data: bool = False) -> None:
    """--repeat: the runs one after another, then the aggregate, its report, JUnit and the runs index."""
    from .exits import Exit
    from .repeat import Series

    from . import signals
    from .cluster.kept import KeptCluster, topics_of
    from .engine.session import SharedSpark

    series = Series(spec, out, count, first_seed, same_seed, until_fail, replay, schedule, experiment)
    summaries_seconds: list[float] = []
    spark = SharedSpark(spark_master, series.folder.spark_log)  # one JVM for the series
    kept = series.cluster = KeptCluster(spec.cluster, series.folder.path)  # one cluster for the series

    def run_one(index: int, seed: int, schedule):
        t = time.monotonic()
        folder, summary, failure, _ = _run_once(spec, schedule, out, seed, replay, spark_master, None,
                                                heading=f"run {index + 1}/{count}: ", brief=True, spark=spark,
                                                cluster=kept.get, keep_data=keep_data)
        summary = folder.read_summary() or summary  # the report's rendering may have marked it interrupted
        summaries_seconds.append(time.monotonic() - t)
        if summary is not None:
            line = f"run {index + 1}/{count} (seed {seed}): {summary.get('verdict')}"
            if failure is not None:
                line += f" ({exit_for_exception(failure)[1]})"
            say(f"{line} · {folder.path / 'index.html'}", "green" if summary.get("verdict") == PASS else "yellow")
        code = signals.interrupt_code(failure) if failure is not None else signals.received()
        last = index + 1 == count or (until_fail and (summary or {}).get("verdict") == FAIL)
        if code is None and not last:  # the next run gets a healed, healthy cluster
            try:
                why = kept.restore(topics_of(summary), delete=(summary or {}).get("verdict") == PASS and not keep_data)
            except InfraError as e:  # an external cluster, which the harness cannot rebuild
                series.stopped = str(e)
                say_error(f"{e}; the series stops after run {index + 1}/{count}")
            except signals.Interrupted:  # recorded: the series keeps this run's summary and stops (signals.received)
                return folder, summary, failure
            else:
                if why is not None:
                    say(f"run {index + 1}/{count}: the cluster was not healthy after it, {why}; the next run starts "
                        "a fresh one", "yellow")
        elif code is None:
            kept.close()  # now, so aggregate.json's cluster_seconds holds its stop too
        return folder, summary, failure

    try:
        doc = series.execute(run_one)
    finally:
        try:
            spark.stop()
        finally:
            kept.close()
    if junit is not None:
        from .junit import write_series

        write_series(junit, series.summaries, summaries_seconds)
    print_aggregate(doc)
    for path in sorted({s["broker_data"]["path"] for s in series.summaries if isinstance(s.get("broker_data"), dict)}):
        say(f"brokers' logs kept (a run failed, or --keep-data): {path}; show a run's offsets with: kafka-chaos "
            "evidence RUN_DIR --partition P --offsets A-B")
    if series.failed_run is not None:
        say(f"failed run: {series.failed_run.path}; replay it with: kafka-chaos run {experiment} "
            f"--replay {series.failed_run.faults_path}", "bold")
    code = series.exit_code
    try:
        from .report import write_aggregate_report, write_index

        with signals.deferred():
            write_aggregate_report(series.folder)
            write_index(out)
    except Exception as e:  # an interrupt here keeps the series' exit status
        if not isinstance(e, signals.Interrupted):
            say(f"warning: the aggregate report could not be rendered ({type(e).__name__}: {e}); retry with: "
                f"kafka-chaos report {series.folder.path}", "yellow", err=True)
        elif code == Exit.OK:
            code = Exit(e.code)
    say(f"aggregate: {series.folder.aggregate_path}")
    say(f"report: {series.folder.report}")
    if series.interrupted is not None:
        complete = sum(1 for x in series.summaries if x.get("status") == COMPLETE)
        say(f"interrupted after {len(series.summaries)} of {count} runs; the aggregate covers the {complete} "
            "complete one(s)", "yellow", err=True)
    elif series.refused is not None:  # bad input found when that run's plan was made: the series stopped there
        say(f"{series.refused} (the series stopped after {len(series.summaries)} of {count} runs)", "red", err=True)
    _exit(code)


def _publish(folder, out: Path, code: Exit) -> Exit:
    """Render the run's report and the runs index after the exit status is decided: a rendering failure
    is a warning, never a changed verdict. A Ctrl-C here stops the rendering at once (the page is
    written whole or not at all) and marks the summary interrupted; `kafka-chaos report` renders it."""
    from . import signals
    from .report import write_index, write_report

    try:
        write_report(folder)
        write_index(out)
    except signals.Interrupted as e:
        with signals.deferred():  # the summary is rewritten whole, whatever signal comes next
            summary = folder.read_summary() or {}
            if summary.get("status") == COMPLETE:
                from .summary import with_status

                folder.write_summary(with_status(summary, INTERRUPTED, "interrupted while rendering the report; "
                                                 f"`kafka-chaos report {folder.path}` renders it"))
        say(f"interrupted while rendering the report; render it with: kafka-chaos report {folder.path}",
            "yellow", err=True)
        return Exit(e.code)
    except Exception as e:
        say(f"warning: the report could not be rendered ({type(e).__name__}: {e}); "
            f"the verdict stands; retry with: kafka-chaos report {folder.path}", "yellow", err=True)
    return code


@main.command(epilog=exit_help(
    OK="every check held (with --partial, also when variants are incomplete)",
    USAGE="something is missing (spec.yaml, a variant's acks.parquet or log.parquet), or bad input; nothing "
          "is rewritten",
    INFRA="something is damaged (the message names the file), or Spark failed, or a verdict neither pass nor "
          "fail; nothing is rewritten when damaged"))
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--spark-master", default=None, help="Spark master for the analysis (default local[*]).")
@click.option("--partial", is_flag=True,
              help="Analyse the variants whose files are complete and mark the others incomplete "
                   "(without it, a missing file or spec.yaml is an error and nothing is rewritten).")
def analyze(run_dir: Path, spark_master: str | None, partial: bool) -> None:
    """Re-run the analysis of a stored RUN_DIR from its Parquet files (no broker needed).

    Needs spec.yaml (expectations and allow lists), <variant>/acks.parquet and
    <variant>/log.parquet; rewrites summary.json, index.html and anomalies/.
    """
    from . import signals
    from .preflight import check_spark_master, stored_spec
    from .run import reanalyze
    from .runfolder import RunFolder

    signals.install()  # a Ctrl-C is exit 130 in one line; during rendering it marks the summary interrupted
    folder = RunFolder(run_dir)
    try:
        check_spark_master(spark_master)
        spec = stored_spec(folder, partial)
        with console.status("analysing with Spark"):
            summary = reanalyze(folder, spec, spark_master, partial)
    except Exception as e:
        _fail(e)
    print_summary(summary, folder.path)
    _exit(_publish(folder, run_dir.resolve().parent, exit_for_verdict(summary["verdict"], partial)))


@main.command()
@click.argument("run_dir", required=False, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--index", "index_dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Rebuild DIR/index.html, the list of every run in DIR with the trend across runs.")
def report(run_dir: Path | None, index_dir: Path | None) -> None:
    """Re-render RUN_DIR/index.html from its summary.json, faults.jsonl and anomalies (no Spark needed).

    A series folder of --repeat (it holds aggregate.json) gets its aggregate computed again from its
    runs' summaries (when they are all still there) and its page re-rendered."""
    from . import signals
    from .report import write_aggregate_report, write_index, write_report
    from .runfolder import AGGREGATE, RunFolder, SeriesFolder

    signals.install()
    try:
        if (run_dir is None) == (index_dir is None):
            raise UsageError("give a RUN_DIR, or --index DIR")
        if index_dir is not None:
            say(f"index: {write_index(index_dir)}")
            return
        if (run_dir / AGGREGATE).exists():
            from .repeat import reaggregate

            reaggregate(SeriesFolder(run_dir))
            say(f"report: {write_aggregate_report(SeriesFolder(run_dir))}")
            return
        say(f"report: {write_report(RunFolder(run_dir))}")
    except Exception as e:
        _fail(e)


@main.command(epilog=exit_help(OK="the page is written", FAILED="", USAGE="a folder that is not a run, a page "
                                                                        "that is not ours where the page would go, "
                                                                        "or an --out that cannot be written",
                               INFRA="a summary.json that is damaged"))
@click.argument("runs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", "page", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The page to write (default: compare-<id>.html beside the first run, where the runs index "
                   "lists it).")
def compare(runs: tuple[Path, ...], page: Path | None) -> None:
    """Put runs side by side: the same variants' metrics from each RUN folder, differences highlighted.

    Writes one HTML page and prints the table. Compare two runs of a client upgrade, a settings change
    or another broker version: `kafka-chaos compare reports/RUN_A reports/RUN_B`."""
    from .report import write_compare
    from .runfolder import RunFolder, compare_path

    try:
        if len(runs) < 2:
            raise UsageError("compare: give at least two run folders")
        for path in runs:
            if not path.is_dir():
                raise UsageError(f"{path}: no such run folder")
        if page is not None:
            _writable_file(page, "--out")
        folders = [RunFolder(p) for p in runs]
        written, view = write_compare(folders, page or compare_path(runs[0].resolve().parent,
                                                                      [f.path.name for f in folders]))
    except Exception as e:
        _fail(e)
    say("runs compared: " + " · ".join(f"{i + 1} = {r['folder']}" for i, r in enumerate(view["runs"])))
    print_compare(view)
    say(f"page: {written}")


@main.command(epilog=exit_help(
    OK="a smaller schedule that still fails the check was found and written",
    FAILED="no smaller schedule failed the check within --max-runs (the recorded one is written as it was)",
    USAGE="RUN_DIR is not a failed run (or has no faults), or bad input; nothing is run",
    INFRA="a try's cluster, Spark or harness failed (the tries so far are kept)"))
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--experiment", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="The experiment file the run was made from (default: RUN_DIR/spec.yaml, unless it names a "
                   "program, library, file or address: a toxiproxy-server, a KAFKA_HOME, a Compose file, a "
                   "cluster's address, a client's *.location or plugin; those are taken only from --experiment).")
@click.option("--variant", default=None, help="The variant to shrink (default: the first that failed).")
@click.option("--check", "metric", default=None,
              help="The failed check that must keep failing, by metric (default: the variant's first failed check).")
@click.option("--max-runs", type=click.IntRange(1, 1000), default=30, show_default=True,
              help="At most this many tries (each one run of the variant).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"), show_default=True,
              help="Folder that receives each try's run folder and the shrunk schedule.")
@click.option("--spark-master", default=None, help="Spark master for the analysis (default local[*]).")
def shrink(run_dir: Path, experiment: Path | None, variant: str | None, metric: str | None, max_runs: int,
           out: Path, spark_master: str | None) -> None:
    """Find a smaller fault schedule that still fails a failed run's check.

    Runs RUN_DIR's failing variant again, alone, with the same seed and workload and subsets of the faults its
    faults.jsonl recorded (delta debugging: halves, complements, then finer splits), keeps the smallest
    subset that still fails the same check, and writes it as a replay file for `kafka-chaos run EXPERIMENT
    --replay FILE`. Each try is an ordinary run folder in --out. A try runs once: a failure that needs luck
    can make a subset look innocent.
    """
    from . import signals
    from . import shrink as shrinking
    from .cluster.kept import KeptCluster, topics_of
    from .engine.session import SharedSpark
    from .schedule import ScheduleError
    from .preflight import prepare
    from .runfolder import RunFolder

    folder = RunFolder(run_dir)
    try:
        summary = folder.read_summary()
        if summary is None:
            raise UsageError(f"{run_dir}: no summary.json: not a run folder")
        name, check = shrinking.target(summary, variant, metric, str(run_dir))
        rows = folder.read_faults()  # through the folder's reader (bounded, typed, inside it) before the schedule's
        if experiment is None:  # the folder's own spec: data, so nothing it names is run (shrink.folder_hazards)
            doc = folder.read_spec()
            if doc is None:
                raise UsageError(f"{folder.spec_path}: missing; give the experiment file with --experiment")
            hazards = shrinking.folder_hazards(doc)
            if hazards:
                raise UsageError(f"{folder.spec_path}: names {', '.join(hazards)}: shrink runs, loads or connects to "
                                 "nothing a run folder names; give the experiment file you trust with --experiment")
            experiment = folder.spec_path
        try:
            spec, recorded = prepare(experiment, summary.get("seed"), folder.faults_path, spark_master)
        except ScheduleError as e:
            raise UsageError(f"{folder.faults_path}: {e}") from None
        spec = spec.model_copy(update={"variants": [v for v in spec.variants if v.name == name]})
        if not spec.variants:
            raise UsageError(f"{experiment}: no variant {name} (the run's failing variant)")
        written = out / f"{folder.path.name}-{name}-shrunk.jsonl"
        _writable_file(written, "--out")
    except Exception as e:
        _fail(e)
    signals.install()
    _remove_stale_namespaces()
    seed = summary.get("seed", spec.seed)
    say(f"shrinking {len(recorded)} fault(s) of {name} (check {check} must keep failing), at most {max_runs} "
        "tries", "bold")
    tries = []
    spark = SharedSpark(spark_master, written.with_name(f"{written.stem}-spark.log"))  # one JVM for every try
    # one cluster for every try, restored between tries (its logs in <out>/<run>-<variant>-shrunk-clusters/)
    kept = KeptCluster(spec.cluster, written.with_name(f"{written.stem}-clusters"))

    def fails(subset) -> bool:
        tries.append(len(subset))
        heading = f"try {len(tries)} ({len(subset)} of {len(recorded)} faults): "
        folder_k, summary_k, failure, _ = _run_once(spec, sorted(subset, key=lambda f: (f.at, f.id)), out, seed,
                                                    None, spark_master, None, heading=heading, brief=True,
                                                    spark=spark, cluster=kept.get)
        if failure is not None:
            say(f"partial results of the try kept in {folder_k.path}", err=True)
            raise failure
        verdict_k = shrinking.still_fails(summary_k, name, check)
        say(f"  {'still fails' if verdict_k else 'passes'} {check} · {folder_k.path}")
        why = kept.restore(topics_of(summary_k), delete=summary_k.get("verdict") == PASS)
        if why is not None:
            say(f"  the cluster was not healthy after try {len(tries)}, {why}; the next try starts a fresh one",
                "yellow")
        return verdict_k

    try:
        found = shrinking.shrink(recorded, fails, max_runs)
    except Exception as e:
        _fail(e)
    finally:  # also on _fail's exit
        try:
            spark.stop()
        finally:
            kept.close()
    rows = shrinking.replay_rows(rows, name, {f.id for f in found.faults})
    written.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    kept = ", ".join(f"{f.kind} at {f.at:g} s" for f in sorted(found.faults, key=lambda f: f.at))
    how = "no single fault can be left out" if found.minimal else f"the budget of {max_runs} tries ended the search"
    say(f"{len(recorded)} fault(s) -> {len(found.faults)} in {found.runs} tries ({how}): {kept}", "bold")
    say(f"replay it with: kafka-chaos run {experiment} --replay {written}")
    _exit(Exit.OK if len(found.faults) < len(recorded) else Exit.FAILED)


def parse_budget(text: str) -> float:
    """`--budget`: 90s, 30m, 1h, 1h30m or a number of seconds -> seconds (more than 0, at most a week)."""
    import re

    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or match is None:
        raise UsageError(f"--budget {text!r}: give a duration such as 90s, 30m, 1h or 1h30m")
    h, m, sec = (float(g) if g else 0.0 for g in match.groups())
    seconds = h * 3600 + m * 60 + sec
    if not 0 < seconds <= 7 * 86400:
        raise UsageError(f"--budget {text!r}: must be more than 0 and at most a week (7 days)")
    return seconds


@main.command(epilog=exit_help(
    OK="no finding: every try that ran held its checks",
    FAILED="at least one finding (a try whose checks failed: its minimal experiment is in findings/<id>/)",
    USAGE="bad input: the experiment's explore: section, an option, or --resume on a folder that is not an "
          "exploration; nothing was started",
    INFRA="the cluster, Spark or the harness failed (3 tries in a row could not run, or the cluster could not "
          "start); what was learned is kept"))
@click.argument("experiment", required=False, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--budget", default=None, metavar="DURATION",
              help="Start no try after this long (90s, 30m, 1h30m; default 30m unless --tries is given). A finding "
                   "shown before then is still shrunk and rated: at most --shrink-runs + --rate-runs runs more.")
@click.option("--tries", "max_tries", type=click.IntRange(1, 1_000_000), default=None,
              help="Stop after this many tries (with --budget: whichever comes first).")
@click.option("--seed", type=click.IntRange(-(2**63), 2**63 - 1), default=None,
              help="The exploration's seed (default: the experiment's): with the try's number it fixes each try's "
                   "schedule, so an exploration is reproducible.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports"), show_default=True,
              help="Folder that receives the exploration folder <stamp>-<experiment>-explore-<id>/.")
@click.option("--resume", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Continue the exploration in this folder (its seed, its tries, corpus and findings). The "
                   "experiment is its own copy unless EXPERIMENT is given (needed when it names a program, a "
                   "KAFKA_HOME or an address: a folder's file is never trusted with those).")
@click.option("--keep-all", is_flag=True, help="Keep every try's whole run folder (default: a try without a "
                                                "finding is pruned to its summary, faults and spec).")
@click.option("--random", "unguided", is_flag=True,
              help="Draw every try fresh, never as a mutation of a try that showed something new: the baseline "
                   "the guidance is measured against (bench/explore.py --compare).")
@click.option("--rate-runs", type=click.IntRange(1, 100), default=5, show_default=True,
              help="Runs of a finding's minimal schedule that give its rate.")
@click.option("--shrink-runs", type=click.IntRange(1, 1000), default=16, show_default=True,
              help="At most this many runs to shrink a finding's schedule.")
@click.option("--spark-master", default=None, help="Spark master for the analysis (default local[*]).")
def explore(experiment: Path | None, budget: str | None, max_tries: int | None, seed: int | None, out: Path,
            resume: Path | None, keep_all: bool, unguided: bool, rate_runs: int, shrink_runs: int,
            spark_master: str | None) -> None:
    """Explore a fault space: run generated schedules on one cluster and keep whatever breaks.

    EXPERIMENT is an experiment file with an explore: section (the fault kinds a try may draw, ranges for
    their settings and targets, how many faults a try holds, the window they fall in, the try's size).
    Each try draws a schedule (fresh, or a mutation of an earlier try that showed an event never seen
    before), runs every variant under it and is judged as a run is. Tries that fail the same way are one
    finding; each new finding is shrunk to the fewest faults that still show it, run again for its rate,
    and written as an ordinary experiment (findings/<id>/experiment.yaml) that `kafka-chaos run` replays.
    Ctrl-C keeps what was learned; --resume continues.
    """
    from .explore.folder import ExplorationFolder
    from .report.render import known_shown
    from .explore.session import explore as exploring, start
    from .explore.check import check_explore
    from .preflight import prepare_clients
    from .terminal import ExploreProgress

    folder = None
    try:
        if experiment is None and resume is None:
            raise UsageError("give an EXPERIMENT with an explore: section, or --resume FOLDER")
        budget_s = parse_budget(budget) if budget is not None else (None if max_tries else 1800.0)
        if resume is not None:
            folder = ExplorationFolder.open(resume)
            facts = folder.facts()
            if seed is not None and seed != facts["seed"]:
                raise UsageError(f"--seed {seed}: {resume} explores with seed {facts['seed']}; a resumed "
                                 "exploration keeps its seed")
            if unguided and facts.get("guided", True):
                raise UsageError(f"--random: {resume} is a guided exploration; a resumed exploration keeps how it "
                                 "draws its tries")
            if experiment is None:
                from .shrink import folder_hazards
                from .yamlfile import load as load_yaml

                hazards = folder_hazards(load_yaml(folder.experiment_path) or {})
                if hazards:
                    raise UsageError(f"{folder.experiment_path}: names {', '.join(hazards)}: give the experiment "
                                     "file you trust: kafka-chaos explore EXPERIMENT --resume " + str(resume))
        path = experiment or folder.experiment_path
        spec = check_explore(path, spark_master)
        if folder is not None and spec.name != folder.facts()["experiment"]:
            raise UsageError(f"{path}: experiment {spec.name}, but {resume} explores {folder.facts()['experiment']}")
        _writable_dir(out)
        prepare_clients(spec, path)  # last: an install takes minutes, and bad input must not wait for it
    except Exception as e:
        _fail(e)
    _begin(spec)
    if folder is None:
        import yaml

        folder = start(spec, yaml.safe_dump(spec.public_dict(), sort_keys=False), out,
                       spec.seed if seed is None else seed, not unguided)
    limits = ([f"budget {budget_s / 60:g} min"] if budget_s else []) + ([f"{max_tries} tries"] if max_tries else [])
    say(f"exploring {spec.name}: {len(spec.variants)} variant(s), {len(spec.explore.kinds)} fault kind(s) · "
        f"{' or '.join(limits)} · {folder.path}", "bold")
    progress = ExploreProgress(budget_s, max_tries, time.monotonic)
    try:
        with progress.status:
            done = exploring(spec, folder, budget_s, max_tries, keep_all, rate_runs, shrink_runs, spark_master,
                             progress, progress.run)
    except BaseException as e:
        say(f"what was learned is kept in {folder.path}; continue with: kafka-chaos explore --resume {folder.path}",
            err=True)
        _fail(e)
    ran = len(done.tries)
    say(f"{ran} tries, {len(done.corpus.seen)} distinct events, {len(done.findings)} finding(s) · page: "
        f"{folder.report}", "bold")
    say(kinds_tried(done.tries, spec.explore.kinds))
    for f in done.findings.values():
        say(f"  {f['id']}: {' · '.join(f['signature'])}; replay: kafka-chaos run {folder.path / f['experiment']}")
    for ref, tries in known_shown(done.tries).items():
        say(f"  known bug {ref} (no finding: explore.known) shown by {len(tries)} tr{'y' if len(tries) == 1 else 'ies'}"
            f": {', '.join(str(t) for t in tries)}")
    _exit(Exit.FAILED if done.findings else Exit.OK)


def kinds_tried(tries: list[dict], kinds) -> str:
    """How many faults of each kind of the space the tries ran, those never drawn named: a space narrower than
    its file is said, not left to be noticed (the lost unflushed writes never ran in 42 tries before space._whole
    knew an optional whole number)."""
    counts = Counter(fault["kind"] for row in tries for fault in row["faults"])
    never = [kind for kind in kinds if not counts[kind]]
    return "faults tried by kind: " + ", ".join(f"{kind} {counts[kind]}" for kind in kinds) + \
        (f" (never drawn: {', '.join(never)})" if never and tries else "")


@main.command()
def doctor() -> None:
    """Show what is available (Tansu, Java, Spark, toxiproxy-server, Docker, KAFKA_HOME) and how to fix what is not.

    Exit 0 when the embedded default (local Tansu broker, embedded proxy, Spark) can run, 1 otherwise.
    """
    from .doctor import embedded_default_ready, run_checks

    checks = run_checks()
    print_checks(checks)
    ready = embedded_default_ready(checks)
    say("the embedded default can run" if ready else "the embedded default cannot run", None if ready else "bold red")
    _exit(Exit.OK if ready else Exit.FAILED)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8474, show_default=True, type=int)
def proxy(host: str, port: int) -> None:
    """Run the embedded Toxiproxy-compatible proxy on its own (for users without toxiproxy-server)."""
    from .proxy.server import serve

    try:
        serve(host, port, ready=lambda p: say(f"Toxiproxy API on http://{host}:{p} (Ctrl-C stops)"))
    except OSError as e:
        _fail(UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}"))
