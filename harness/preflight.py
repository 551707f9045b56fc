"""Everything checked before anything starts: the experiment file, a replayed schedule, what this
machine and the chosen backend can do, the Spark master. Every problem is bad input (exit 2)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from .exits import UsageError
from .faults.registry import KINDS
from .runfolder import RunFolder, RunFolderError
from .spec import (SECRET_KEY, ExperimentSpec, SpecError, load_spec, masked_selector, matrix_value, matrix_variants,
                   setting_text, validation_message)
from .clients import FOREIGN
from .workload import foreignenv
from .workload.clientenv import ClientEnvError, ensure
from .workload.javamember import member_settings

# A Spark master URL, the whole text in ASCII (re.match with "$" took "local\n", and \d takes "２").
SPARK_MASTER = re.compile(r"local(\[(\*|[0-9]+)(,[0-9]+)?\])?|spark://[\w.\-]+(:[0-9]+)?(,[\w.\-]+(:[0-9]+)?)*|yarn|"
                          r"k8s://\S+", re.ASCII)


def check_spark_master(master: str | None) -> None:
    """--spark-master of every command that takes it, before anything starts (a JVM would print a stack)."""
    if master is not None and not SPARK_MASTER.fullmatch(master):
        raise UsageError(f"--spark-master {master!r}: not a Spark master URL "
                         "(local, local[N], local[*], spark://HOST:PORT, yarn, k8s://...)")


def check(experiment: Path, seed: int | None, replay: Path | None, spark_master: str | None):
    """(spec, schedule) for `kafka-chaos run`, or SpecError / ScheduleError / UsageError: every check that
    installs nothing. The client versions are installed afterwards (prepare_clients), once the caller's own
    checks (run's --out) passed too: an install takes minutes and bad input must not wait for it."""

    from .schedule import ScheduleError, load, plan

    check_spark_master(spark_master)
    spec = load_spec(experiment)
    # librdkafka judges every variant's settings here, the harness's own librdkafka also for a variant that runs
    # another client version (whose own would need the install first); that version's child refuses what its
    # older librdkafka does not know when it starts.
    check_producer_configs(spec, experiment)
    check_consumer_configs(spec, experiment)
    try:  # planned here, so a schedule the cluster cannot take (overlapping broker faults) is bad input
        schedule = load(replay, spec) if replay is not None else plan(spec, spec.seed if seed is None else seed)
    except ScheduleError as e:
        raise ScheduleError(str(e) if replay is not None else f"{experiment}: {e}") from None
    if replay is not None:  # what the experiment file's faults are held to (their kind's problem)
        for fault in schedule:
            problem = KINDS[fault.kind].problem(spec)
            if problem:
                raise ScheduleError(f"{replay}: fault {fault.id}: {problem} (in {experiment})")
    kinds = {f.kind for f in (schedule if replay is not None else spec.faults)}
    check_cluster(spec, experiment, kinds, f"{replay or experiment}: faults")
    return spec, schedule


def check_cluster(spec: ExperimentSpec, experiment: Path, kinds: set[str], where: str) -> None:
    """The backend can inject these fault kinds (`where` names the field that asks for them), its section's
    inputs are right, and the variants' feature levels are the distribution's: SpecError otherwise."""
    from .cluster import input_problems, unsupported_faults

    cannot = unsupported_faults(spec.cluster, kinds)
    if cannot:
        raise SpecError(f"{where}: backend {spec.cluster.backend} with broker {spec.cluster.broker} "
                        f"cannot inject {', '.join(cannot)}")
    problems = input_problems(spec.cluster)
    if problems:
        raise SpecError("\n".join(f"{experiment}: {p}" for p in problems))
    check_features(spec, experiment)


def prepare(experiment: Path, seed: int | None, replay: Path | None, spark_master: str | None):
    """check(), then the client versions installed: for callers with no checks of their own after it."""
    spec, schedule = check(experiment, seed, replay, spark_master)
    prepare_clients(spec, experiment)
    return spec, schedule


def prepare_clients(spec: ExperimentSpec, path: Path) -> None:
    """Every client version the variants name is installed (once, into the cache) and answers as itself; a
    foreign implementation (harness/clients.py) also builds each variant's producer from its settings, connecting
    nowhere, and the consumer of its group's members when they run it (the Java client's): what it refuses is bad
    input, in its own words."""
    for version in sorted({spec.client_version(v) for v in spec.variants} - {None}):
        try:
            ensure(version)
        except ClientEnvError as e:
            raise SpecError(f"{path}: {e}") from None
    for i, variant in enumerate(spec.variants):
        library = spec.client_library(variant)
        if library is None or library[0] not in FOREIGN:
            continue
        try:
            env = foreignenv.ensure(*library)
        except ClientEnvError as e:
            raise SpecError(f"{path}: variants.{i} ({variant.name}): {e}") from None
        said = foreignenv.check_settings(env, spec.producer_config(variant))
        if said:
            raise SpecError(f"{path}: variants.{i}.producer ({variant.name}): {' '.join(library)} refuses it: {said}")
        group = spec.consumer_spec(variant)
        if spec.member_implementation(variant) is not None:  # its consumer group's members run it too
            settings = member_settings("127.0.0.1:9", "check", "check", group.strategy, group.group_protocol,
                                       group.batch, group.config)
            said = foreignenv.check_settings(env, settings, env.member)
            if said:
                raise SpecError(f"{path}: variants.{i}.consumer ({variant.name}): {' '.join(library)} refuses its "
                                f"member settings: {said}")


def check_features(spec: ExperimentSpec, path: Path) -> None:
    """The feature levels the variants set, judged by the Kafka distribution's own tool before the cluster
    starts (kafka-storage.sh answers offline): a feature it does not have, or a level it does not support,
    is bad input. What it cannot answer is left to the cluster, with a note naming each feature unchecked."""
    from .cluster.local import kafka_home, kafka_storage

    wanted = [(f"variants.{i}.features.{name} (variant {v.name})", name, level)
              for i, v in enumerate(spec.variants) for name, level in v.features.items()]
    if not wanted:
        return
    home = kafka_home(spec.cluster)  # input_problems found a distribution there

    def unchecked(why: str) -> None:
        spec.notes.append(f"{', '.join(where for where, _, _ in wanted)}: unchecked before the cluster starts "
                          f"({why})")

    code, out = kafka_storage(home, "version-mapping")
    # "transaction.version=2"; metadata.version's level is a release ("=27 (4.1-IV1)"), which no variant sets.
    levels = dict(re.findall(r"^([a-z][a-z0-9._-]*)=([0-9]+)$", out, re.M | re.ASCII)) if code == 0 else {}
    if not levels:
        return unchecked(f"{home}/bin/kafka-storage.sh version-mapping did not list the features: "
                         f"{_last_line(out) or f'exit status {code}'}")
    for where, name, _ in wanted:
        if name not in levels:
            raise SpecError(f"{path}: {where}: not a feature this Kafka ({home}) lets a variant set; allowed: "
                            f"{', '.join(sorted(levels))}")
    pairs = sorted({f"{name}={level}" for _, name, level in wanted})
    code, out = kafka_storage(home, "feature-dependencies", *(a for pair in pairs for a in ("--feature", pair)))
    if code == 0:
        return
    refused = re.search(r"Feature level ([0-9]+) is not supported for feature (\S+)", out)
    if refused is None:
        return unchecked(f"{home}/bin/kafka-storage.sh feature-dependencies said: "
                         f"{_last_line(out) or f'exit status {code}'}")
    where = next((w for w, n, lv in wanted if (n, lv) == (refused[2], int(refused[1]))), None)
    if where is None:
        return unchecked(f"kafka-storage.sh feature-dependencies said: {refused[0]}")
    raise SpecError(f"{path}: {where}: level {refused[1]} is not one this Kafka ({home}) supports (its default "
                    f"level is {levels[refused[2]]})")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def stored_spec(folder: RunFolder, partial: bool) -> ExperimentSpec | None:
    """The experiment a stored run was made from (its expectations and allow lists).

    Validated as written, without looking at this machine (environment, librdkafka): the run
    happened elsewhere perhaps. Missing: an error, or None with partial (fatal rules only).
    """
    if not folder.path.is_dir():
        raise RunFolderError(f"{folder.path}: no such folder")
    doc = folder.read_spec()
    if doc is None:
        if partial:
            return None
        raise RunFolderError(f"{folder.spec_path} is missing: it holds the expectations and allow lists "
                             "(analyse with --partial to judge by the fatal anomalies alone)")
    try:
        return ExperimentSpec.model_validate(doc, context={"stored": True})
    except Exception as e:
        message = validation_message(e, folder.spec_path)
        raise RunFolderError(message, damaged=True) from None


def _quiet_logger():
    """A logger for the throw-away clients that only let librdkafka judge settings: nothing is printed."""
    quiet = logging.getLogger("kafka-chaos.config-check")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return quiet


# librdkafka's warning for a setting of the other kind of client, which it ignores (it names the property by
# its canonical name: queue.buffering.max.ms for linger.ms).
IGNORED = re.compile(r"Configuration property (\S+) is a (consumer|producer) property and will be ignored")


class _Ignored(logging.Handler):
    """Collects the properties librdkafka says a throw-away client ignores (its CONFWARN log lines)."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        m = IGNORED.search(record.getMessage())
        if m:
            self.names.append(m.group(1))


def _ignored_settings(open_and_close, conf: dict) -> list[str]:
    """The properties of `conf` librdkafka says it ignores in the client `open_and_close(conf)` builds (a
    producer given a consumer's settings, ...), by librdkafka's names; none when it refuses `conf`."""
    logger = logging.getLogger(f"kafka-chaos.config-check.{id(conf)}")
    logger.propagate = False
    handler = _Ignored()
    logger.addHandler(handler)
    try:
        open_and_close({**conf, "bootstrap.servers": "127.0.0.1:9", "logger": logger})
    except Exception:  # noqa: BLE001 - refused settings are judged with the experiment's full settings
        return []
    finally:
        logger.removeHandler(handler)
    return handler.names


def check_producer_configs(spec: ExperimentSpec, path: Path) -> None:
    """Let librdkafka itself judge each variant's settings, without connecting anywhere.

    A variant written out in `variants` that it refuses is bad input; a combination of the `matrix`
    that it refuses (idempotence with acks=1, ...) is left out, with a note that says so."""
    from confluent_kafka import KafkaException, Producer

    quiet = _quiet_logger()
    from_matrix = {v["name"] for v in matrix_variants(spec.matrix)}
    refused: dict[str, str] = {}  # matrix variant -> librdkafka's reason
    kept = []
    for i, variant in enumerate(spec.variants):
        library = spec.client_library(variant)
        if library is not None and library[0] in FOREIGN:  # its own names, judged by it (prepare_clients)
            kept.append(variant)
            continue
        conf = {**spec.producer_config(variant), **spec.cluster.client_settings(),
                "bootstrap.servers": "127.0.0.1:9", "logger": quiet}
        try:
            Producer(conf)
        except (KafkaException, ValueError, TypeError) as e:
            detail = e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)
            if variant.name in from_matrix:
                spec.notes.append(f"matrix: {variant.name} skipped: librdkafka refuses it: {detail}")
                refused[variant.name] = detail
                continue
            raise SpecError(f"{path}: variants.{i}.producer ({variant.name}): librdkafka rejects it: {detail}") from None
        kept.append(variant)
        # cluster.client's settings are for every client; a producer's own must be a producer's.
        for name in _ignored_settings(lambda c: Producer(c).poll(0), spec.producer_config(variant)):
            where = (f"matrix.{name}" if name in spec.matrix else f"producer: {name}"
                     if name in spec.producer and name not in variant.producer else
                     f"variants.{i}.producer: {_as_given(name, spec.producer_config(variant))}")
            raise SpecError(f"{path}: {where}: a consumer setting, which librdkafka ignores in a producer (a "
                            "consumer group's settings go in its consumer section or consumer.config)")
    if not kept:
        first = next(iter(refused.items()))
        raise SpecError(f"{path}: matrix: librdkafka refuses every combination ({first[0]}: {first[1]})")
    # A value refused in every combination it is part of is a bad value, not a combination left out.
    combos = matrix_variants(spec.matrix)
    for key, values in spec.matrix.items():
        for n, value in enumerate(values, 1):
            names = [c["name"] for c in combos if setting_text(matrix_value(c, key)) == setting_text(value)]
            if all(name in refused for name in names):
                shown = f"value {n}" if SECRET_KEY.search(key) else repr(value)
                raise SpecError(f"{path}: matrix.{key}: {shown}: librdkafka refuses it in every combination "
                                f"({names[0]}: {refused[names[0]]})")
    # A rule that names, or selects nothing but, combinations left out would judge nothing (and the spec.yaml
    # written would name variants it does not have).
    for field in ("expectations", "allow"):
        for key in getattr(spec, field):
            chosen = spec.selected(key)
            if chosen and all(name in refused for name in chosen):
                raise SpecError(f"{path}: {field}.{masked_selector(key)}: {'selects' if '=' in key else 'names'} only "
                                f"{', '.join(chosen)}, which librdkafka refuses ({refused[chosen[0]]}); remove the "
                                "rule, or the combination from the matrix")
    spec.variants = kept


def check_consumer_configs(spec: ExperimentSpec, path: Path) -> None:
    """librdkafka's judgement of each consumer group's member settings (workload/member.py builds them)."""
    from confluent_kafka import Consumer, KafkaException

    from .workload.member import consumer_config

    quiet = _quiet_logger()
    for i, variant in enumerate(spec.variants):
        group = spec.consumer_spec(variant)
        if group is None or spec.member_implementation(variant) is not None:  # Java's: prepare_clients checks them
            continue
        conf = consumer_config({**spec.cluster.client_settings(), "bootstrap.servers": "127.0.0.1:9"}, "check",
                               "check", group.strategy, group.group_protocol, group.config)
        try:
            Consumer({**conf, "logger": quiet}).close()
        except (KafkaException, ValueError, TypeError, RuntimeError) as e:
            detail = e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)
            raise SpecError(f"{path}: variants.{i}.consumer ({variant.name}): librdkafka rejects its member "
                            f"settings: {detail}") from None
    # The members' own settings (not cluster.client's, which are for every client) must be a consumer's.
    librdkafka = [v for v in spec.variants if spec.member_implementation(v) is None]
    sections = [("consumer.config", spec.consumer if librdkafka or not spec.variants else None)] + [
        (f"variants.{i}.consumer.config", v.consumer) for i, v in enumerate(spec.variants) if v in librdkafka]
    for where, section in sections:
        if section is None or not section.config:
            continue
        alone = consumer_config({}, "check", "check", section.strategy, section.group_protocol, section.config)
        for name in _ignored_settings(lambda c: Consumer(c).close(), alone):
            raise SpecError(f"{path}: {where}: {_as_given(name, section.config)}: a producer setting, which "
                            "librdkafka ignores in a consumer group's member (a producer's settings go under producer)")


def _as_given(name: str, settings: dict) -> str:
    """A property librdkafka names, as the file gives it: itself, or librdkafka's name of an alias."""
    return name if name in settings else \
        f"{name} (librdkafka's name for {'one of ' if len(settings) > 1 else ''}{', '.join(settings)})"
