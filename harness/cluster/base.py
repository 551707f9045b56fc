"""What every backend shares: clients through Toxiproxy proxies, the preflight, leader lookup,
each broker's state, isolation, healing.

A backend subclass only says how its brokers and proxies come to exist (`_start`, `_stop`)
and whether its proxy server still answers (`_proxy_alive`); everything faults and the
runner rely on is here, so the embedded default exercises the same code as Docker Compose,
KAFKA_HOME processes and external clusters.

Each broker is in one state: running, paused, down or starting. A broker fault acts only on a
broker in the state it expects (pause and kill a running one, resume a paused one, start a
down one) and anything else is a harness error, never a silent second process. Faults run on
their own threads, so the state is guarded by one lock.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path
from typing import Protocol

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from ..exits import InfraError
from ..logfile import FileLogger
from ..runfolder import RunFolder
from ..faults.kind import Means
from ..spec import BaseClusterSpec, masked
from .apiversions import kafka_answers
from .metadata import (broker_index, client_addresses, every_broker_registered, leader_index, split_address,
                       unreachable_proxies)
from .topic import restore_topic, wait_until_replicated
from .toxiproxy import ToxiproxyClient

RUNNING, PAUSED, DOWN, STARTING = "running", "paused", "down", "starting"


def peer_proxy_names(broker: int, brokers: int) -> list[str]:
    """The proxies that carry broker `broker`'s traffic with its peers, both ways: what `isolate` disables.

    `replication-{src}-{dst}` carries src's fetches from dst (dst's replication listener for src);
    `controller-{src}-{dst}` carries src's quorum and heartbeat traffic to dst's controller listener.
    """
    return [f"{kind}-{a}-{b}" for other in range(brokers) if other != broker
            for kind in ("replication", "controller") for a, b in ((broker, other), (other, broker))]


def _start_or_kill(handle) -> None:
    """Start a broker; one that did not come up in time is killed, so `down` stays true."""
    try:
        handle.start()
    except BaseException:
        try:
            handle.kill()
        except Exception:  # already gone
            pass
        raise


class BrokerHandle(Protocol):
    """One broker the harness controls: a local process or a container."""

    log_path: Path | str  # where to look when it misbehaves

    def start(self) -> None: ...  # start (again) and wait until it listens
    def stop(self) -> float | None: ...  # graceful; when the stop began, if known
    def kill(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def alive(self) -> bool: ...  # running or paused


class ProxiedCluster:
    """Brokers 0..N-1, broker i reached by clients only through Toxiproxy proxy `proxy_names[i]`."""

    memory_storage = False  # True when a killed broker comes back empty (Tansu's memory storage)
    # False: down() removes the brokers' data (a local Kafka's kafka-data/). True: down() leaves it, and its
    # owner keeps it or calls discard_data() (a run decides once it is judged: run.py).
    keep_data = False
    start_errors: tuple[type[BaseException], ...] = (OSError, RuntimeError, TimeoutError)

    def __init__(self, spec: BaseClusterSpec, run_dir: Path):
        self.spec = spec
        self.files = RunFolder(run_dir)  # where the cluster's logs and data go
        self.toxi: ToxiproxyClient | None = None
        self.brokers: list[BrokerHandle] = []
        self.proxy_listens: list[str] = []  # as the Toxiproxy API reports them (may be wildcards)
        self.endpoints: list[str] = []  # where clients reach broker i (its proxy), found by the preflight
        self.client: dict = {}  # librdkafka connection settings: bootstrap.servers plus security
        self.states: list[str] = []  # per broker: running, paused, down or starting (set once up)
        self._state_lock = threading.Condition()
        self._cuts: Counter[str] = Counter()  # proxy name -> faults holding it disabled
        self._restarted = False  # a broker started again since the last settle
        self._admin: AdminClient | None = None  # kept for lookups while faults run: no new connections
        self._admin_log: FileLogger | None = None
        # What variants changed that outlives a run (a cluster kept for a series: kept.py puts it back):
        self._config_set: set[str] = set()  # dynamic broker settings set, deleted again by reset_settings
        self._features_baseline: dict[str, int] | None = None  # each set feature's level before its first change

    # -- what a backend provides ----------------------------------------------
    @classmethod
    def means(cls, spec: BaseClusterSpec) -> Means:
        """What the harness can do to this backend's cluster, and why not (a fault kind that needs what it
        cannot do is refused before anything starts: exit 2)."""
        return Means(
            log_folders="only backend local with broker kafka: it cuts a stopped broker's log files",
            plaintext_broker="only backend local with broker kafka: its request is sent in plaintext to a broker "
                             "the harness started",
            request_framing="only the embedded proxy (backend local, proxy: embedded) reads Kafka's request "
                            "framing; Toxiproxy has no such toxic",
            packets="only backend local with broker kafka and network: namespaces acts on packets",
            peer_traffic="it cuts a broker off from its peers, and this cluster has one broker" if spec.brokers < 2
            else None)

    @classmethod
    def problems(cls, spec: BaseClusterSpec) -> list[str]:
        """Input mistakes found before anything starts (the CLI exits 2 on them)."""
        return []

    def _start(self) -> str:
        """Start or attach to brokers and proxies; set toxi, brokers, proxy_listens; return bootstrap servers."""
        raise NotImplementedError

    def _stop(self) -> None:
        raise NotImplementedError

    def _proxy_alive(self) -> bool:
        return self.toxi is None or self.toxi.answers()

    @property
    def description(self) -> str:
        raise NotImplementedError

    # -- lifecycle ---------------------------------------------------------------
    @property
    def broker_count(self) -> int:
        return self.spec.brokers

    @property
    def bootstrap(self) -> str:
        return self.client.get("bootstrap.servers", "")

    def up(self) -> None:
        try:
            bootstrap = self._start()
        except self.start_errors as e:
            self.down()
            raise InfraError(f"could not start the {self.spec.backend} cluster: {e} (logs in {self.files.logs})") from e
        self.client = {**self.spec.client_settings(), "bootstrap.servers": bootstrap}
        self.states = [RUNNING] * len(self.brokers)
        try:
            self.preflight()
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stop what this run started; safe to call twice."""
        try:
            self._stop()
        finally:
            self._admin = None  # the client goes (its sockets with it), then its log file
            if self._admin_log is not None:
                self._admin_log.close()

    @property
    def data_folder(self) -> Path | None:
        """Where the brokers' log folders are on this machine (None: not here, or in memory)."""
        return None

    def discard_data(self) -> None:
        """Remove the brokers' log folders left by down() with keep_data (nothing when there are none)."""

    def preflight(self) -> None:
        """Prove that all client traffic crosses the proxies, before any workload.

        1. metadata fetched through the proxies advertises only addresses the proxies serve,
           one proxy per broker;
        2. with a proxy disabled, no Kafka broker answers at its address (no other listener there).
        Without proxies (an external cluster with no Toxiproxy) only metadata is checked.
        """
        md = (self._metadata(timeout=30) if self.toxi is None else
              every_broker_registered(lambda: self._metadata(timeout=30), len(self.proxy_listens), timeout=30))
        advertised = [f"{b.host}:{b.port}" for b in md.brokers.values()]
        if self.toxi is None:
            self.endpoints = sorted(advertised)
            return
        self.endpoints = client_addresses(self.proxy_listens, advertised)
        bypass = unreachable_proxies(advertised, self.endpoints)
        if bypass or None in self.endpoints or len(advertised) != len(self.proxy_listens):
            raise InfraError(
                f"preflight failed: brokers advertise {sorted(advertised)} but the proxies listen on "
                f"{self.proxy_listens}; clients would connect to {bypass or 'other brokers'} directly, "
                f"bypassing the proxies, so no network fault would reach them{self._exited_brokers()}")
        for i, address in enumerate(self.endpoints):
            self.toxi.set_enabled(self.proxy_name(i), False)
            try:
                if kafka_answers(*split_address(address)):
                    raise InfraError(f"preflight failed: a Kafka broker still answers at {address} with its proxy "
                                     "disabled")
            finally:
                self.toxi.set_enabled(self.proxy_name(i), True)

    def _exited_brokers(self) -> str:
        """Which brokers exited since they started, each with the first error its log gives (a port taken by
        another program, ...): what a preflight failure usually comes from."""
        notes = []
        for i, b in enumerate(self.brokers):
            if not b.alive():
                try:
                    text = Path(b.log_path).read_text(errors="replace")
                except OSError:
                    text = ""
                error = re.search(r"(?:Exception|Error): (.+)", text)
                said = f": {error.group(1).strip()}" if error else ""
                notes.append(f"broker {i} exited{said} (its log: {b.log_path})")
        return "; " + "; ".join(notes) if notes else ""

    def admin(self) -> AdminClient:
        """The cluster's own admin client, made once (its log goes to the cluster's folder, not the terminal)."""
        if self._admin is None:  # its log (disconnects while faults run) goes to the run folder, not the terminal
            self._admin_log = self._admin_log or FileLogger(self.files.admin_log)
            self._admin = AdminClient({**self.client, "logger": self._admin_log})
        return self._admin

    def metadata(self, timeout: float = 10, topic: str | None = None):
        """Cluster metadata (every topic, or one) through the cluster's admin client; InfraError when none."""
        return self._metadata(timeout, topic)

    def _metadata(self, timeout: float, topic: str | None = None):
        try:
            return self.admin().list_topics(topic, timeout=timeout)
        except KafkaException as e:
            raise InfraError(f"no metadata from {self.bootstrap}: {e.args[0].str()}") from e

    # -- what faults act on --------------------------------------------------------
    def toxiproxy(self) -> ToxiproxyClient:
        if self.toxi is None:
            raise InfraError("this cluster has no Toxiproxy: network faults cannot be injected")
        return self.toxi

    def proxy_name(self, broker: int) -> str:
        return self.spec.proxy_names[broker]

    def _partition(self, topic: str, partition: int):
        md = self._metadata(timeout=5, topic=topic)
        advertised = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        t = md.topics.get(topic)
        if t is None or t.error is not None or partition not in t.partitions:
            raise LookupError(f"partition {partition} of {topic} is not in the metadata")
        return advertised, t.partitions

    def leader_of(self, topic: str, partition: int) -> int:
        advertised, parts = self._partition(topic, partition)
        return leader_index(advertised, {p.id: p.leader for p in parts.values()}, partition, self.endpoints)

    def follower_of(self, topic: str, partition: int) -> int:
        """The first in-sync replica of `partition` that is not its leader (lowest broker index)."""
        advertised, parts = self._partition(topic, partition)
        p = parts[partition]
        followers = sorted(broker_index(advertised, r, self.endpoints) for r in p.isrs if r != p.leader)
        if not followers:
            raise LookupError(f"partition {partition} has no in-sync follower right now (ISR {p.isrs})")
        return followers[0]

    # -- each broker's state --------------------------------------------------------
    def broker_state(self, broker: int) -> str:
        with self._state_lock:
            return self.states[broker] if self.states else RUNNING

    def wait_running(self, broker: int, give_up: threading.Event) -> bool:
        """Block until `broker` runs (True) or `give_up` is set (False)."""
        with self._state_lock:
            while self.states and self.states[broker] != RUNNING:
                if give_up.is_set():
                    return False
                self._state_lock.wait(0.1)
            return True

    def _transition(self, broker: int, expected: str, during: str, after: str, action):
        """Move `broker` from `expected` through `during` (while `action` runs) to `after`; returns what
        `action` returned."""
        if not self.brokers:
            raise InfraError(f"backend {self.spec.backend} cannot act on brokers")
        with self._state_lock:
            if self.states[broker] != expected:
                raise InfraError(f"broker {broker} is {self.states[broker]}, not {expected}")
            self.states[broker] = during
        try:
            result = action(self.brokers[broker])
        except BaseException:
            with self._state_lock:  # the action failed: record what the broker is now
                try:
                    alive = self.brokers[broker].alive()
                except InfraError:  # nor can it be asked (an engine that does not answer): down, as far as known
                    alive = False
                self.states[broker] = (PAUSED if expected == PAUSED else RUNNING) if alive else DOWN
                self._state_lock.notify_all()
            raise
        with self._state_lock:
            self.states[broker] = after
            self._state_lock.notify_all()
        return result

    def pause_broker(self, broker: int) -> None:
        self._transition(broker, RUNNING, PAUSED, PAUSED, lambda b: b.pause())

    def resume_broker(self, broker: int) -> None:
        self._transition(broker, PAUSED, PAUSED, RUNNING, lambda b: b.resume())

    def kill_broker(self, broker: int) -> float | None:
        """Kill it; returns the monotonic time the kill took effect when the handle knows it (SIGKILL sent:
        nothing runs after it, however long the kernel then takes to tear a JVM down)."""
        return self._transition(broker, RUNNING, DOWN, DOWN, lambda b: b.kill())

    def lose_unflushed(self, broker: int, topic: str, drop_batches: int | None) -> dict:
        """Kill it and cut what its page cache held from the log of `topic`'s partitions (cluster/segments.py): {"took_effect": the
        kill's time, "cut": one entry per partition}. Only where the harness owns the log files."""
        raise InfraError(f"backend {self.spec.backend} cannot make a broker lose unflushed writes")

    def set_broker_config(self, config: dict[str, str | None]) -> None:
        """Dynamic broker settings on every broker: a value is set, None goes back to the broker's own. Set
        per broker, since librdkafka's admin API cannot name the cluster-wide default (an empty broker name);
        Kafka takes a per-broker value also for its cluster-wide settings. Kafka refuses settings it cannot
        change while running (InfraError with its words)."""
        entries = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET if value is not None
                               else AlterConfigOpType.DELETE) for key, value in config.items()]
        brokers = sorted(self._metadata(timeout=30).brokers)  # also makes the admin client, once
        try:
            for broker in brokers:  # librdkafka takes one broker resource per call
                resource = ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=entries)
                for future in self._admin.incremental_alter_configs([resource]).values():
                    future.result(timeout=30)
        except KafkaException as e:
            raise InfraError(f"Kafka refused the broker settings {masked(config)}: {e.args[0].str()} (a variant's "
                             "broker_config takes settings Kafka changes while running; put others in "
                             "cluster.broker_config)") from e
        self._config_set |= {key for key, value in config.items() if value is not None}
        self._config_set -= {key for key, value in config.items() if value is None}

    def reset_settings(self) -> None:
        """Put back what variants changed that outlives a run: the dynamic broker settings they set go back to the
        brokers' own, the feature levels to those the cluster started with (a cluster kept for many runs)."""
        if self._config_set:
            self.set_broker_config({key: None for key in sorted(self._config_set)})
        if self._features_baseline:
            self.set_features(self._features_baseline)

    def feature_levels(self) -> dict[str, int]:
        raise InfraError(f"backend {self.spec.backend} cannot read the cluster's feature levels")

    def set_features(self, levels: dict[str, int]) -> None:
        raise InfraError(f"backend {self.spec.backend} cannot change the cluster's feature levels")

    def stop_broker(self, broker: int) -> float | None:
        """Stop it gracefully; returns, when the handle knows it, the monotonic time the stop began (as
        kill_broker does: the fault took effect then, its controlled shutdown taking what it takes)."""
        return self._transition(broker, RUNNING, DOWN, DOWN, lambda b: b.stop())

    def start_broker(self, broker: int) -> None:
        self._transition(broker, DOWN, STARTING, RUNNING, _start_or_kill)
        self._restarted = True

    # -- proxies held down by faults --------------------------------------------------
    def cut(self, proxies: list[str]) -> None:
        """Disable these proxies; one stays disabled while any fault holds it (overlapping faults heal right)."""
        with self._state_lock:
            for name in proxies:
                self._cuts[name] += 1
                if self._cuts[name] == 1:
                    self.toxiproxy().set_enabled(name, False)

    def reconnect(self, proxies: list[str]) -> None:
        with self._state_lock:
            for name in proxies:
                self._cuts[name] -= 1
                if self._cuts[name] == 0:
                    self.toxiproxy().set_enabled(name, True)

    def peer_proxies(self, broker: int) -> list[str]:
        """The proxies between `broker` and its peers; a backend that routes them attaches them at start."""
        return peer_proxy_names(broker, self.broker_count)

    def isolate_broker(self, broker: int, direction: str = "both") -> None:
        self.cut(self.peer_proxies(broker))  # a proxy cuts both ways (spec.py refuses one way without namespaces)

    def rejoin_broker(self, broker: int) -> None:
        self.reconnect(self.peer_proxies(broker))

    def link_fault(self, broker: int, name: str, action: str, params: dict) -> None:
        raise InfraError(f"backend {self.spec.backend} cannot act on packets")  # its means refuse it before

    def heal_link(self, broker: int, name: str) -> None:
        raise InfraError(f"backend {self.spec.backend} cannot act on packets")

    def _heal_links(self) -> None:
        """Heal every packet-level fault (a backend with network namespaces)."""

    # -- after the workload ------------------------------------------------------------
    def settle(self, topic: str, partitions: int, timeout: float = 120) -> None:
        """Heal every fault, start stopped brokers, wait until every broker is back and every partition
        has a leader and its full ISR (InfraError with the reason after `timeout`)."""
        self.heal_all()
        if self._restarted and self.memory_storage:
            # A restarted memory-storage broker comes back without the topic (or with one the
            # producer auto-created): give it its partitions back so the final read can count the loss.
            restore_topic(self.client, topic, partitions)
        self._restarted = False
        wait_until_replicated(self.client, topic, partitions, brokers=len(self.brokers) or None, timeout=timeout,
                              what="after healing")

    def heal_all(self) -> None:
        """Heal every fault: every proxy enabled and without toxics, every packet fault gone, paused brokers
        resumed and stopped ones started (waiting for a start a fault's thread has under way)."""
        if self.toxi is not None:
            with self._state_lock:
                self._cuts.clear()
                self.toxi.reset()
        self._heal_links()
        for i in range(len(self.brokers)):
            with self._state_lock:  # a fault's thread may still be starting it: let that finish (or fail)
                while self.states[i] == STARTING:
                    self._state_lock.wait(0.1)
                state = self.states[i]
            if state == PAUSED:
                self.resume_broker(i)
            elif state == DOWN:
                self.start_broker(i)

    def check_alive(self) -> None:
        if not self._proxy_alive():
            raise InfraError(f"the Toxiproxy server stopped answering; see {self.files.proxy_log}")
        for i, b in enumerate(self.brokers):
            if self.broker_state(i) in (RUNNING, PAUSED) and not b.alive():
                raise InfraError(f"broker {i} died outside the fault schedule; see {b.log_path}")
