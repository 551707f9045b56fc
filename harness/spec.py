"""Experiment files: YAML -> validated ExperimentSpec, with errors that name the field.

Every problem is reported as `FILE: FIELD.PATH: what is wrong (what is allowed)`
and raised as SpecError, which the CLI turns into exit code 2 before anything starts.
What depends on this machine (librdkafka's judgement of the settings, KAFKA_HOME, ...)
is checked in preflight.py, so a stored run's spec.yaml loads anywhere.
"""

from __future__ import annotations

import importlib.resources
import itertools
import math
import os
import re
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import (AfterValidator, BeforeValidator, Discriminator, Field, PlainSerializer,
                      PrivateAttr, Tag, ValidationError, ValidationInfo, field_validator, model_validator)

from . import yamlfile
from .clients import CONFLUENT_KAFKA, FOREIGN, LIBRARIES, Implementation, library_words
from .space import ExploreSpec, cross_check
from .faults.kind import BrokerTarget, FollowerTarget
from .faults.registry import KINDS, Fault
from .schema import MAX_SECONDS, Seconds, Strict, stored
from .analysis.metrics import BY_KEY, FATAL, KEYS
from .exits import UsageError
from .verdict import Rule, parse_rule

# A model check's message that names its field first: "expectations.a.dupes: unknown metric ..."
FIELD_FIRST = re.compile(r"^(expectations|faults|fault_window|topic|variants|cluster|workload|explore)(\.[^:]*)?: ")
# An expectation rule, parsed once when the file loads; written back as its text ("== 0").
RuleField = Annotated[Rule, BeforeValidator(parse_rule), PlainSerializer(str)]


class SpecError(UsageError):
    """A bad experiment file; str() is the full message for the user."""


# Bounds: what no experiment needs, refused before anything starts (README, "Bounds").
MAX_VARIANTS = 20
MAX_PARTITIONS = 1000
MAX_MESSAGES = 1_000_000_000  # per variant
MAX_FAULTS = 10_000  # planned faults per variant

ClientValue = Union[str, int, float, bool]
SHIPPED_COMPOSE_FILE = Path(str(importlib.resources.files("harness.compose") / "docker-compose.yml"))  # compose/
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
TOXIPROXY_URL = re.compile(r"(http://)?[A-Za-z0-9.\-\[\]:]+:[0-9]+/?")
# Settings whose value may be a secret, librdkafka's and Kafka broker properties alike: those librdkafka itself
# redacts in its logs (its _RK_SENSITIVE flag: sasl.username, sasl.password, sasl.oauthbearer.config, ssl.key.*,
# ssl_key, ssl.keystore.password, ssl.ca.pem), the OIDC client secret and assertion keys, those a Kafka broker
# hides in its own log (its PASSWORD type: ssl.keystore.key, ssl.keystore.certificate.chain,
# ssl.truststore.certificates, password.encoder.secret, delegation.token.secret.key, ...), and any name that
# says password, passphrase, secret, token, credential, private or jaas (sasl.jaas.config).
SECRET_KEY = re.compile(r"password|passphrase|secret|token|credential|private|jaas|\.pem$|^ssl[._]key([._]|$)|"
                        r"^ssl\.truststore\.certificates$|^sasl\.username$|^sasl\.oauthbearer\.config$", re.I)
MASK = "***"
BACKENDS = ("local", "compose", "external")


def _client_key(key: str) -> str:
    if key == "bootstrap.servers":
        raise ValueError("set by the backend; use cluster.bootstrap_servers (backend external)")
    if key == "transactional.id":  # librdkafka would make every client transactional, the harness none
        raise ValueError("a producer setting: set it under producer (or a variant's producer), where the harness "
                         "runs the transactional workload")
    if key in PRODUCER_OWNED:
        raise ValueError(f"set by the harness ({PRODUCER_OWNED[key]}); it cannot be changed here")
    if key in CONSUMER_OWNED and key != "client.id":  # the members' own replace the client's (member.consumer_config)
        raise ValueError(f"set by the harness for the consumer group's members ({CONSUMER_OWNED[key]}); it cannot "
                         "be changed here")
    return key


# The producers' settings the harness sets or needs as they are (workload/producer.client_conf), and why.
PRODUCER_OWNED = {
    "bootstrap.servers": "the cluster's; use cluster.bootstrap_servers (backend external)",
    "delivery.report.only.error": "the delivery log records every send's report, acknowledged ones too",
    "logger": "the client's log goes to the variant's client log",
}


def _producer_settings(settings: dict) -> dict:
    """librdkafka takes any transactional.id as text ("0", "false"): it must be a non-empty string here, or the
    harness and the client would disagree on whether the variant is transactional. Settings the harness owns
    (PRODUCER_OWNED) are refused."""
    for key in settings:
        if key in PRODUCER_OWNED:
            raise ValueError(f"{key}: set by the harness ({PRODUCER_OWNED[key]}); it cannot be changed here")
    tid = settings.get("transactional.id")
    if "transactional.id" in settings and (not isinstance(tid, str) or not tid.strip()):
        raise ValueError(f"transactional.id: {tid!r} is not a name; give a non-empty string (e.g. kc-tx-1), or "
                         "leave it out for a producer without transactions")
    return settings


ProducerSettings = Annotated[dict[str, Union[str, int, float, bool]], AfterValidator(_producer_settings)]

CLIENT_LIBRARY = CONFLUENT_KAFKA
# A client version, which reaches pip's command line: the whole text, ASCII digits only (re.match with "$" took
# "2.2.0\n", and Python's \d takes full-width digits, "２.２.０").
CLIENT_VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}")


def is_client_version(version) -> bool:
    """The one check of a client version (spec, matrix, clientenv's install and its answer)."""
    return isinstance(version, str) and CLIENT_VERSION.fullmatch(version) is not None


def _client_library(value: dict) -> dict:
    for key, version in value.items():
        if key not in LIBRARIES:
            raise ValueError(f"{key!r}: the client axis knows {library_words()} (harness/clients.py)")
        if not is_client_version(version):
            raise ValueError(f"{key}: {version!r} is not a version; give it quoted, as X.Y.Z (e.g. \"2.2.0\")")
    if len(value) > 1:
        raise ValueError(f"{', '.join(value)}: one client library per producer; give one")
    return value


