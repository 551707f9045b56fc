"""The consumer workload: a consumer group of member processes (workload/member.py, librdkafka's; or the Java
client's, workload/java/ChaosMember.java, whose sink lines a relay thread per member applies: memberlines.py)
processing the variant's topic into its sink (workload/sink.py), and the consumer faults applied to it.

    group = ConsumerGroup(client, topic, spec, sink_path, member_log, group_id, stop, output=...)
    group.start()                 # the sink, then `members` processes (procs.spawn: tied to the run)
    group.serve(nemesis.workload) # the consumer faults (its table `served`) from now on
    ...                           # the producer runs, faults heal, the log is read back
    group.drain(ends)             # until the group's position reaches the end of every partition
    group.finish(ends)            # members stop (SIGTERM: graceful), final positions into the sink

The consumer faults are workload faults (target "workload"): the nemesis asks through WorkloadFaults,
this supervisor's thread applies them and answers, so applied_at is when the signal was sent.
  kill-member      SIGKILL of a running member caught in the middle of a batch (commit strategies: see
                   _kill_mid_batch), else in turn (slot 0, 1, 2, ...) among those that hold
                   partitions (any running one when none does); when the
                   fault heals a replacement (a new process and group member, same slot, the next
                   incarnation: m1.0 -> m1.1) starts. The group is one short for the fault's duration,
                   like an application whose orchestrator restarts a crashed instance.
  pause-member     SIGSTOP of a running member (chosen the same way) for the duration, then SIGCONT.
  storm-members    every `interval` s a member joins (a new process sN.0) or the last one that joined
                   leaves (SIGTERM: a graceful close), alternately; at heal the remaining ones leave.
A member that exits on its own is an infrastructure failure (the run stops, exit 3, naming its log):
exit code 2 says the broker does not support the group protocol asked for (KIP-848 on Tansu). A Java member is the
JVM itself (the signals reach its client); the supervisor reads the sink only once its relay has applied what the
member said (a member frozen for a kill is settled first; a stopped or killed one's relay is drained). Its relay
also answers, on the member's stdin, what an idempotent-sink member asks of the sink.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import procs
from ..clock import REAL, Clock
from ..faults.channel import KILL_MEMBER, PAUSE_MEMBER, STORM_MEMBERS, FaultTable
from ..offsets import admin_client
from ..spec import ConsumerSpec
from . import sink as sinks
from .javamember import member_settings
from .member import UNSUPPORTED
from .memberlines import Relay

TICK = 0.05  # seconds between two looks at the asks and the members
MID_BATCH_WAIT = 10.0  # seconds a member kill waits for a member in the middle of a batch
MEMBER = [sys.executable, "-m", "harness.workload.member"]  # a member process (settings in its environment)
RELAY_DRAIN = 30.0  # seconds a dead member's relay may take to apply what its pipe still holds
# A JVM's own exit status after a SIGTERM that came before its handler was set (while it compiled its source).
JVM_TERMINATED = 128 + signal.SIGTERM


@dataclass
class Slot:
    name: str  # m<slot>.<incarnation>, or s<k>.0 for a storm member
    proc: object  # subprocess.Popen
    state: str = "running"  # running, paused, killed, stopped
    relay: Relay | None = None  # a Java member's: its stdout into the sink

    def drained(self) -> None:
        """The member is gone: everything it said is in the sink once this returns (or RELAY_DRAIN passed)."""
        if self.relay is not None:
            self.relay.join(RELAY_DRAIN)


class ConsumerGroup:
    def __init__(self, client: dict, topic: str, partitions: int, spec: ConsumerSpec, sink_path: Path,
                 member_log: Callable[[str], Path], group_id: str, stop: threading.Event,
                 output: str | None = None, clock: Clock = REAL, environ: dict[str, str] | None = None,
                 java: tuple[str, ...] = ()):
        self.clock = clock
        self.environ = environ  # the members' environment: another client version's (clientenv.py), or ours
        self.java = tuple(java)  # the Java member's command line (foreignenv.ForeignEnv.member); (): member.py
        self.client, self.topic, self.partitions, self.spec = client, topic, partitions, spec
        self.sink_path, self.member_log, self.group_id = Path(sink_path), member_log, group_id
        self.output = output
        self.stop_workload = stop
        self.slots: list[list[Slot]] = []  # per slot, every incarnation (the last one is current)
        self.storm: list[Slot] = []
        self._storm_count = 0
        self._storm_thread: threading.Thread | None = None
        self._storm_stop = threading.Event()
        self._turn = 0
        self._faults = None
        self._lock = threading.Lock()
        self.served: FaultTable = {
            KILL_MEMBER: (self._kill, self._locked(self._replace)),  # _kill locks between its looks
            PAUSE_MEMBER: (self._locked(self._pause), self._locked(self._resume)),
            STORM_MEMBERS: (self._locked(self._start_storm), self._stop_storm),
        }
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.sink: sinks.Sink | None = None
        self.error = ""
        # Members killed because their client hung (said out loud, not the run's error): member -> in what, as it
        # said (_hung_in): close() after its stop, or a call it named.
        self.hung: dict[str, str] = {}
        self.drained = True

    # -- members -------------------------------------------------------------------------------
    def _spawn(self, name: str, transactional_id: str) -> Slot:
        cfg = {"member": name, "topic": self.topic, "group": self.group_id, "strategy": self.spec.strategy,
               "protocol": self.spec.group_protocol, "batch": self.spec.batch,
               "processing_ms": self.spec.processing_ms, "config": self.spec.config, "client": self.client,
               "sink": str(self.sink_path), "output": self.output, "transactional_id": transactional_id}
        if self.java:
            cfg["settings"] = member_settings(self.client["bootstrap.servers"], self.group_id, name, self.spec.strategy,
                                              self.spec.group_protocol, self.spec.batch, self.spec.config)
        env = {**(self.environ or os.environ), "KAFKA_CHAOS_MEMBER": json.dumps(cfg)}
        if not self.java:
            return Slot(name, procs.spawn(MEMBER, self.member_log(name), env=env))
        proc = procs.spawn(list(self.java), self.member_log(name), env=env, tell=True)
        return Slot(name, proc, relay=Relay(proc.stdout, sinks.Sink(self.sink_path, name), proc.stdin).start())

    def _spawn_slot(self, index: int) -> None:
        incarnation = len(self.slots[index]) if index < len(self.slots) else 0
        # One transactional.id per slot: a replacement's init_transactions aborts what its predecessor left open.
        slot = self._spawn(f"m{index}.{incarnation}", f"{self.group_id}-m{index}")
        if index < len(self.slots):
            self.slots[index].append(slot)
        else:
            self.slots.append([slot])

    @property
    def current(self) -> list[Slot]:
        return [incarnations[-1] for incarnations in self.slots]

    def start(self) -> None:
        sinks.create(self.sink_path)
        self.sink = sinks.Sink(self.sink_path, "harness")
        for i in range(self.spec.members):
            self._spawn_slot(i)
        self._thread = self.clock.start_thread(self._watch, "consumer-group")

    def serve(self, faults) -> None:
        """Apply the consumer faults asked for through this WorkloadFaults from now on (None: stop)."""
        self._faults = faults

    # -- the supervisor's thread: faults asked for, members alive --------------------------------
    def _watch(self) -> None:
        while not self.clock.wait(self._done, TICK):
            faults = self._faults
            if faults is not None and faults.pending:
                try:
                    faults.serve(self.served)
                except Exception:
                    pass  # the nemesis journals the fault as failed and stops the run
            with self._lock:
                for slot in self.current + self.storm:
                    if slot.relay is not None and slot.relay.error:
                        self._failed(slot, slot.relay.error)
                        return
                    if slot.state in ("running", "paused") and slot.proc.poll() is not None:
                        self._failed(slot)
                        return

    def _failed(self, slot: Slot, said: str = "") -> None:
        code = slot.proc.returncode
        log = self.member_log(slot.name)
        if said:
            self.error = f"consumer {slot.name} said what its sink lines cannot say: {said} (log: {log})"
        elif code == UNSUPPORTED:
            self.error = (f"the broker does not support group.protocol={self.spec.group_protocol} "
                          f"({_last_line(log)}; {log})")
        else:
            self.error = f"consumer {slot.name} exited with code {code} outside the fault schedule (log: {log})"
        slot.state = "stopped"
        self.stop_workload.set()

    def _victim(self, verb: str) -> Slot:
        """The next running member in turn that holds partitions (a member between assignments has nothing
        in hand to lose or repeat), else the next running one."""
        slots = self.current
        held = self.sink.holdings()
        for busy in (True, False):
            for k in range(len(slots)):
                slot = slots[(self._turn + k) % len(slots)]
                if slot.state == "running" and (held.get(slot.name) or not busy):
                    self._turn = (self._turn + k + 1) % len(slots)
                    return slot
        raise RuntimeError(f"{verb}: no running member of the group to act on")

    def _kill_mid_batch(self) -> bool:
        """Kill a member of a commit strategy caught in the middle of a batch, frozen (SIGSTOP) there, so the kill
        lands where a crash costs what the strategy risks: records processed and not committed (commit-after),
        or committed and not processed (commit-before). Each running member that holds partitions is frozen in
        turn and asked through the sink; one not mid-batch runs on (SIGCONT). Asked again every TICK (the lock
        released in between) for up to MID_BATCH_WAIT s: the kill is then late, and journaled so. False when
        no member was caught, or the strategy writes no record as it goes (idempotent-sink and transactional
        write a batch at once)."""
        if self.spec.strategy not in ("commit-after", "commit-before", "auto-commit"):
            return False
        deadline = self.clock.monotonic() + MID_BATCH_WAIT
        while True:
            with self._lock:
                held = self.sink.holdings()
                for slot in [s for s in self.current if s.state == "running" and held.get(s.name)]:
                    try:
                        os.kill(slot.proc.pid, signal.SIGSTOP)
                    except ProcessLookupError:
                        continue  # it died on its own: the supervisor's next look says so
                    if slot.relay is not None:  # what it said before it froze, in the sink first
                        if not _frozen(slot):
                            continue
                        slot.relay.settle()
                    if self.sink.mid_batch(slot.name):
                        self._kill_slot(slot)  # frozen: SIGKILL needs no SIGCONT
                        return True
                    os.kill(slot.proc.pid, signal.SIGCONT)
            if self.clock.monotonic() >= deadline or self.clock.wait(self._done, TICK):
                return False

    # -- the faults it serves: kind -> (apply, heal), each under the lock ---------------------------
    def _kill(self, params: dict) -> None:
        if not self._kill_mid_batch():
            with self._lock:
                self._kill_slot(self._victim(KILL_MEMBER))

    def _kill_slot(self, slot: Slot) -> None:
        slot.proc.kill()
        slot.proc.wait()
        slot.drained()
        slot.state = "killed"
        self.sink.event("killed", member=slot.name)

    def _replace(self, params: dict) -> None:
        """The first killed slot gets its replacement."""
        for i, slot in enumerate(self.current):
            if slot.state == "killed":
                self._spawn_slot(i)
                self.sink.event("replaced", member=slot.name, detail=self.current[i].name)
                return

    def _pause(self, params: dict) -> None:
        slot = self._victim(PAUSE_MEMBER)
        os.kill(slot.proc.pid, signal.SIGSTOP)
        _, status = os.waitpid(slot.proc.pid, os.WUNTRACED)  # until it is frozen: when the fault took effect
        if not os.WIFSTOPPED(status):  # it died first: the watcher reports it
            slot.proc.returncode = os.waitstatus_to_exitcode(status)
            raise RuntimeError(f"{PAUSE_MEMBER}: {slot.name} exited before it was frozen")
        slot.state = "paused"
        self.sink.event("paused", member=slot.name)

    def _resume(self, params: dict) -> None:
        for slot in self.current:
            if slot.state == "paused":
                os.kill(slot.proc.pid, signal.SIGCONT)
                slot.state = "running"
                self.sink.event("resumed", member=slot.name)
                return

    def _start_storm(self, params: dict) -> None:
        self._storm_stop.clear()
        self._storm_thread = self.clock.start_thread(self._storm, STORM_MEMBERS, (params.get("interval", 2.0),))

    def _stop_storm(self, params: dict) -> None:
        self._end_storm()
        self._leave_all()  # takes the lock itself

    def _locked(self, action):
        def run(params: dict) -> None:
            with self._lock:
                action(params)
        return run

    def _end_storm(self) -> None:
        self._storm_stop.set()

    def _storm(self, interval: float) -> None:
        while not self.clock.wait(self._storm_stop, interval):
            with self._lock:
                if self.storm:
                    self._leave(self.storm.pop())
                else:
                    self._storm_count += 1
                    slot = self._spawn(f"s{self._storm_count}.0", f"{self.group_id}-s{self._storm_count}")
                    self.storm.append(slot)
                    self.sink.event("joined", member=slot.name)

    def _leave(self, slot: Slot) -> None:
        slot.state = "stopped"
        procs.stop(slot.proc, timeout=30)
        slot.drained()
        self.sink.event("left", member=slot.name, detail=f"exit {slot.proc.returncode}")

    def _leave_all(self) -> None:
        if self._storm_thread is not None:
            self._storm_thread.join()
        with self._lock:
            while self.storm:
                self._leave(self.storm.pop())

    # -- the end -------------------------------------------------------------------------------
    def positions(self) -> dict[int, int | None]:
        """Where the group would start each partition now: the offsets it committed (the sink's for
        idempotent-sink); None where it has none."""
        if self.spec.strategy == "idempotent-sink":
            return dict(self.sink.db.execute("SELECT partition, next_offset FROM offsets").fetchall())
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        admin = admin_client(self.client)  # not AdminClient: its log would reach the terminal (offsets.py)
        request = ConsumerGroupTopicPartitions(self.group_id, [TopicPartition(self.topic, p)
                                                               for p in range(self.partitions)])
        found = admin.list_consumer_group_offsets([request])[self.group_id].result(30)
        return {tp.partition: tp.offset for tp in found.topic_partitions if tp.offset >= 0}

    def drain(self, ends: dict[int, int], timeout: float) -> bool:
        """Wait until the group's position reaches `ends` ({partition: last offset + 1}) everywhere, a
        member fails, or `timeout`; False if it did not get there."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.error:
            try:
                at = self.positions()
            except Exception:  # the group coordinator moving: ask again
                at = {}
            if all(at.get(p, -1) >= end for p, end in ends.items() if end > 0):
                return True
            time.sleep(0.5)
        self.drained = False
        return False

    def stop(self, timeout: float = 30.0) -> None:
        """Every member stops: SIGTERM to all (a paused one resumed first), SIGKILL to those still there
        after `timeout`; a member that did not stop cleanly is an error. Safe to call twice."""
        self._storm_stop.set()
        if self._storm_thread is not None and self._storm_thread is not threading.current_thread():
            self._storm_thread.join()
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            members = [slot for slot in self.current + self.storm if slot.state in ("running", "paused")]
            for slot in members:
                try:
                    os.kill(slot.proc.pid, signal.SIGCONT)
                    slot.proc.terminate()
                except ProcessLookupError:
                    pass
                slot.state = "stopped"
            deadline = time.monotonic() + timeout
            for slot in members:
                procs.reap(slot.proc, timeout=max(0.1, deadline - time.monotonic()))  # SIGTERMed above
                slot.drained()
                # 0: it closed; -SIGTERM (a JVM's 143): it was still starting (no handler yet); -SIGKILL: it hung
                # past timeout.
                code = slot.proc.returncode
                if code == JVM_TERMINATED and slot.relay is not None:
                    code = -signal.SIGTERM
                hung = self._hung_in(slot.name) if code == -signal.SIGKILL else ""
                if hung:
                    # The client under test hung, not the run: librdkafka 2.1.0's close() did, leaving a group
                    # whose coordinator moved; 2.16.0's send_offsets_to_transaction() did (member.py).
                    self.hung[slot.name] = hung
                    if hung == "close()":  # a call's hang the member said itself
                        self.sink.event("hung", member=slot.name, detail=f"close() has not returned after its stop "
                                                                          f"({timeout:g} s)")
                elif code not in (0, -signal.SIGTERM) and not self.error:
                    self.error = (f"consumer {slot.name} exited with code {code} when asked to "
                                  f"stop (log: {self.member_log(slot.name)})")

    def _hung_in(self, member: str) -> str:
        """What the member said its client hung in: a call its watchdog named (a `hung` event), or close() (it
        logged its stop: it had left its loop, only its client's close was left); '' if neither."""
        last = self.sink.db.execute("SELECT event, detail FROM events WHERE member = ? AND event IN ('hung', 'stop') "
                                    "ORDER BY rowid DESC LIMIT 1", (member,)).fetchone()
        return "" if last is None else "close()" if last[0] == "stop" else last[1]

    def close(self) -> None:
        """After stop(): the harness's connection to the sink is closed (finish() closes it too); safe twice."""
        if self.sink is not None:
            self.sink.close()

    def finish(self, ends: dict[int, int]) -> None:
        """After stop(): the final positions, and a transactional group's output as processed rows."""
        at = self.positions()
        self.sink.write_positions({p: (at.get(p), end) for p, end in ends.items()})
        if self.output:
            self.sink.add_processed(read_output(self.client, self.output, self.partitions))
        self.sink.db.execute("PRAGMA journal_mode=DELETE")  # one self-contained file in the run folder
        self.sink.close()


def read_output(client: dict, topic: str, partitions: int, timeout: float = 60.0) -> list[tuple]:
    """A transactional group's output topic read with read_committed, from the start to its end, as
    processed rows (partition, offset, value, member, session, n, processed_at) of the input records."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({**client, "group.id": "kafka-chaos-output-read", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    rows, open_ = [], set(range(partitions))
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while open_ and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        open_.discard(m.partition())
                    continue
                member, session, n, at = m.key().decode().split(":")
                partition, offset, value = m.value().decode().split(":")
                rows.append((int(partition), int(offset), int(value) if value else None, member, int(session),
                             int(n), float(at)))
    finally:
        consumer.close()
    if open_:
        raise TimeoutError(f"the output topic {topic} was not read to its end in {timeout:.0f} s "
                           f"(partitions {sorted(open_)})")
    return rows


def _frozen(slot: Slot) -> bool:
    """After its SIGSTOP: wait until the member is stopped (it then writes nothing more); False if it died first."""
    _, status = os.waitpid(slot.proc.pid, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        return True
    slot.proc.returncode = os.waitstatus_to_exitcode(status)  # the supervisor's next look reports it
    return False


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][-300:] if lines else "no output"
