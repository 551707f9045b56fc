"""The run folder: the one place that knows its layout, and reads and writes every file in it.

    <out>/index.html                 the list of runs (report.render_index)
    <out>/<run-id>/spec.yaml         the experiment as run, with its seed (secrets masked)
                   summary.json      metrics, checks and verdict (summary.py)
                   faults.jsonl      one line per fault and variant: planned and actual times, outcome
                   index.html        the report
                   logs/             broker, proxy, librdkafka and harness logs (broker-N.log, toxiproxy.log,
                                     admin.log, producer-<variant>.log, consumer-<variant>-<member>.log,
                                     a local Kafka's kafka-N.properties and kafka-N/, compose.log,
                                     spark.log: the Spark JVM's output, harness-error.log)
                   kafka-data/       a local Kafka cluster's log.dirs, node-N/ per broker: kept only when the
                                     verdict is fail or `run --keep-data` asked (summary.json's broker_data)
                   <variant>/acks.parquet      the delivery log (workload/deliverylog.py)
                   <variant>/transactions.parquet  one row per transaction (transactional variants:
                                               workload/transactional.py)
                   <variant>/log.parquet/      the topic as read back (read_committed), one file per partition,
                                               _SUCCESS last
                   <variant>/read.json         the range the final read proved it covered: each partition's
                                               log start and end offsets, and whether the ends held still
                                               (engine/readback.final_read)
                   <variant>/log_read_uncommitted.parquet/  transactional variants: the same read with
                                               read_uncommitted (for the report)
                   <variant>/anomalies/<table>.parquet   one table per anomaly (analysis/anomalies.TABLES,
                                               and consumption.TABLES for a consumer group)
                   <variant>/sink.sqlite       consumer variants: the group's sink (workload/sink.py)
    <out>/<series-id>/aggregate.json  a series of repeated runs (--repeat), summarised (aggregate.py)
                      index.html      its report (the runs themselves are ordinary run folders in <out>)
                      spark.log       the series' Spark JVM
                      cluster-<id>/   the cluster the series keeps (cluster/kept.py; one per rebuild): its
                                      logs/ and kafka-data/ as a run's above; its runs' logs/ then hold only
                                      their clients' logs, and their summaries name it (`cluster_logs`)

A folder is data that arrives from elsewhere (a CI artifact, an attachment), never a program: every command
(analyze, report, compare, shrink) and open_run read its files through one reader here (read_spec,
read_summary, read_faults, read_read, SeriesFolder.read_aggregate), which opens a file only inside the
folder (no link leading out), only when it is a plain file within its bound (SPEC_BYTES, SUMMARY_BYTES,
FAULTS_BYTES and FAULT_LINES, AGGREGATE_BYTES, READ_BYTES), reads no more than that, and checks every field
it hands on against the shape the harness writes: a damaged file is RunFolderError (exit 3) naming the file
and the field, "<file>: <field path>: <what is wrong> (<what is allowed>)".

It is also the Python API for exploring runs in a notebook, as pandas DataFrames:

    from harness import open_run
    run = open_run("reports/20261121T101500Z-quickstart-1a2b3c")
    run.summary["verdict"], run.variants
    run.anomalies("idempotence-off", "jump_back_runs")   # also: run.log(v), run.acks(v), run.faults
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import uuid
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import yaml

from . import folder_schema, yamlfile
from .exits import Exit, HarnessError, one_line
from .folder_schema import AGGREGATE_RUNS, FAULT_LINES, said
from .formats import REQUIRED, json_object
from .spec import MAX_FAULTS, MAX_VARIANTS

SPEC, SUMMARY, FAULTS, REPORT, LOGS = "spec.yaml", "summary.json", "faults.jsonl", "index.html", "logs"
ERROR_LOG = "harness-error.log"  # under logs/: the traceback of a harness failure
LOG, ACKS, ANOMALIES, DONE = "log.parquet", "acks.parquet", "anomalies", "_SUCCESS"
TRANSACTIONS, LOG_UNCOMMITTED = "transactions.parquet", "log_read_uncommitted.parquet"
SINK = "sink.sqlite"
KAFKA_DATA = "kafka-data"
READ = "read.json"
AGGREGATE = "aggregate.json"


class RunFolderError(HarnessError):
    """A run folder that is missing something or holds a damaged file; str() names the file."""

    def __init__(self, message: str, damaged: bool = False):
        super().__init__(message)
        self.damaged = damaged  # True: a file is there but unreadable (exit 3); False: absent (exit 2)
        self.exit = Exit.INFRA if damaged else Exit.USAGE


def _read_problem(doc: dict, partitions: int | None) -> str:
    """What is wrong with a read.json ("" when nothing)."""
    if not isinstance(doc.get("complete"), bool):
        return "complete: not true or false"
    for key in ("start", "end"):
        x = doc.get(key)
        if not isinstance(x, list) or not all(isinstance(o, int) and not isinstance(o, bool) and 0 <= o < 2**63
                                              for o in x):
            return f"{key}: not a list of offsets (whole numbers from 0)"
    if len(doc["start"]) != len(doc["end"]) or (partitions is not None and len(doc["end"]) != partitions):
        return f"start and end must list every partition ({partitions if partitions is not None else 'as many'})"
    if any(s > e for s, e in zip(doc["start"], doc["end"])):
        return "a partition's start is beyond its end"
    return ""


def parquet_files(path: Path) -> list[str]:
    """A Parquet dataset's data files: the file itself, or the visible *.parquet files of a folder, sorted."""
    if path.is_file():
        return [str(path)]
    found = []
    for base, dirs, files in os.walk(path):  # never into a linked folder (rglob would follow it, loops included)
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        found += [str(Path(base) / f) for f in files if f.endswith(".parquet") and not f.startswith(("_", "."))]
    return sorted(found)