# The client library a workload runs with, e.g. {confluent-kafka: "2.2.0"} (workload/clientenv.py) or
# {kafka-python: "3.0.12"} (workload/foreignproc.py); empty: the confluent-kafka the harness is installed with.
ClientLibrary = Annotated[dict[str, object], AfterValidator(_client_library)]


def _client_value(value: ClientValue, info: ValidationInfo) -> ClientValue:
    if stored(info):
        return value
    for var in ENV_REF.findall(str(value)):
        if var not in os.environ:
            raise ValueError(f"environment variable {var} is not set")
    return value


ClientSettings = dict[Annotated[str, AfterValidator(_client_key)], Annotated[ClientValue, AfterValidator(_client_value)]]
CLIENT_DOC = ("librdkafka settings for every client (security.protocol, sasl.*, ssl.*); values may name "
              "environment variables as ${NAME}")


def _broker_key(key: str) -> str:
    if not re.fullmatch(r"[a-z][a-z0-9._-]*", key):
        raise ValueError(f"{key!r} is not a Kafka broker property name (lower-case words joined by '.')")
    return key


# Kafka broker properties the harness's layout owns (cluster/kraft.py: the nodes, their listeners behind the
# proxies, the controller quorum, where the data lives), or that would contradict it: broker.id must equal
# node.id, security.inter.broker.protocol names a listener besides inter.broker.listener.name. A name ending in
# "." stands for every property it begins (listener.name.client.ssl.keystore.location). Kept here, not in
# cluster/, so that spec.py refuses them without importing the backends (which import spec.py).
BROKER_OWNED = ("process.roles", "node.id", "broker.id", "controller.quorum.voters",
                "controller.quorum.bootstrap.servers", "controller.listener.names", "inter.broker.listener.name",
                "security.inter.broker.protocol", "listeners", "advertised.listeners", "early.start.listeners",
                "listener.security.protocol.map", "listener.name.", "log.dirs", "log.dir", "metadata.log.dir")
BROKER_OWNED_WHY = ("set by the harness, which lays out the nodes, their listeners, the controller quorum and "
                    "where their data lives; any other Kafka broker property may be given")


def broker_owned(key: str) -> bool:
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in BROKER_OWNED)


def _broker_setting(key: str, info: ValidationInfo) -> str:
    if broker_owned(key) and not stored(info):
        raise ValueError(BROKER_OWNED_WHY)
    return key


def _broker_value(value: ClientValue) -> ClientValue:
    # The value is not repeated: it may be a secret (ssl.keystore.password); the message names its property.
    if isinstance(value, str) and any(c in value for c in "\\\n\r"):
        raise ValueError("a broker property value cannot hold a backslash or a line break")
    return value


# Kafka broker properties (server.properties) the local Kafka backend adds to its own (cluster/kraft.py), e.g.
# {log.flush.interval.messages: 1}; those of BROKER_OWNED are the harness's.
BrokerSettings = dict[Annotated[str, AfterValidator(_broker_key), AfterValidator(_broker_setting)],
                      Annotated[ClientValue, AfterValidator(_broker_value)]]
# Cluster-wide feature levels (kafka-features.sh), e.g. {eligible.leader.replicas.version: 0}.
FeatureLevels = dict[Annotated[str, AfterValidator(_broker_key)], Annotated[int, Field(ge=0, le=32767)]]


def _names_per_broker(items: list[str] | None, info: ValidationInfo) -> list[str] | None:
    brokers = info.data.get("brokers", 1)
    if items is not None and (len(items) != brokers or len(set(items)) != len(items)):
        raise ValueError(f"give {brokers} distinct names, one per broker")
    return items


def _toxiproxy_url(url: str | None) -> str | None:
    if url is not None and not TOXIPROXY_URL.fullmatch(url):  # match() with $ takes a trailing line break
        raise ValueError(f"{url!r} is not http://HOST:PORT")
    return url


def _proxy_choice(proxy: str) -> str:
    if not proxy.strip() or any(c in proxy for c in "\n\r\0"):
        raise ValueError(f"{proxy!r} is not embedded, toxiproxy or the path of a toxiproxy-server")
    return proxy


def _kafka_only(backend: str):
    def check(broker: str) -> str:
        if broker != "kafka":
            raise ValueError(f"{broker} runs only with backend local; backend {backend} needs broker: kafka")
        return broker
    return check


class BaseClusterSpec(Strict):
    """What every backend's section shares. Brokers are numbered 0..brokers-1 everywhere in the harness."""

    @property
    def proxy_names(self) -> list[str]:
        return getattr(self, "proxies", None) or [f"broker-{i}" for i in range(self.brokers)]

    @property
    def has_proxies(self) -> bool:
        return True

    def client_settings(self) -> dict:
        """The `client` settings with ${NAME} replaced from the environment."""
        return {k: ENV_REF.sub(lambda m: os.environ[m.group(1)], v) if isinstance(v, str) else v
                for k, v in self.client.items()}


class LocalClusterSpec(BaseClusterSpec):
    """Brokers started here as processes: Tansu (the embedded default) or Kafka KRaft nodes from KAFKA_HOME."""

    backend: Literal["local"] = "local"
    broker: Literal["tansu", "kafka"] = "tansu"
    brokers: Annotated[int, Field(ge=1, le=9)] = 1
    kafka_home: str | None = Field(None, description="broker kafka: Kafka distribution (default $KAFKA_HOME)")
    proxy: Annotated[str, AfterValidator(_proxy_choice)] = Field(
        "embedded", description="the Toxiproxy server in front of every broker: embedded (the default, the "
                                "harness's own), toxiproxy (a real toxiproxy-server from $TOXIPROXY_SERVER or PATH), "
                                "or the path of a toxiproxy-server")
    client: ClientSettings = Field(default_factory=dict, description=CLIENT_DOC)
    broker_config: BrokerSettings = Field(default_factory=dict, description="broker kafka: Kafka broker "
                                          "properties added to every node's server.properties")
    network: Literal["loopback", "namespaces"] = Field(
        "loopback", description="broker kafka: loopback (every node on 127.0.0.1), or namespaces (root only: "
                                "each node in a network namespace of its own, for the packet-level faults and "
                                "one-way isolation)")

    @field_validator("network")
    @classmethod
    def _namespaces_for_kafka(cls, network: str, info: ValidationInfo) -> str:
        if network == "namespaces" and info.data.get("broker") != "kafka":
            raise ValueError("network namespaces runs Apache Kafka nodes; use broker: kafka")
        return network

    @field_validator("broker_config")
    @classmethod
    def _kafka_config(cls, config: dict, info: ValidationInfo) -> dict:
        if config and info.data.get("broker") == "tansu":
            raise ValueError("Tansu takes no Kafka broker properties; use broker: kafka")
        return config

    @field_validator("brokers")
    @classmethod
    def _one_tansu(cls, brokers: int, info: ValidationInfo) -> int:
        if info.data.get("broker") == "tansu" and brokers != 1:
            # Tansu's memory storage is per process: several would be separate clusters.
            raise ValueError("broker tansu runs exactly 1 broker (memory storage is not shared); use brokers: 1")
        return brokers


class ComposeClusterSpec(BaseClusterSpec):
    """The Apache Kafka cluster of a Compose file behind its Toxiproxy container."""

    backend: Literal["compose"]
    broker: Annotated[str, AfterValidator(_kafka_only("compose"))] = "kafka"
    brokers: Annotated[int, Field(ge=1, le=9)] = 1
    compose_file: str | None = Field(None, description="the Compose file (default: the one shipped with the "
                                                        "harness); a relative path starts at the experiment's folder")
    services: Annotated[list[str] | None, AfterValidator(_names_per_broker)] = Field(
        None, description="service of broker i (default kafka-<i+1>)")
    toxiproxy_url: Annotated[str | None, AfterValidator(_toxiproxy_url)] = Field(
        None, description="Toxiproxy API (default http://127.0.0.1:8474)")
    proxies: Annotated[list[str] | None, AfterValidator(_names_per_broker)] = Field(
        None, description="Toxiproxy proxy of broker i (default broker-<i>)")
    bootstrap_servers: str | None = Field(None, description="where clients reach the proxies (default: their "
                                                            "listen addresses)")
    client: ClientSettings = Field(default_factory=dict, description=CLIENT_DOC)

    @property
    def compose_path(self) -> Path:
        return Path(self.compose_file) if self.compose_file else SHIPPED_COMPOSE_FILE