# A name a variant or a run folder can have (spec.py's names, and run ids made of them): one path component.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def entry_name(name, what: str, where: Path) -> str:
    """`name` when it can only name a folder right in `where`; RunFolderError (damaged) naming it otherwise."""
    if not isinstance(name, str) or not NAME.match(name):
        raise RunFolderError(f"{where}: {what} {str(name)[:100]!r} is not a {what} name (letters, digits, '.', '_', "
                             f"'-'; no path): refused, nothing outside the folder is opened", damaged=True)
    return name


def resolve_inside(root: Path, path: Path) -> Path:
    """`path` when, links followed, it stays in `root`; RunFolderError (damaged) naming it otherwise."""
    try:
        real, base = path.resolve(), root.resolve()
    except (OSError, RuntimeError) as e:  # RuntimeError: a symbolic link loop (Python 3.11)
        raise RunFolderError(f"{path}: a symbolic link that cannot be followed ({one_line(e)})",
                             damaged=True) from None
    if real != base and not real.is_relative_to(base):
        raise RunFolderError(f"{path}: leads out of the folder {root} (to {real}): refused, not opened", damaged=True)
    return path


# -- what each file of a folder may hold -------------------------------------------------------------------
# A run folder is data that arrives from elsewhere (a CI artifact, an attachment): each of its files is read
# within a size bound, and every field a reader takes from it is checked to have the shape the harness writes
# (folder_schema.py), so that a damaged or hostile file is one message naming the file and the field
# (RunFolderError, exit 3), never a traceback, a hang or a page of gigabytes.
#
# The bounds, from what the harness writes (the README's bounds: at most 20 variants, 10,000 faults a variant):
SPEC_BYTES = yamlfile.MAX_BYTES  # spec.yaml is an experiment file: 1 MiB
# summary.json: per variant about 3 KB of metrics and checks and a fault period (~250 bytes as written, indented)
# per fault, 2.5 MB at 10,000 faults; 20 variants 50 MB; and a warning (~150 bytes) per late fault, 30 MB more.
SUMMARY_BYTES = 128 << 20
# faults.jsonl: a line per fault and variant, about 400 bytes (an error or a deviation adds a few hundred):
# 200,000 lines at most (FAULT_LINES, from folder_schema), 128 MiB at 640 bytes a line; a line beyond 64 KiB is
# no line the harness wrote.
FAULTS_BYTES = 128 << 20
FAULT_LINE_BYTES = 64 << 10
# aggregate.json: an entry per run (about 250 bytes; --repeat runs at most 10,000) and per variant its
# statistics (~15 KB): about 3 MB at most (AGGREGATE_RUNS, from folder_schema).
AGGREGATE_BYTES = 16 << 20
READ_BYTES = 1 << 20  # read.json: two offsets per partition, 1,000 partitions at most: about 40 KB


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def _checked(shape, doc, path: Path) -> None:
    """RunFolderError (damaged) naming the file and the first field that `shape` (folder_schema) refuses."""
    why = folder_schema.problem(shape, doc)
    if why:
        raise RunFolderError(f"{path}: {why}", damaged=True)


def _parsed(path: Path, data: bytes, limit: int, what: str) -> dict:
    """A JSON file of the folder as an object (json_object: no NaN, no key twice); RunFolderError naming it."""
    try:
        return json_object(data.decode("utf-8"), limit=limit)
    except ValueError as e:  # UnicodeDecodeError too
        if str(e) == "not a JSON object":
            raise RunFolderError(f"{path}: not a {what} (a JSON object)", damaged=True) from None
        raise RunFolderError(f"{path}: unreadable ({one_line(e)})", damaged=True) from None