class ExternalClusterSpec(BaseClusterSpec):
    """A cluster the harness did not start, reached at bootstrap_servers; faults only through its Toxiproxy."""

    backend: Literal["external"]
    broker: Annotated[str, AfterValidator(_kafka_only("external"))] = "kafka"
    brokers: Annotated[int, Field(ge=1, le=9)] = 1
    bootstrap_servers: str | None = Field(None, validate_default=True,
                                          description="the cluster's (or its proxies') addresses")
    toxiproxy_url: Annotated[str | None, AfterValidator(_toxiproxy_url)] = Field(
        None, description="Toxiproxy API the clients' traffic crosses (without it, no faults)")
    proxies: Annotated[list[str] | None, AfterValidator(_names_per_broker)] = Field(
        None, description="Toxiproxy proxy of broker i (default broker-<i>)")
    client: ClientSettings = Field(default_factory=dict, description=CLIENT_DOC)

    @field_validator("bootstrap_servers")
    @classmethod
    def _needs_bootstrap(cls, value: str | None) -> str:
        if not value:
            raise ValueError("backend external needs the cluster's addresses (host:port,...)")
        return value

    @field_validator("proxies")
    @classmethod
    def _proxies_need_api(cls, proxies: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if proxies is not None and not info.data.get("toxiproxy_url"):
            raise ValueError("needs cluster.toxiproxy_url (the API that controls them)")
        return proxies

    @property
    def has_proxies(self) -> bool:
        return self.toxiproxy_url is not None


def _backend_of(section) -> str | None:
    if isinstance(section, dict):
        return section.get("backend", "local")
    return getattr(section, "backend", None)


# One model per backend, chosen by `backend` (default local); each forbids the others' fields.
ClusterSpec = Annotated[
    Union[Annotated[LocalClusterSpec, Tag("local")], Annotated[ComposeClusterSpec, Tag("compose")],
          Annotated[ExternalClusterSpec, Tag("external")]],
    Discriminator(_backend_of, custom_error_type="unknown_backend",
                  custom_error_message=f"unknown backend (use {', '.join(BACKENDS)})"),
]
CLUSTER_MODELS = {"local": LocalClusterSpec, "compose": ComposeClusterSpec, "external": ExternalClusterSpec}


class TopicSpec(Strict):
    partitions: Annotated[int, Field(ge=1, le=MAX_PARTITIONS)] = 3
    replication_factor: Annotated[int, Field(ge=1)] = 1
    config: dict[str, Union[str, int, float, bool]] = Field(
        default_factory=dict, description="topic configs at creation, e.g. unclean.leader.election.enable: true")


class WorkloadSpec(Strict):
    messages: Annotated[int, Field(ge=1, le=MAX_MESSAGES)] = Field(
        description="messages per variant, spread over the partitions")
    rate: Annotated[float, Field(gt=0)] | None = Field(None, description="messages per second; null = as fast as possible")
    flush_timeout: Annotated[Seconds, Field(gt=0)] = 60.0
    # Harness settings of the variants whose producer sets transactional.id (librdkafka refuses unknown keys,
    # so they live here, not in the producer settings).
    transaction_size: Annotated[int, Field(ge=1, alias="transaction.size")] = Field(
        100, description="transactional variants: records per transaction")
    abort_ratio: Annotated[float, Field(ge=0, le=1)] = Field(
        0.0, description="transactional variants: fraction of transactions aborted on purpose (seeded)")

    @field_validator("rate")
    @classmethod
    def _finishes(cls, rate: float | None, info: ValidationInfo) -> float | None:
        messages = info.data.get("messages")
        if rate is not None and messages and messages / rate > MAX_SECONDS:
            raise ValueError(f"{messages:,} messages at {rate:g}/s would take {messages / rate:,.0f} s; "
                             f"a workload may last at most {MAX_SECONDS:,.0f} s")
        return rate

    @property
    def expected_duration(self) -> float | None:
        return self.messages / self.rate if self.rate else None


STRATEGIES = ("commit-after", "commit-before", "auto-commit", "transactional", "idempotent-sink")


class ConsumerSpec(Strict):
    """The consumer workload (workload/consumers.py): a group of member processes processing the topic
    into the variant's sink (an SQLite database), committing as `strategy` says."""

    strategy: Literal[STRATEGIES] = Field(  # type: ignore[valid-type]
        "commit-after", description="commit-after (at-least-once), commit-before (at-most-once), auto-commit, "
                                    "transactional (consume-transform-produce), idempotent-sink (offsets in the sink)")
    members: Annotated[int, Field(ge=1, le=32)] = 3
    group_protocol: Literal["classic", "consumer"] = Field(
        "classic", alias="group.protocol", description="classic, or consumer (KIP-848) where the broker supports it")
    when: Literal["during", "after"] = Field(
        "during", description="during: the group consumes while the producer sends (the faults hit both); after: "
                              "the producer sends first without faults, then the fault timeline runs on the group")
    batch: Annotated[int, Field(ge=1, le=100000)] = Field(100, description="records per poll, processed and "
                                                                            "committed together")
    processing_ms: Annotated[float, Field(ge=0, le=10000)] = Field(0.0, description="time each record takes to "
                                                                                  "process (slept)")
    drain_timeout: Annotated[Seconds, Field(gt=0)] = Field(120.0, description="seconds the group may take, once "
                                                                             "faults are healed, to reach the end")
    config: dict[str, ClientValue] = Field(default_factory=dict, description="every member's settings: librdkafka's, or the "
                                                                     "Java client's for a kafka-clients variant")

    @field_validator("config")
    @classmethod
    def _not_owned(cls, config: dict) -> dict:
        for key in config:
            if key in CONSUMER_OWNED:
                raise ValueError(f"{key}: set by the harness ({CONSUMER_OWNED[key]}); it cannot be changed here")
        return config


# The members' settings the harness sets itself (workload/member.consumer_config), and why.
CONSUMER_OWNED = {
    "bootstrap.servers": "the cluster's; use cluster.bootstrap_servers (backend external)",
    "group.id": "one group per variant, named after its topic",
    "group.instance.id": "members are replaced and rejoin as new members; static membership would hide that",
    "client.id": "each member's name, which its log and sink rows carry",
    "enable.auto.commit": "the strategy decides: auto-commit, or commits the member makes",
    "auto.offset.reset": "earliest: the group must process the whole log",
    "isolation.level": "read_committed: what the analysis counts as written",
    "group.protocol": "use the consumer section's group.protocol field",
    "transactional.id": "one per member slot, for the transactional strategy",
}


# Short names of the settings a matrix most often varies, for its variants' names.
MATRIX_SHORT = {"enable.idempotence": "idem", "max.in.flight.requests.per.connection": "inflight",
                "linger.ms": "linger", "batch.size": "batch", "batch.num.messages": "batchmsgs",
                "compression.type": "compression", "delivery.timeout.ms": "delivery",
                "request.timeout.ms": "reqtimeout", "retry.backoff.ms": "backoff",
                # kafka-python's and aiokafka's spellings of the same settings
                "enable_idempotence": "idem", "max_in_flight_requests_per_connection": "inflight",
                "linger_ms": "linger", "batch_size": "batch", "max_batch_size": "batch",
                "compression_type": "compression", "delivery_timeout_ms": "delivery",
                "request_timeout_ms": "reqtimeout", "retry_backoff_ms": "backoff"}


def setting_text(value) -> str:
    """A setting's value as matrix names and selectors spell it: true/false, 1, all, 100."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).lower()


def matrix_variants(matrix: dict[str, list]) -> list[dict]:
    """matrix: {setting: [values]} -> one variant per combination, in the order given, each named after its
    settings: {acks: [1, all], linger.ms: [0, 100]} -> acks-1_linger-0, acks-1_linger-100, acks-all_linger-0, ...
    The key confluent-kafka ranges over client versions (the variant's `client`, not a producer setting)."""
    keys = list(matrix)
    out = []
    for combo in itertools.product(*(matrix[k] for k in keys)):
        # A secret's value never reaches a name (folders, logs, the terminal): its place in the list does.
        name = "_".join(f"{MATRIX_SHORT.get(k, k.replace('.', '-'))}-"
                        f"{matrix[k].index(v) + 1 if SECRET_KEY.search(k) else setting_text(v)}"
                        for k, v in zip(keys, combo))
        settings = dict(zip(keys, combo))
        client = {k: settings.pop(k) for k in LIBRARIES if k in settings}
        out.append({"name": name, "producer": settings, **({"client": client} if client else {})})
    return out


def matrix_value(variant: dict, key: str):
    """A matrix variant's value of `key` (a producer setting, or the client version)."""
    return variant.get("client", {}).get(key, variant["producer"].get(key))


def secret_selector(key: str) -> bool:
    """An expectations/allow key that selects variants by the literal value of a secret setting."""
    selector = parse_selector(key) if "=" in key else None
    return bool(selector) and any(SECRET_KEY.search(k) and not ENV_REF.fullmatch(v) for k, v in selector.items())


def masked_selector(key: str) -> str:
    """An expectations/allow key as messages may show it: the value of every secret setting it selects by
    replaced by MASK (a ${NAME} reference kept); any other key as it is. Also for keys that are not valid
    selectors, which messages name too."""
    parts = []
    for part in key.split(","):
        setting, eq, value = part.partition("=")
        secret = eq and SECRET_KEY.search(setting) and not ENV_REF.fullmatch(value.strip())
        parts.append(f"{setting}={MASK}" if secret else part)
    return ",".join(parts)


def hide_secret_selectors(message: str, data) -> str:
    """`message` with every expectations/allow key of the raw experiment `data` that selects by a secret's
    value shown masked (masked_selector): an error message never carries the secret to the terminal."""
    if not isinstance(data, dict):
        return message
    for field in ("expectations", "allow"):
        keys = data.get(field)
        for key in sorted(keys if isinstance(keys, dict) else (), key=lambda k: -len(str(k))):
            if isinstance(key, str) and masked_selector(key) != key:
                message = message.replace(key, masked_selector(key))
    return message


def parse_selector(key: str) -> dict[str, str] | None:
    """An expectations/allow key that selects variants by setting: "enable.idempotence=true,acks=all"
    -> {"enable.idempotence": "true", "acks": "all"}; a variant name (no '=') -> None."""
    if "=" not in key:
        return None
    out = {}
    for part in key.split(","):
        setting, eq, value = part.partition("=")
        if not eq or not setting.strip() or not value.strip():
            raise ValueError(f"{key!r}: a selector is SETTING=VALUE[,SETTING=VALUE...]")
        out[setting.strip()] = value.strip().lower()
    return out


class VariantSpec(Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=64)]
    producer: ProducerSettings = Field(default_factory=dict)
    allow: list[str] = Field(default_factory=list, description="fatal anomalies this variant may show "
                                                               "(e.g. lost with acks=1); the report shows them as allowed")
    consumer: ConsumerSpec | None = Field(None, description="this variant's consumer settings, over the "
                                                           "experiment's consumer section")
    client: ClientLibrary = Field(default_factory=dict, description="the client library this variant's producer "
                                                                     "runs with, over the experiment's")
    broker_config: BrokerSettings = Field(default_factory=dict, description="Kafka broker settings changed "
                                          "on every broker while the cluster runs, before this variant (those Kafka "
                                          "updates dynamically); a setting another variant names goes back to "
                                          "the brokers' own in this one")
    features: FeatureLevels = Field(default_factory=dict, description="cluster feature levels set (kafka-features.sh) "
                                    "before this variant runs, e.g. eligible.leader.replicas.version: 0; a feature "
                                    "another variant names goes back to the cluster's own level in this one")

    @field_validator("allow")
    @classmethod
    def _fatal_only(cls, allow):
        for name in allow:
            if name not in FATAL:
                what = "is not a fatal anomaly" if name in BY_KEY else "is not a metric"
                raise ValueError(f"{name!r} {what}; allow takes: {', '.join(k for k in KEYS if k in FATAL)} "
                                 "(other metrics take rules under expectations)")
        return allow


class ExperimentSpec(Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=64)]
    description: str = ""
    seed: Annotated[int, Field(ge=-(2**63), le=2**63 - 1)] = 1
    cluster: ClusterSpec = Field(default_factory=LocalClusterSpec)
    topic: TopicSpec = Field(default_factory=TopicSpec)
    workload: WorkloadSpec
    producer: ProducerSettings = Field(default_factory=dict)
    variants: Annotated[list[VariantSpec], Field(max_length=MAX_VARIANTS)] = Field(default_factory=list)
    matrix: dict[str, Annotated[list[Union[str, int, float, bool]], Field(min_length=1)]] = Field(
        default_factory=dict, description="producer settings to combine: every combination becomes a variant "
                                          "named after its settings (acks-1_idem-false_...), after `variants`")
    allow: dict[str, list[str]] = Field(
        default_factory=dict, description="fatal anomalies allowed, by variant name or by selector "
                                          "(SETTING=VALUE[,...]: every variant whose settings match)")
    faults: Annotated[list[Fault], Field(max_length=MAX_FAULTS)] = Field(default_factory=list)
    consumer: ConsumerSpec | None = Field(None, description="a consumer group in every variant (workload/consumers.py)")
    client: ClientLibrary = Field(default_factory=dict, description="the client library every variant's producer "
                                                                     "runs with, one of confluent-kafka, kafka-python, "
                                                                     "aiokafka, kafka-clients (e.g. confluent-kafka: "
                                                                     "\"2.2.0\", kafka-python: \"3.0.12\")")
    fault_window: Annotated[Seconds, Field(gt=0)] | None = Field(
        None, description="seconds over which repeated faults are planned; default messages / rate")
    expectations: dict[str, dict[str, RuleField]] = Field(default_factory=dict)
    explore: ExploreSpec | None = Field(None, description="the fault space `kafka-chaos explore` draws its tries' "
                                                           "schedules from; `kafka-chaos run` runs `faults` only")

    # Said before the run starts (preflight): e.g. matrix combinations librdkafka refuses, skipped.
    _notes: list[str] = PrivateAttr(default_factory=list)

    @property
    def notes(self) -> list[str]:
        return self._notes

    @model_validator(mode="before")
    @classmethod
    def _expand_matrix(cls, data):
        if isinstance(data, dict) and isinstance(data.get("matrix"), dict) and data["matrix"]:
            matrix = data["matrix"]
            if all(isinstance(v, list) and v and all(isinstance(x, (str, int, float, bool)) for x in v)
                   for v in matrix.values()):  # otherwise the field's own validation says what is wrong
                libraries = [k for k in matrix if k in LIBRARIES]
                if len(libraries) > 1:
                    raise ValueError(f"matrix: {', '.join(libraries)}: one client library per producer; give "
                                     "variants for each library instead")
                for key, values in matrix.items():  # a value names its variants: the name must hold it, once
                    texts = [setting_text(x) for x in values]
                    for x, text in zip(values, texts):
                        try:  # what a producer section (or the client axis) refuses, named where the file gives it
                            _client_library({key: x}) if key in LIBRARIES else _producer_settings({key: x})
                        except ValueError as e:
                            raise ValueError(f"matrix.{e}") from None
                        if texts.count(text) > 1:
                            raise ValueError(f"matrix.{key}: {'a value' if SECRET_KEY.search(key) else repr(x)} "
                                             "is given twice")
                        if not SECRET_KEY.search(key) and not re.fullmatch(r"[A-Za-z0-9_.-]+", text):
                            raise ValueError(f"matrix.{key}: {x!r} cannot be part of a variant's name (letters, "
                                             "digits, '.', '_', '-'); give such settings in variants")
                combinations = math.prod(len(v) for v in matrix.values())
                if combinations + len(data.get("variants") or []) > MAX_VARIANTS:  # before expanding them
                    raise ValueError(f"matrix: {combinations:,} combinations; at most {MAX_VARIANTS} variants "
                                     "in all (variants and the matrix's)")
                data = {**data, "variants": [*(data.get("variants") or []), *matrix_variants(matrix)]}
        return data

    @field_validator("variants")
    @classmethod
    def _unique_variants(cls, variants):
        if not variants:
            raise ValueError("give at least 1 variant (in variants, or a matrix of settings)")
        names = [v.name for v in variants]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"variant names must be unique; repeated: {', '.join(dupes)}")
        return variants

    @field_validator("allow")
    @classmethod
    def _allow_fatal_only(cls, allow):
        for key, names in allow.items():
            VariantSpec._fatal_only(names)
        return allow

    def selected(self, key: str) -> list[str]:
        """The variants an expectations/allow key names: itself, or every variant a selector matches."""
        selector = parse_selector(key)
        if selector is None:
            return [key] if any(v.name == key for v in self.variants) else []
        return [v.name for v in self.variants
                if all(setting_text(self.selectable(v).get(k, "")) == x for k, x in selector.items())]

    def selectable(self, variant: VariantSpec) -> dict:
        """What a selector can match: the variant's producer settings and its client version."""
        return {**self.producer_config(variant), **self.client_of(variant)}

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo):
        if not self.variants:  # the field's own check does not run on its default
            raise ValueError("variants: give at least 1 variant (in variants, or a matrix of settings)")
        names = {v.name: v for v in self.variants}
        for field in ("expectations", "allow"):
            for key in getattr(self, field):
                try:
                    found = self.selected(key)
                except ValueError as e:
                    raise ValueError(f"{field}.{key}: {e}") from None
                if not found:
                    what = "selects no variant" if "=" in key else f"unknown variant {key!r}"
                    raise ValueError(f"{field}.{key}: {what}; variants: {', '.join(sorted(names))}")
        for key, allowed in self.allow.items():  # selectors' allow lists join each variant's own
            for name in self.selected(key):
                names[name].allow = sorted(set(names[name].allow) | set(allowed))
        for key, rules in self.expectations.items():
            for metric in rules:
                if metric not in BY_KEY:
                    raise ValueError(f"expectations.{key}.{metric}: unknown metric {metric!r}; allowed: {', '.join(KEYS)}")
        for variant in names:
            for metric, rule in self.rules(variant).items():
                if metric in FATAL and metric not in names[variant].allow and not rule.holds(0):
                    where = next(k for k in self.expectations if variant in self.selected(k) and metric in
                                 self.expectations[k])
                    raise ValueError(f"expectations.{where}.{metric}: '{rule}' cannot hold while {metric} is fatal "
                                     f"(it must be 0); add {metric} to variant {variant}'s allow list")
        for i, fault in enumerate(self.faults):
            if isinstance(fault.target, BrokerTarget) and fault.target.broker >= self.cluster.brokers:
                raise ValueError(f"faults.{i}.target: broker {fault.target.broker} does not exist "
                                 f"(cluster has brokers 0..{self.cluster.brokers - 1})")
            partition = getattr(fault.target, "leader_of", getattr(fault.target, "follower_of", None))
            if partition is not None and partition >= self.topic.partitions:
                raise ValueError(f"faults.{i}.target: partition {partition} does not exist "
                                 f"(topic has partitions 0..{self.topic.partitions - 1})")
            if isinstance(fault.target, FollowerTarget) and self.topic.replication_factor < 2:
                raise ValueError(f"faults.{i}.target: follower-of needs followers: set topic.replication_factor "
                                 "to 2 or more")
        if self.cluster.backend != "external" and self.topic.replication_factor > self.cluster.brokers:
            raise ValueError(f"topic.replication_factor: {self.topic.replication_factor} is more than the "
                             f"{self.cluster.brokers} broker(s) of the cluster")
        if "transaction_size" in self.workload.model_fields_set and not any(self.transactional(v)
                                                                            for v in self.variants):
            raise ValueError("workload.transaction_size: only variants whose producer sets transactional.id send in "
                             "transactions, and none does")
        # A consumer metric on a variant without a group, or a transactions metric on one that sends none, would
        # hold trivially (a stored spec.yaml of an earlier release is not judged on the second).
        kinds = [("consumer", lambda v: self.consumer_spec(v) is not None, "measured on a consumer group's sink",
                  "has none (add a consumer section)")]
        if not stored(info):
            kinds.append(("transactional", self.transactional, "about the producer's transactions",
                          "sends none (its producer sets no transactional.id)"))
        for flag, has, what, lacks in kinds:
            for variant in (n for n in names if not has(names[n])):
                for metric in self.rules(variant):
                    if getattr(BY_KEY[metric], flag):
                        where = next(k for k in self.expectations if variant in self.selected(k) and metric in
                                     self.expectations[k])
                        raise ValueError(f"expectations.{where}.{metric}: {what}, and variant {variant} {lacks}")
                for metric in names[variant].allow:
                    if getattr(BY_KEY[metric], flag):
                        raise ValueError(f"allow: {metric} is {what}, and variant {variant} {lacks}")
        if self.workload.abort_ratio and not any(self.transactional(v) for v in self.variants):
            raise ValueError("workload.abort_ratio: only variants whose producer sets transactional.id send in "
                             "transactions, and none does")
        for v in self.variants:  # what the producer child of another client version does not do (yet)
            library = self.client_library(v)
            if library is None:
                continue
            name, version = library
            foreign = FOREIGN.get(name)
            tid = foreign.transactional if foreign else "transactional.id"
            if self.transactional(v) and not (foreign and foreign.transactions):
                raise ValueError(f"client: variant {v.name} runs {name} {version} in a child process, which "
                                 "runs the plain producer (and its consumer group's members) under broker and network "
                                 f"faults only, so far; it cannot send in transactions ({tid})")
            if foreign is None:
                continue
            group = self.consumer_spec(v)
            if group is not None and foreign.member_strategies is not None and not stored(info):
                self._members_of(v, name, version, foreign, group)
            for key in self.producer_config(v):
                if key in foreign.owned:
                    raise ValueError(f"producer: variant {v.name} runs {name}, whose {key} is set by the harness "
                                     f"({foreign.owned[key]}); it cannot be changed here")
            if self.cluster.client:
                raise ValueError(f"cluster.client: {', '.join(sorted(self.cluster.client))} are librdkafka settings; "
                                 f"variant {v.name} runs {name}, which is given the cluster's address only, so far")
        configured = [v.name for v in self.variants if v.broker_config]
        if configured and self.cluster.broker != "kafka":
            raise ValueError(f"variants: {configured[0]} sets broker_config, which needs Apache Kafka (broker: kafka)")
        featured = [v.name for v in self.variants if v.features]
        if featured and (self.cluster.backend, self.cluster.broker) != ("local", "kafka"):
            raise ValueError(f"variants: {featured[0]} sets features, which only backend local with broker kafka "
                             "can change (with kafka-features.sh from its Kafka distribution)")
        for i, fault in enumerate(self.faults):
            problem = KINDS[fault.kind].problem(self, fault)
            head, _, rest = problem.partition(": ")
            if problem:  # a problem of one setting names it: faults.0.direction
                raise ValueError(f"faults.{i}.{head}: {rest}" if head in type(fault).model_fields
                                 else f"faults.{i}: {problem}")
        if any(f.every is not None for f in self.faults) and self.planning_window is None:
            raise ValueError("fault_window: repeated faults need a time window: set workload.rate or fault_window")
        if not stored(info):
            self._faults_fire()
            if self.explore is not None:
                cross_check(self.explore, self)
        return self

    def _members_of(self, v: VariantSpec, name: str, version: str, foreign: Implementation,
                    group: ConsumerSpec) -> None:
        """A variant whose consumer group runs its implementation's own members: a strategy they do not run, or a
        setting the harness owns in their spelling, is bad input (the field that gives it is named)."""
        where = "consumer" if v.consumer is None or "strategy" not in v.consumer.model_fields_set \
            else f"variants.{self.variants.index(v)}.consumer"
        if group.strategy not in foreign.member_strategies:
            *rest, last = foreign.member_strategies
            raise ValueError(f"{where}.strategy: variant {v.name} runs {name} {version}, whose own consumer group "
                             f"members do not run {group.strategy} (yet); use {', '.join(rest)} or {last}")
        for key in group.config:
            if key in foreign.member_owned:
                mine = v.consumer is not None and key in v.consumer.config
                at = f"variants.{self.variants.index(v)}.consumer.config" if mine else "consumer.config"
                raise ValueError(f"{at}: variant {v.name} runs {name}, whose member setting {key} is set by the "
                                 f"harness ({foreign.member_owned[key]}); it cannot be changed here")

    def _faults_fire(self) -> None:
        """Every fault entry is applied at least once, and the plan stays within MAX_FAULTS (checked
        before planning: `every: 1e-9` would otherwise plan a billion faults)."""
        window = self.planning_window
        if window is None:
            return  # no rate and no fault_window: how long the workload runs is not known
        what = "fault_window" if self.fault_window else f"the workload's expected duration ({self.workload.messages:,} " \
                                                        f"messages at {self.workload.rate:g}/s)"
        total = 0
        for i, f in enumerate(self.faults):
            if f.at is not None:
                if f.at >= window:
                    raise ValueError(f"faults.{i}.at: {f.at:g} s is not before the end of {what}, {window:g} s: "
                                     "the fault would never be applied")
                total += 1
                continue
            if f.start >= window:
                default = "" if "start" in f.model_fields_set else " (the default)"
                raise ValueError(f"faults.{i}.start: {f.start:g} s{default} is not before the end of {what}, "
                                 f"{window:g} s: no fault would be applied")
            count = math.ceil((window - f.start) / f.every)
            total += count
            if total > MAX_FAULTS:
                raise ValueError(f"faults.{i}.every: {f.every:g} s plans {count:,} faults over {window:g} s; "
                                 f"at most {MAX_FAULTS:,} faults per variant")

    @property
    def planning_window(self) -> float | None:
        return self.fault_window or self.workload.expected_duration

    def public_dict(self) -> dict:
        """The spec as a run folder keeps it: every literal secret hidden (a ${NAME} reference is kept) in
        every section that takes settings: cluster.client, cluster.broker_config, producer, each variant's
        producer and broker_config, and every consumer group's config."""
        doc = self.model_dump(mode="json", exclude_none=True)
        if not any(self.transactional(v) for v in self.variants):  # settings that mean nothing here
            for key in ("transaction_size", "abort_ratio"):
                doc["workload"].pop(key, None)
        for entry, variant in zip(doc["variants"], self.variants):  # only what the variant sets, over the experiment's
            if variant.consumer is not None:
                entry["consumer"] = variant.consumer.model_dump(mode="json", exclude_unset=True)
        doc.pop("matrix", None)  # expanded into variants (less those librdkafka refused)
        for fault in doc["faults"]:  # a broker stop's duration is its downtime, which the file gives
            if "downtime" in fault:
                fault.pop("duration", None)
        # A selector by a secret's value is kept as the variants it selected, by name: its allow list is
        # already in theirs (_cross_checks), its rules go under their names.
        doc["allow"] = {k: v for k, v in doc["allow"].items() if not secret_selector(k)}
        expectations = {}
        for key, rules in doc["expectations"].items():
            for name in (self.selected(key) if secret_selector(key) else [key]):
                expectations[name] = {**expectations.get(name, {}), **rules}
        doc["expectations"] = expectations
        groups = [g for g in [doc.get("consumer"), *(v.get("consumer") for v in doc["variants"])] if g]
        for section, key in [(doc["cluster"], "client"), (doc["cluster"], "broker_config"), (doc, "producer"),
                             *((v, k) for v in doc["variants"] for k in ("producer", "broker_config")),
                             *((g, "config") for g in groups)]:  # config: the members' librdkafka settings
            if key in section:
                section[key] = masked(section[key])
        return doc

    def producer_config(self, variant: VariantSpec) -> dict:
        return {**self.producer, **variant.producer}

    def client_of(self, variant: VariantSpec) -> dict:
        """The variant's client library, {NAME: VERSION}: its own, else the experiment's; {} for the harness's."""
        return dict(variant.client or self.client)

    def client_library(self, variant: VariantSpec) -> tuple[str, str] | None:
        """(library, version) the variant's producer runs with (harness/clients.py), None for the harness's own."""
        return next(iter(self.client_of(variant).items()), None)

    def client_version(self, variant: VariantSpec) -> str | None:
        """The confluent-kafka version the variant's producer (and its consumer group) runs with, None for the
        harness's own (a variant of another library's producer has its group run the harness's own, but the Java
        client's: member_implementation)."""
        return self.client_of(variant).get(CLIENT_LIBRARY)

    def implementation(self, variant: VariantSpec) -> Implementation | None:
        """The other implementation the variant's producer runs (harness/clients.py), None for confluent-kafka's
        (the harness's own, or another version of it)."""
        library = self.client_library(variant)
        return FOREIGN.get(library[0]) if library else None

    def member_implementation(self, variant: VariantSpec) -> Implementation | None:
        """The implementation the variant's consumer group members run when it is not the harness's own
        (workload/member.py, librdkafka): the Java client's (kafka-clients) for a variant of its producer.
        None for every other variant, and for one without a consumer group."""
        foreign = self.implementation(variant)
        if self.consumer_spec(variant) is None or foreign is None or foreign.member_strategies is None:
            return None
        return foreign

    def transactional(self, variant: VariantSpec) -> bool:
        """The variant sends in transactions: its producer settings name a transactional id, in its implementation's
        spelling (transactional.id; kafka-python's and aiokafka's transactional_id)."""
        foreign = self.implementation(variant)
        return (foreign.transactional if foreign else "transactional.id") in self.producer_config(variant)

    def consumer_spec(self, variant: VariantSpec) -> ConsumerSpec | None:
        """The variant's consumer group: the experiment's section with the variant's fields over it (their
        librdkafka settings merged), or None when neither has one."""
        if self.consumer is None and variant.consumer is None:
            return None
        base = self.consumer or ConsumerSpec()
        if variant.consumer is None:
            return base
        update = {k: getattr(variant.consumer, k) for k in variant.consumer.model_fields_set}
        if "config" in update:
            update["config"] = {**base.config, **update["config"]}
        return base.model_copy(update=update)

    def rules(self, variant: str) -> dict[str, Rule]:
        """The variant's expectations: those of every selector that matches it, in the file's order, then
        those under its own name (a later rule on the same metric replaces an earlier one)."""
        out: dict[str, Rule] = {}
        for key in sorted(self.expectations, key=lambda k: "=" not in k):
            if variant in self.selected(key):
                out.update(self.expectations[key])
        return out


SETTING_HINT = "must be a string, a whole or finite number, or true/false"
TARGET_HINT = "use all, random, {broker: N}, {leader-of: P} or {follower-of: P} (N, P whole numbers from 0)"
# A value that fits none of a union's members gets one error per member, each named by the member:
# said once, in the words of the file.
UNION_MEMBERS = {"str": SETTING_HINT, "int": SETTING_HINT, "float": SETTING_HINT, "bool": SETTING_HINT,
                 "literal['all','random']": TARGET_HINT, "BrokerTarget": TARGET_HINT, "LeaderTarget": TARGET_HINT,
                 "FollowerTarget": TARGET_HINT}


def masked(settings: dict) -> dict:
    """librdkafka or Kafka broker settings with the value of every secret one (SECRET_KEY) replaced by MASK,
    unless it only names an environment variable (${NAME}, resolved when the run starts and never written)."""
    return {k: MASK if isinstance(k, str) and SECRET_KEY.search(k) and not ENV_REF.fullmatch(str(v)) else v
            for k, v in settings.items()}


def _where(loc: tuple) -> tuple[str, str | None]:
    """(field path as the file writes it, the hint when the error is one member of a union's)."""
    parts = [str(p) for p in loc if not str(p).startswith(("function-after", "tagged-union")) and p != "[key]"]
    # The cluster section's loc carries the backend tag (cluster.local.brokers), a fault's its kind
    # (faults.0.<kind>.at): the file says cluster.brokers and faults.0.at.
    if parts[:1] == ["cluster"] and parts[1:2] and parts[1] in BACKENDS:
        del parts[1]
    if parts[:1] == ["faults"] and parts[2:3] and parts[2] in KINDS:
        del parts[2]
    for i in range(len(parts) - 1, max(len(parts) - 3, 0), -1):  # the member is last, or before its field
        if parts[i] in UNION_MEMBERS:
            return ".".join(parts[:i]), UNION_MEMBERS[parts[i]]
    return ".".join(parts), None