def _read_bounded(path: Path, limit: int, why: str) -> bytes | None:
    """RunFolder.read_bytes for a path already proven inside its folder."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # O_NONBLOCK: a FIFO opens, and is refused
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RunFolderError(f"{path}: unreadable ({e.strerror or e})", damaged=True) from None
    with os.fdopen(fd, "rb") as f:
        mode, size = (found := os.fstat(fd)).st_mode, found.st_size
        if not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise RunFolderError(f"{path}: {what}, not a file (a run folder's files are plain files)", damaged=True)
        if size > limit:
            raise RunFolderError(f"{path}: {size:,} bytes (at most {_size(limit)}: {why})", damaged=True)
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise RunFolderError(f"{path}: unreadable ({e.strerror or e})", damaged=True) from None
    if len(data) > limit:
        raise RunFolderError(f"{path}: grew beyond {_size(limit)} while read (at most {_size(limit)}: {why})",
                             damaged=True)
    return data


def _new_path(out: Path, name: str) -> Path:
    """<out>/<UTC stamp>-<name>-<6 hex>: sorts by time, never collides."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return out / f"{stamp}-{name}-{uuid.uuid4().hex[:6]}"


class RunFolder:
    def __init__(self, path: Path | str):
        self.path = Path(path)

    @classmethod
    def create(cls, out: Path, experiment: str) -> "RunFolder":
        folder = cls(_new_path(out, experiment))
        (folder.path / LOGS).mkdir(parents=True)
        return folder

    @property
    def run_id(self) -> str:
        return self.path.name

    # -- layout ------------------------------------------------------------------------
    @property
    def logs(self) -> Path:
        return self.path / LOGS

    @property
    def error_log(self) -> Path:
        return self.path / LOGS / ERROR_LOG

    # The cluster's files: its services' logs under logs/, a local Kafka's KRaft data under kafka-data/.
    def broker_log(self, broker: int) -> Path:
        """A broker process's output (Tansu or Kafka's stdout and stderr)."""
        return self.path / LOGS / f"broker-{broker}.log"

    def broker_config(self, broker: int) -> Path:
        """A local Kafka broker's generated server.properties."""
        return self.path / LOGS / f"kafka-{broker}.properties"

    def broker_log4j(self, broker: int) -> Path:
        """The folder of a local Kafka broker's own log4j files (its LOG_DIR)."""
        return self.path / LOGS / f"kafka-{broker}"

    def broker_data(self, broker: int) -> Path:
        """A local Kafka broker's log.dirs (KRaft metadata and the topic's segments)."""
        return self.kafka_data / f"node-{broker}"

    @property
    def kafka_data(self) -> Path:
        """A local Kafka cluster's data: removed once the run is judged (the final read saved the log), kept when
        its verdict is fail or `run --keep-data` asked (summary.json then says so: `broker_data`)."""
        return self.path / KAFKA_DATA

    def kept_data(self, summary: dict | None) -> Path | None:
        """Where the run's kept brokers' log folders are (None: it kept none): its own kafka-data/, or for a run of a
        series (a shrink's try) the kafka-data/ of the cluster it shared, which summary.json's broker_data names:
        looked for as <series>/cluster-<id>/kafka-data beside this folder (where the series put it, wherever the
        folders were moved since), never followed elsewhere."""
        if self.kafka_data.is_dir() or self.kafka_data.is_symlink():
            return self.inside(self.kafka_data)
        named = ((summary or {}).get("broker_data") or {}).get("path")
        if not isinstance(named, str):
            return None
        parts = Path(named).parts[-3:]
        if len(parts) < 3 or parts[2] != KAFKA_DATA or not parts[1].startswith("cluster-"):
            raise RunFolderError(f"{self.path / SUMMARY}: broker_data.path: {named[:200]!r} is not a kept cluster's "
                                 f"<series>/cluster-<id>/{KAFKA_DATA}", damaged=True)
        for name in parts[:2]:
            entry_name(name, "folder", self.path / SUMMARY)
        there = self.path.parent / Path(*parts)
        return resolve_inside(self.path.parent, there) if there.is_dir() else None

    def kept_brokers(self, data: Path) -> dict[int, Path]:
        """{broker: its log.dirs} of kept data (`data`/node-N/), each proven to stay in `data`."""
        found = {}
        for p in data.iterdir():
            m = re.fullmatch(r"node-(\d{1,3})", p.name)
            if m and p.is_dir():
                found[int(m[1])] = resolve_inside(data, p)
        return dict(sorted(found.items()))

    @property
    def spark_log(self) -> Path:
        """The Spark JVM's own output (JDK warnings, log4j errors): never the user's terminal."""
        return self.path / LOGS / "spark.log"

    @property
    def admin_log(self) -> Path:
        """librdkafka's log lines of the harness's admin client (topics, metadata, leaders)."""
        return self.path / LOGS / "admin.log"

    def fault_log(self, kind: str) -> Path:
        """The log of a fault kind's own client (a kind that runs one: faults/kinds/)."""
        return self.path / LOGS / f"{kind}.log"

    @property
    def network_log(self) -> Path:
        """With network namespaces: every ip, tc and nft command the run gave, and its outcome."""
        return self.path / LOGS / "network.log"

    @property
    def proxy_log(self) -> Path:
        """The Toxiproxy server's output (embedded or toxiproxy-server)."""
        return self.path / LOGS / "toxiproxy.log"

    @property
    def compose_log(self) -> Path:
        """`docker-compose logs` of the Compose cluster, taken as it stops."""
        return self.path / LOGS / "compose.log"

    def client_log(self, variant: str) -> Path:
        """librdkafka's log lines of a variant's producer."""
        return self.path / LOGS / f"producer-{variant}.log"

    def member_log(self, variant: str, member: str) -> Path:
        """A consumer group member's output (librdkafka's log lines, a failure's traceback)."""
        return self.path / LOGS / f"consumer-{variant}-{member}.log"

    def member_logs(self) -> list[Path]:
        """Every member_log of the run, of every variant."""
        return sorted((self.path / LOGS).glob("consumer-*.log"))

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def faults_path(self) -> Path:
        """faults.jsonl, proven to stay in the folder (what replays and shrink open is the folder's own file)."""
        return self.inside(self.path / FAULTS)

    @property
    def spec_path(self) -> Path:
        """spec.yaml, proven to stay in the folder."""
        return self.inside(self.path / SPEC)

    def inside(self, path: Path) -> Path:
        """`path` once it is proven to stay in this folder: no symbolic link on its way leads out of it or
        loops (RunFolderError, damaged, naming it). Every file the folder's own files name (a variant of
        summary.json or spec.yaml, a part of a dataset) is opened through here."""
        return resolve_inside(self.path, path)

    def variant_dir(self, variant: str) -> Path:
        """The variant's folder; RunFolderError (damaged) when `variant` is not a name a variant can have
        (an absolute path, a `..`, a separator) or its folder leads out of the run folder."""
        return self.inside(self.path / entry_name(variant, "variant", self.path))

    def acks_path(self, variant: str) -> Path:
        return self.inside(self.variant_dir(variant) / ACKS)

    def log_path(self, variant: str) -> Path:
        return self.inside(self.variant_dir(variant) / LOG)

    def transactions_path(self, variant: str) -> Path:
        return self.inside(self.variant_dir(variant) / TRANSACTIONS)

    def read_path(self, variant: str) -> Path:
        return self.inside(self.variant_dir(variant) / READ)

    def uncommitted_log_path(self, variant: str) -> Path:
        return self.inside(self.variant_dir(variant) / LOG_UNCOMMITTED)

    def sink_path(self, variant: str) -> Path:
        return self.inside(self.variant_dir(variant) / SINK)

    def table_path(self, variant: str, table: str) -> Path:
        return self.inside(self.variant_dir(variant) / ANOMALIES / f"{table}.parquet")

    def parquet_files(self, path: Path) -> list[str]:
        """A dataset's data files (parquet_files), each proven to stay in the folder."""
        return [str(self.inside(Path(f))) for f in parquet_files(path)]

    def read_bytes(self, path: Path, limit: int, why: str) -> bytes | None:
        """The bytes of one of the folder's files, None when it is absent. Opened only once inside() proved that
        no link on its way leads out, only when it is a plain file (a FIFO would block, a device never end) of at
        most `limit` bytes (`why`: where the bound comes from), and read at most limit + 1 bytes: a file that
        grows meanwhile is refused, never followed. RunFolderError (damaged) naming the file otherwise."""
        return _read_bounded(self.inside(path), limit, why)

    # -- spec, summary, faults, report ---------------------------------------------------
    def write_spec(self, doc: dict) -> None:
        _write_atomic(self.path / SPEC, yaml.safe_dump(doc, sort_keys=False))

    def read_spec(self) -> dict | None:
        """spec.yaml as a mapping (None when absent), read like an experiment file (yamlfile: 1 MiB, no key
        twice, no alias bomb); the fields read without ExperimentSpec (variants, their names and producer
        settings) checked. RunFolderError (damaged) naming the file and the field otherwise."""
        path = self.spec_path
        data = self.read_bytes(path, SPEC_BYTES, "an experiment file")
        if data is None:
            return None
        try:
            doc = yamlfile.loads(data.decode("utf-8"))
        except ValueError as e:  # YamlError, UnicodeDecodeError
            raise RunFolderError(f"{path}: unreadable ({one_line(e)})", damaged=True) from None
        if not isinstance(doc, dict):
            raise RunFolderError(f"{path}: not an experiment (a YAML mapping)", damaged=True)
        _checked(folder_schema.SPEC_FIELDS, doc, path)
        return doc

    def write_summary(self, summary: dict) -> None:
        """Atomically, so a reader never sees half a summary."""
        _write_atomic(self.path / SUMMARY, json.dumps(summary, indent=2) + "\n")

    def read_summary(self) -> dict | None:
        """summary.json (None when absent): at most SUMMARY_BYTES, each variant a folder name, and every field a
        reader takes (the tables, the report, compare, the aggregate, shrink) of the shape the harness writes.
        RunFolderError (damaged) naming the file and the field otherwise."""
        path = self.path / SUMMARY
        data = self.read_bytes(path, SUMMARY_BYTES, f"{MAX_VARIANTS} variants of {MAX_FAULTS:,} faults")
        if data is None:
            return None
        doc = _parsed(path, data, SUMMARY_BYTES, "kafka-chaos summary")
        variants = doc.get("variants", {})
        if isinstance(variants, dict):  # each a folder of this run: a name, never a path (before its fields)
            for name in variants:
                entry_name(name, "variant", path)
        _checked(folder_schema.SUMMARY, doc, path)
        return doc

    def append_faults(self, records: list[dict]) -> None:
        with open(self.faults_path, "a") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)

    def read_faults(self) -> list[dict]:
        """faults.jsonl's rows ([] when absent), by variant and planned time: at most FAULT_LINES lines (counted
        before any is parsed) and FAULTS_BYTES, a line at most FAULT_LINE_BYTES, each row's fields of the shape
        the harness writes (times finite and within a day), at most MAX_FAULTS rows a variant and MAX_VARIANTS
        variants. RunFolderError (damaged) naming the file, the line and the field otherwise."""
        path = self.faults_path
        data = self.read_bytes(path, FAULTS_BYTES, f"{FAULT_LINES:,} lines")
        if data is None:
            return []
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        if lines > FAULT_LINES:
            raise RunFolderError(f"{path}: {lines:,} lines (at most {FAULT_LINES:,}: a line per fault and variant, "
                                 f"{MAX_FAULTS:,} faults a variant, {MAX_VARIANTS} variants)", damaged=True)
        rows = []
        for n, raw in enumerate(data.split(b"\n"), 1):
            if len(raw) > FAULT_LINE_BYTES:
                raise RunFolderError(f"{path}:{n}: {len(raw):,} bytes (a line is at most {_size(FAULT_LINE_BYTES)}; "
                                     "the harness writes about 400 bytes a fault)", damaged=True)
            if not raw.strip():
                continue
            try:
                row = json_object(raw.decode("utf-8"), limit=None)
            except ValueError as e:  # UnicodeDecodeError too
                raise RunFolderError(f"{path}:{n}: not a JSON object line ({one_line(e)})", damaged=True) from None
            _checked(folder_schema.FAULT_ROW, row, Path(f"{path}:{n}"))
            rows.append(row)
        per_variant = Counter(str(r.get("variant", "")) for r in rows)
        if len(per_variant) > MAX_VARIANTS:
            raise RunFolderError(f"{path}: variant: {len(per_variant):,} variants (at most {MAX_VARIANTS})",
                                 damaged=True)
        variant, most = max(per_variant.items(), key=lambda kv: kv[1], default=("", 0))
        if most > MAX_FAULTS:
            raise RunFolderError(f"{path}: variant: {said(variant)} has {most:,} faults (at most {MAX_FAULTS:,} a "
                                 "variant)", damaged=True)
        return sorted(rows, key=lambda r: (str(r.get("variant", "")), _number(r.get("planned_at")),
                                           _number(r.get("id"))))

    def refuse_links_outside(self) -> None:
        """RunFolderError (damaged) naming the first symbolic link that leads out of the folder or nowhere:
        a folder that `analyze` rewrites must not let it write, or delete, anything elsewhere."""
        links = self.links_outside()
        if links:
            raise RunFolderError(f"{links[0]}: a symbolic link leading out of the run folder; analyze rewrites the "
                                 "folder and will not write or delete through it", damaged=True)

    def links_outside(self) -> list[str]:
        """Symbolic links in the folder that lead outside it (or nowhere), as "link -> target" texts."""
        root = self.path.resolve()
        found = []
        for base, dirs, files in os.walk(self.path):  # does not follow links into folders
            for name in dirs + files:
                path = Path(base) / name
                if path.is_symlink():
                    try:
                        target = path.resolve()
                        away = not target.is_relative_to(root) or not target.exists()
                    except (OSError, RuntimeError):  # RuntimeError: a link loop (Python 3.11)
                        away = True
                    if away:
                        found.append(f"{path} -> {os.readlink(path)}")
        return found

    def write_report(self, html: str) -> Path:
        _write_atomic(self.report, html)
        return self.report

    # -- variants ------------------------------------------------------------------------
    def variants(self) -> list[str]:
        """Variant names: the spec's, in its order, else the folders that hold a delivery log."""
        spec = self.read_spec()
        if spec and isinstance(spec.get("variants"), list):
            return [v["name"] for v in spec["variants"] if isinstance(v, dict) and "name" in v]
        return sorted(p.parent.name for p in self.path.glob(f"*/{ACKS}"))

    def missing(self, variant: str) -> str:
        """Why the variant cannot be analysed ("" when its files are all there)."""
        acks, log = self.acks_path(variant), self.log_path(variant)
        if not acks.exists():
            return f"{acks} is missing"
        if not log.exists():
            return f"{log} is missing (the final read did not happen)"
        if log.is_dir() and not (log / DONE).exists():
            return f"{log} is incomplete (no {DONE}: the final read did not finish)"
        return ""

    def analysis_input(self, variant: str) -> tuple[list[str], list[str]]:
        """(log files, delivery-log files) of a variant; RunFolderError when they are not all there."""
        why = self.missing(variant)
        if why:
            raise RunFolderError(why)
        return self.parquet_files(self.log_path(variant)), self.parquet_files(self.acks_path(variant))

    def transactions_input(self, variant: str) -> list[str]:
        """The transactions log's files of a variant (none for a variant without transactions)."""
        path = self.transactions_path(variant)
        return self.parquet_files(path) if path.exists() else []

    def write_read(self, variant: str, doc: dict) -> None:
        _write_atomic(self.read_path(variant), json.dumps(doc) + "\n")

    def read_read(self, variant: str, partitions: int | None = None) -> dict | None:
        """What the final read proved (final_read's record), or None when the folder has none (a run of an
        older release: its read is not known to have reached the end). RunFolderError when it is damaged."""
        path = self.read_path(variant)
        data = self.read_bytes(path, READ_BYTES, "two offsets for each of 1,000 partitions")
        if data is None:
            return None
        doc = _parsed(path, data, READ_BYTES, "final read's record")
        problem = _read_problem(doc, partitions)
        if problem:
            raise RunFolderError(f"{path}: {problem}", damaged=True)
        return doc

    def uncommitted_input(self, variant: str) -> list[str]:
        """The read_uncommitted read's files of a transactional variant (none without one). A read that did not
        finish (no _SUCCESS) is damaged: the run writes it before the analysis."""
        path = self.uncommitted_log_path(variant)
        if not path.exists():
            return []
        if path.is_dir() and not (path / DONE).exists():
            raise RunFolderError(f"{path} is incomplete (no {DONE}: the read_uncommitted read did not finish)",
                                 damaged=True)
        return self.parquet_files(path)

    def read_dataset(self, path: Path, what: str):
        """A dataset of the folder ("acks", "log": formats.SCHEMAS) as one pyarrow Table, each of its files
        read and required to hold the format's columns: RunFolderError naming the first that is damaged or
        from elsewhere (never a pyarrow error, never foreign rows mixed in)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not path.exists():
            raise RunFolderError(f"{path} is missing")
        tables, first = [], None  # first: the file the others' columns must match
        for f in self.parquet_files(path):
            try:
                table = pq.read_table(f)
            except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
                raise RunFolderError(f"{f}: not a readable Parquet file ({one_line(e)})", damaged=True) from None
            missing = [c for c in REQUIRED[what] if c not in table.schema.names]
            if missing:
                raise RunFolderError(f"{f}: no column {missing[0]!r} (it holds {', '.join(REQUIRED[what])}): "
                                     "not a file of this run", damaged=True)
            if tables and table.schema != tables[0].schema:  # one dataset, one writer, one schema
                raise RunFolderError(f"{f}: its columns differ from those of {Path(first).name} beside it "
                                     "(a file from elsewhere?)", damaged=True)
            first = first or f
            tables.append(table)
        if not tables:
            raise RunFolderError(f"{path}: holds no Parquet file", damaged=True)
        return pa.concat_tables(tables)

    def read_transactions(self, variant: str):
        """The transactions log as a pyarrow Table, or None (no transactions in this variant)."""
        import pyarrow.parquet as pq

        path = self.transactions_path(variant)
        if not path.exists():
            return None
        try:
            return pq.read_table(path)
        except (OSError, ValueError) as e:
            raise RunFolderError(f"{path}: unreadable Parquet ({one_line(e)})", damaged=True) from None

    def uncommitted_records(self, variant: str) -> int | None:
        """Records of the read_uncommitted read (from the files' footers), or None when there is none."""
        import pyarrow.parquet as pq

        path = self.uncommitted_log_path(variant)
        if not path.exists():
            return None
        try:
            return sum(pq.ParquetFile(f).metadata.num_rows for f in self.parquet_files(path))
        except (OSError, ValueError) as e:
            raise RunFolderError(f"{path}: unreadable Parquet ({one_line(e)})", damaged=True) from None

    def log_ends(self, variant: str) -> dict[int, int]:
        """{partition: last offset read + 1} of the final read (0 for a partition with no record)."""
        import pyarrow.parquet as pq

        ends: dict[int, int] = {}
        for path in self.parquet_files(self.log_path(variant)):
            last = pq.read_table(path, columns=["partition", "offset"]).group_by("partition").aggregate(
                [("offset", "max")])
            for p, o in zip(last.column("partition").to_pylist(), last.column("offset_max").to_pylist()):
                ends[p] = max(ends.get(p, 0), o + 1)
        return ends

    def read_sink(self, variant: str) -> dict | None:
        """A consumer variant's sink as pandas DataFrames (processed, events, positions), or None without one."""
        import sqlite3

        import pandas as pd

        path = self.sink_path(variant)
        if not path.exists():
            return None
        try:
            db = sqlite3.connect(path)
            try:
                return {t: pd.read_sql_query(f"SELECT * FROM {t}", db) for t in ("processed", "events", "positions")}
            finally:
                db.close()
        except (sqlite3.Error, pd.errors.DatabaseError) as e:
            raise RunFolderError(f"{path}: unreadable SQLite ({one_line(e)})", damaged=True) from None

    def write_tables(self, variant: str, tables: dict) -> None:
        """Anomaly tables (name -> pyarrow Table), one Parquet file each, replacing any earlier ones."""
        import shutil

        import pyarrow.parquet as pq

        folder = self.variant_dir(variant) / ANOMALIES
        if folder.is_symlink():  # never delete what a link points at
            folder.unlink()
        elif folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for name, table in tables.items():
            pq.write_table(table, folder / f"{name}.parquet")

    def read_table(self, variant: str, table: str):
        """An anomaly table as a pyarrow Table, or None when the analysis did not write it."""
        import pyarrow.parquet as pq

        path = self.table_path(variant, table)  # a file; earlier releases wrote a folder of that name
        if not path.exists():
            return None
        try:
            return pq.read_table(path)
        except (OSError, ValueError) as e:
            raise RunFolderError(f"{path}: unreadable Parquet ({one_line(e)})", damaged=True) from None


class SeriesFolder:
    """<out>/<stamp>-<experiment>-repeat-<id>/: the aggregate of repeated runs and its report."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    @classmethod
    def create(cls, out: Path, experiment: str) -> "SeriesFolder":
        folder = cls(_new_path(out, f"{experiment}-repeat"))
        folder.path.mkdir(parents=True)
        return folder

    @property
    def series_id(self) -> str:
        return self.path.name

    @property
    def spark_log(self) -> Path:
        """The output of the series' Spark JVM (one for every run)."""
        return self.path / "spark.log"

    @property
    def aggregate_path(self) -> Path:
        return self.path / AGGREGATE

    @property
    def report(self) -> Path:
        return self.path / REPORT

    def write_aggregate(self, doc: dict) -> None:
        _write_atomic(self.aggregate_path, json.dumps(doc, indent=2) + "\n")

    def read_aggregate(self) -> dict:
        """aggregate.json: at most AGGREGATE_BYTES, every field the report takes of the shape the harness
        writes (RunFolderError naming the file and the field otherwise; exit 2 when it is absent)."""
        path = resolve_inside(self.path, self.aggregate_path)
        data = _read_bounded(path, AGGREGATE_BYTES, f"{AGGREGATE_RUNS:,} runs")
        if data is None:
            raise RunFolderError(f"{path} is missing")
        doc = _parsed(path, data, AGGREGATE_BYTES, "kafka-chaos aggregate")
        _checked(folder_schema.AGGREGATE_FIELDS, doc, path)
        return doc

    def write_report(self, html: str) -> Path:
        _write_atomic(self.report, html)
        return self.report

    def run_folder(self, run) -> RunFolder:
        """One run of the series (an entry of aggregate.json's runs), a folder beside this one."""
        if not isinstance(run, dict):
            raise RunFolderError(f"{self.aggregate_path}: a run entry that is not an object", damaged=True)
        name = entry_name(run.get("run_id"), "run_id", self.aggregate_path)
        return RunFolder(resolve_inside(self.path.parent, self.path.parent / name))

    def run_summaries(self, doc: dict) -> list[dict]:
        """The summaries of the series' runs, read from their folders beside this one (for re-aggregating)."""
        out = []
        for run in doc.get("runs", []):
            summary = self.run_folder(run).read_summary()
            if summary is not None:
                out.append(summary)
        return out


def _entries(out: Path, marker: str) -> list[Path]:
    """The folders of `out` holding `marker` whose names a run or a series can have and that stay in `out`
    (a name that is not one, a link leading elsewhere: not ours, left out)."""
    found = []
    for p in sorted(out.glob(f"*/{marker}")):
        try:
            entry_name(p.parent.name, "run", out)
            resolve_inside(out, p)
        except RunFolderError:
            continue
        found.append(p.parent)
    return found


def series_in(out: Path) -> list[SeriesFolder]:
    """The series of repeated runs in an --out folder (those with an aggregate.json)."""
    return [SeriesFolder(p) for p in _entries(out, AGGREGATE)]


def runs_in(out: Path) -> list[RunFolder]:
    """The run folders of an --out folder (those with a summary.json)."""
    return [RunFolder(p) for p in _entries(out, SUMMARY)]


def index_path(out: Path) -> Path:
    return out / REPORT


# How a runs index the harness wrote is told from any other page (the title: releases before the mark).
INDEX_MARKS = ('<meta name="generator" content="kafka-chaos">', "<title>kafka-chaos runs</title>")


def _refuse_foreign(path: Path) -> None:
    """RunFolderError (exit 2) unless `path` is absent or a page the harness wrote (never written over)."""
    if path.exists() or path.is_symlink():
        try:  # O_NONBLOCK: a FIFO there opens at once (and is not a page of ours), never waits for a writer
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as f:
                plain = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
                head = f.read(4096).decode("utf-8", "replace") if plain else ""
        except OSError as e:
            raise RunFolderError(f"{path}: cannot be read ({one_line(e)}); not overwritten") from None
        if path.is_symlink() or not any(mark in head for mark in INDEX_MARKS):
            raise RunFolderError(f"{path}: not a page kafka-chaos wrote; not overwritten")


def compare_path(out: Path, run_ids: list[str]) -> Path:
    """Where `kafka-chaos compare` writes the page of these runs, by default: beside the runs index."""
    digest = hashlib.sha1("\n".join(run_ids).encode()).hexdigest()[:8]
    return out / f"compare-{digest}.html"


def compare_pages(out: Path) -> list[str]:
    """The comparison pages of an --out folder (compare-*.html the harness wrote), by name."""
    found = []
    for p in sorted(out.glob("compare-*.html")):
        try:
            _refuse_foreign(p)
        except RunFolderError:
            continue
        found.append(p.name)
    return found


def write_page(path: Path, html: str) -> Path:
    """A page of the harness's (a comparison) at `path`, never over a page someone else wrote."""
    _refuse_foreign(path)
    _write_atomic(path, html)
    return path


def write_runs_index(out: Path, html: str) -> Path:
    """<out>/index.html, the list of runs: only in a folder that holds runs, and only over a page of ours
    (RunFolderError, exit 2, naming the folder or the page otherwise: `report --index /` writes nothing)."""
    if not runs_in(out) and not series_in(out):
        raise RunFolderError(f"{out}: holds no run (no folder with a summary.json); the runs index is written "
                             "only into a folder of runs")
    path = index_path(out)
    _refuse_foreign(path)
    _write_atomic(path, html)
    return path


def _write_atomic(path: Path, text: str) -> None:
    """Write a new file beside the old one, then swap it in: a reader never sees half a file, and a link
    planted at the file's or a fixed temporary name is replaced, never written through."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise



def _number(x) -> float:
    return x if isinstance(x, (int, float)) else 0


class StoredRun:
    """A finished (or interrupted) run, as pandas DataFrames. Made by harness.open_run(path)."""

    def __init__(self, path: Path | str):
        self.folder = RunFolder(path)
        if not self.folder.path.is_dir():
            raise FileNotFoundError(f"{self.folder.path}: no such run folder")
        self.spec = self.folder.read_spec() or {}
        self.summary = self.folder.read_summary() or {}
        self.variants = self.folder.variants()

    def __repr__(self) -> str:
        return f"StoredRun({str(self.folder.path)!r}, verdict={self.summary.get('verdict')!r})"

    @property
    def faults(self):
        import pandas as pd

        return pd.DataFrame(self.folder.read_faults())

    def log(self, variant: str):
        """The topic as read back (columns: formats.LOG_SCHEMA)."""
        return self.folder.read_dataset(self.folder.log_path(variant), "log").to_pandas()

    def acks(self, variant: str):
        """The delivery log (columns: formats.ACKS_SCHEMA)."""
        return self.folder.read_dataset(self.folder.acks_path(variant), "acks").to_pandas()

    def transactions(self, variant: str):
        """The transactions log (columns: formats.TRANSACTIONS_SCHEMA); empty without transactions."""
        import pandas as pd

        table = self.folder.read_transactions(variant)
        return table.to_pandas() if table is not None else pd.DataFrame()

    def anomalies(self, variant: str, table: str):
        """One anomaly table (jump_back_runs, duplicates, lost, unseen, gaps, inconsistent_offsets,
        nonmonotonic_sends, rejected_visible, unexpected, aborted_reads, zombie_writes_visible, lost_committed,
        torn_transactions, partitions, series)."""
        from .analysis.anomalies import TABLES

        if table not in TABLES:
            raise KeyError(f"{table!r}: no such anomaly table; tables: {', '.join(TABLES)}")
        found = self.folder.read_table(variant, table)
        if found is None:
            raise FileNotFoundError(f"{self.folder.table_path(variant, table)}: not written "
                                    f"(run `kafka-chaos analyze {self.folder.path}`)")
        return found.to_pandas()


def open_run(path: Path | str) -> StoredRun:
    return StoredRun(path)