def validation_message(e: Exception, path: Path) -> str:
    """`FILE: FIELD.PATH: what is wrong`, one line per problem pydantic found."""
    if not isinstance(e, ValidationError):
        return f"{path}: {e}"
    lines = []
    for err in e.errors():
        where, hint = _where(err["loc"])
        msg = hint or err["msg"].removeprefix("Value error, ")
        if FIELD_FIRST.match(msg) and msg.startswith(where):  # model checks name their field first
            where, _, msg = msg.partition(": ")
        where = where or "(top level)"
        if err["type"] == "extra_forbidden" and not hint:
            msg = "unknown field"
            if err["loc"][:1] == ("cluster",) and err["loc"][1:2] and err["loc"][1] in BACKENDS:
                backend = err["loc"][1]  # a field of another backend, or a typo
                msg = f"not used by backend {backend} (it reads: {', '.join(CLUSTER_MODELS[backend].model_fields)})"
        if err["type"] == "unknown_backend":
            if isinstance(err["input"], dict):
                where, msg = f"{where}.backend", f"{err['input'].get('backend')!r} is not a backend (use {', '.join(BACKENDS)})"
            else:
                msg = f"{err['input']!r} is not a mapping (backend, broker, brokers, ...)"
        line = f"{path}: {where}: {msg}"
        if line not in lines:
            lines.append(line)
    return "\n".join(lines)


def load_spec(path: str | Path) -> ExperimentSpec:
    path = Path(path)
    try:
        data = yamlfile.load(path)
    except FileNotFoundError:
        raise SpecError(f"{path}: file not found") from None
    except (OSError, ValueError) as e:  # ValueError: also a NUL in the path, UnicodeDecodeError
        if isinstance(e, yamlfile.YamlError):
            raise SpecError(f"{path}: not valid YAML: {e}") from None
        raise SpecError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the experiment must be a YAML mapping with keys name, workload, variants, ...")
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as e:
        raise SpecError(hide_secret_selectors(validation_message(e, path), data)) from None
    compose_file = getattr(spec.cluster, "compose_file", None)
    if compose_file and not Path(compose_file).is_absolute():  # as Compose resolves paths: from the file's folder
        spec.cluster.compose_file = str((path.parent / compose_file).resolve())
    return spec
