"""The producer of a foreign Python client (kafka-python, aiokafka) in a child process, speaking the protocol of
workload/foreignproc.py. It is run by its path, isolated (python -I: the standard library and the client's
cache folder only, foreignenv.py), so it imports nothing of the harness and nothing of its environment:

    python -I pychild.py IMPL FOLDER                  the workload: the task comes as one JSON line on stdin
    python -I pychild.py IMPL FOLDER --version        answers `client IMPL VERSION` (the version it imported)
    python -I pychild.py IMPL FOLDER --check JSON     builds the producer with those settings, connecting
                                                      nowhere: `ok`, or `refused WORDS` (the client's words)

Message i goes to partition i % P with value i // P (ASCII decimal, no key), handed in index order, in
chunks of task["chunk"] sends; each send's outcome becomes one line, written by the delivery callback's
thread into a queue that the main loop empties between chunks. A send whose send() raised was refused by
the client before anything was transmitted (`r`): the workload ends there, as the harness's own producer
ends on a refusal that is not a full queue. SIGTERM stops the handing; what the client still reports within
a short close is written, then the result.

A transactional task (task["transactions"]) is run as the Java child runs it (foreignproc.py): transaction K,
named by its `b` line, holds S sends, begun before its first and, after its last, committed or (planned) flushed
and aborted; a commit that fails is aborted when the client can, else its outcome is unknown and the workload ends,
as it does on any error the client cannot recover from. Each transaction's end is one `t` line. A restart between
two of its sends aborts it, and its messages are sent again in the next transactions (transaction_loop).
A pause (plain or idempotent producer) leaves the instance running, its callbacks' reports held (Paused), while a
new one sends again what was not acknowledged; as it resumes, it flushes and its reports are told in its session.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sys
import threading
import time

NOWHERE = "127.0.0.1:9"  # --check: a loopback address nothing answers on
CLOSE_TIMEOUT = 2.0  # seconds a stopping child gives its client to report what it can
SERVED = ("restart", "pause", "resume")  # the run's commands while the workload sends (the producer faults)


def error_name(e: BaseException) -> str:
    """The stable name of an implementation's error: its exception class's simple name."""
    return type(e).__name__


def said(e: BaseException) -> str:
    """What the error says, on one line, without its class name (the result's `error`; `fatal` names it)."""
    text = " ".join(str(e).split())
    prefix = f"{error_name(e)}: "
    while text.startswith(prefix):
        text = text[len(prefix):]
    return text or error_name(e)


def words(e: BaseException) -> str:
    """The error as a person reads it: its name, then what it says."""
    text = said(e)
    return text if text == error_name(e) else f"{error_name(e)}: {text}"


def started(start, stop: threading.Event, within: float):
    """start() until it succeeds: a client that cannot reach the cluster yet (the faults run already) tries
    again, as an application would, for up to `within` seconds; the last error is raised then."""
    deadline = time.monotonic() + within
    while True:
        try:
            return start()
        except Exception as e:
            if stop.is_set() or time.monotonic() >= deadline:
                raise
            print(f"start: {words(e)}; trying again", file=sys.stderr, flush=True)
            stop.wait(0.5)


class Lines:
    """Outcome lines from any thread; the main loop writes them (one write, one flush) between chunks."""

    def __init__(self):
        self.q = collections.deque()
        self.first_acked = False

    def put(self, line: str) -> None:
        self.q.append(line)

    def acked(self, line: str) -> None:
        """An acknowledgement's line; the first one is also said in the client log (stderr)."""
        self.q.append(line)
        if not self.first_acked:
            self.first_acked = True
            print(f"first send acknowledged ({line})", file=sys.stderr, flush=True)

    def emit(self) -> None:
        out = []
        pop = self.q.popleft
        try:
            while True:
                out.append(pop())
        except IndexError:
            pass
        if out:
            sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.flush()


class Again:
    """A send() that timed out (KafkaTimeoutError, both implementations: it waited for metadata, or for buffer
    space, and appended nothing) is handed again, as an application does and as the harness's own producer does
    on a full queue, for up to `within` seconds from the first timeout; any other error, or a stop, refuses it."""

    def __init__(self, within: float, stop: threading.Event):
        self.within, self.stop, self.deadline = within, stop, None

    def after(self, e: BaseException, p: int, v: int) -> bool:
        """True: send (p, v) again."""
        if error_name(e) != "KafkaTimeoutError" or self.stop.is_set():
            return False
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.within
        if now >= self.deadline:
            return False
        print(f"send of partition {p} value {v}: {words(e)}; handing it again", file=sys.stderr, flush=True)
        return True


class Paused:
    """The instance a pause of the producer left running (one at a time), its session, and the reports of its
    callbacks held until it resumes: (message index when acknowledged, else None; line)."""

    def __init__(self):
        self.instance, self.session, self.held = None, -1, []

    @staticmethod
    def verb(word: str) -> str:
        return "paused" if word == "p" else "restarted"

    def may_pause(self, r: "Result") -> bool:
        """False (r says why) while an instance is paused."""
        if self.instance is not None:
            r.error = "a pause of the producer: the paused one has not resumed yet (one pause at a time)"
        return not r.error

    def told(self, is_acked: bytearray) -> str:
        """What ends a resume, as one item of Lines (so no line of the session now comes inside): the paused
        session's reports between `z J` and `z -`; `z -` alone when none is paused. The instance is forgotten."""
        if self.instance is None:
            return "z -"
        for i, _ in self.held:
            if i is not None:
                is_acked[i] = 1
        block = "\n".join([f"z {self.session}", *(line for _, line in self.held), "z -"])
        print(f"session {self.session} resumed and closed", file=sys.stderr, flush=True)
        self.instance, self.session, self.held = None, -1, []
        return block


class Stopped(BaseException):
    """SIGTERM during a call that blocks without a timeout (kafka-python's commit and abort): it is cut short."""


class Hung(Stopped):
    """A call that waits without a timeout of its own (kafka-python's flush, commit and abort; aiokafka's) still
    waiting HANG["grace"] seconds past all the client's own timeouts together: the client hangs. The child's
    watchdog cuts it short as a SIGTERM would, and the workload ends with the hang as its error (the run: the
    producer failed for good, its producer_error says where it hung). Without it a client that waits for ever
    holds the run for ever: kafka-python 3.0.12's commit_transaction() did, after its coordinator's connection
    failed (2026-11-30)."""


# The watch over calls that wait without a timeout: after (s; 0: no watch) and grace, set from the task (watch());
# pending: the hang the watchdog saw, raised in the main thread by its SIGUSR1 (hung_now).
HANG = {"after": 0.0, "grace": 0.0, "pending": ""}


def watch(task: dict, defaults: dict[str, int]) -> None:
    """HANG's bound for this task: the client's timeouts (`defaults`: their names and the implementation's
    defaults, ms, each overridden by the task's settings) together, and the task's hang_grace (none: no watch)."""
    grace = task.get("hang_grace") or 0.0
    timeouts = [task["settings"].get(name, default) for name, default in defaults.items()]
    HANG["grace"] = grace
    HANG["after"] = sum(t for t in timeouts if isinstance(t, (int, float)) and t > 0) / 1000 + grace if grace else 0.0


def hang_words(name: str) -> str:
    return (f"the client hangs: {name}() has not returned after {HANG['after']:g} s (all its own timeouts "
            f"together, and {HANG['grace']:g} s more)")


class Transactions:
    """A transactional task's plan (transactions of `size` sends, those in `aborts` aborted on purpose) and the
    one in progress; each transaction's end becomes a `t` line."""

    def __init__(self, plan: dict, lines: Lines):
        self.size, self.aborts, self.lines = plan["size"], set(plan["aborts"]), lines
        self.planned_count = plan["planned"]  # the plan covers transactions 0 .. planned_count-1
        self.open = -1  # the transaction in progress, -1: none
        self.sends = 0  # handed in it
        self.fresh = 0  # fresh messages given to transactions so far
        # A paused instance's open transaction: (its number, the rest of its fresh messages, sends handed in it).
        self.zombie: tuple[int, list[int], int] | None = None

    def planned(self) -> bool:
        return self.open in self.aborts

    @staticmethod
    def line(number: int, outcome: str, cause: str, error: str, sends: int) -> str:
        return f"t {number} {outcome} {cause} {error} {sends} {int(time.time() * 1000)}"

    def ended(self, outcome: str, cause: str, error: str = "-") -> None:
        self.lines.put(self.line(self.open, outcome, cause, error, self.sends))
        self.open = -1

    def paused(self, indices: list[int], rest_from: int) -> list[int]:
        """A pause took the open transaction: the paused instance keeps the rest of its fresh messages (from
        rest_from), to send when it resumes; returns what its successor sends again (what it had handed, and
        the resends it had not)."""
        self.zombie = (self.open, indices[rest_from:], self.sends)
        self.open = -1
        return indices[:rest_from]

    def end_steps(self, failed):
        """The rules of ending the open transaction, for both implementations: commit it, or flush it (its records
        written: read_committed must leave them out) and abort it as planned; a commit that fails is aborted when
        the client can (aborted, cause error), else its outcome is unknown. A generator: it yields each client call
        to make ("flush", "abort", "commit") and is sent what the call raised (None: nothing); a Stopped (a SIGTERM
        in a call that waits without a timeout) is thrown into it, and raised again once its `t` line is said.
        failed(e) says whether the workload cannot go on (the client holds a fatal error; else `e`, if given, ends
        it). It returns whether the workload goes on (run it with drive() or drive_async())."""
        if self.planned():
            try:
                for call in ("flush", "abort"):
                    raised = yield call
                    if raised is not None:
                        raise raised
            except Hung:  # never to be committed: aborted at its timeout by the coordinator
                self.ended("aborted", "error", "Hung")
                raise
            except Stopped:  # never to be committed, as one left open
                self.ended("aborted", "interrupted")
                raise
            except Exception as e:
                self.ended("aborted", "planned", error_name(e))
                failed(e)
                return False
            self.ended("aborted", "planned")
            return True
        try:
            raised = yield "commit"
            if raised is None:
                self.ended("committed", "-")
                return True
            if not failed(None):
                again = yield "abort"
                if again is None:
                    self.ended("aborted", "error", error_name(raised))
                    return True
                failed(again)
        except Hung:
            self.ended("unknown", "error", "Hung")
            raise
        except Stopped:
            self.ended("unknown", "interrupted")
            raise
        self.ended("unknown", "error", error_name(raised))
        return False

    @staticmethod
    def zombie_steps(number: int, sends: int, held_fatal, session: int):
        """How a paused instance resumed as a zombie ends its transaction, for both implementations: it asks to
        commit it, and a commit that fails is aborted when the client can (held_fatal() is None: no fatal error
        held), as end_steps does for the current instance and as the Java child does. A generator as end_steps
        (drive() or drive_async()); a Stopped thrown in ends it. It returns the transaction's `t` line: fenced,
        committed only if the commit returned (the broker let a fenced instance commit: the analysis says what it
        cost), else aborted with the commit's error."""
        outcome, error = "aborted", "-"
        try:
            raised = yield "commit"
            if raised is None:
                outcome = "committed"
            else:
                error = error_name(raised)
                if held_fatal() is None:
                    again = yield "abort"
                    print(f"paused session {session}: abort_transaction() after the failed commit: "
                          f"{'returned' if again is None else words(again)}", file=sys.stderr, flush=True)
        except Stopped:  # a SIGTERM: the run is stopping
            pass
        return Transactions.line(number, outcome, "fenced", error, sends)

    def left_open(self, r: "Result", stop: threading.Event) -> None:
        """Stopped, or failed, inside a transaction it never asked to end."""
        if self.open >= 0:
            self.ended("aborted", "interrupted" if stop.is_set() and not r.error else "error", r.fatal or "-")


def drive(steps, call) -> bool:
    """Runs a Transactions.end_steps() generator, call(name) making each call (kafka-python's: they block)."""
    try:
        name = next(steps)
        while True:
            try:
                call(name)
                raised = None
            except Stopped as e:
                steps.throw(e)  # says so, and raises it again
            except Exception as e:
                raised = e
            name = steps.send(raised)
    except StopIteration as done:
        return done.value


async def drive_async(steps, call) -> bool:
    """drive() for aiokafka, whose calls are awaited."""
    try:
        name = next(steps)
        while True:
            try:
                await call(name)
                raised = None
            except Stopped as e:
                steps.throw(e)
            except Exception as e:
                raised = e
            name = steps.send(raised)
    except StopIteration as done:
        return done.value


def send_loop(task: dict, tx: Transactions | None, lines: Lines, r: "Result", stop: threading.Event,
              commands: "Commands"):
    """The workload's send loop, one for both implementations: a generator that yields each call into the client
    for its driver to make (take() or take_async()) and is sent what it returned. It keeps r.handed (the messages
    handed so far, in index order).
      ("tick", None)     between two pieces, before the lines are written: the client's due callbacks run
      ("failed", None)   has the client failed for good (or the workload otherwise ended)? True: stop here
      ("restart", arg)   the run asked for a producer restart: arg None (a plain or idempotent producer: the
                         instance hands again what was not acknowledged), or for a transactional one (N, F): its
                         `s` line says the old session handed fresh messages up to N and the new one's start at F
                         (the send loop sends the aborted transaction's again); False: it failed
      ("pause", arg)     the run asked for a producer pause: the instance is left running, its reports held, and
                         a new one hands again what was not acknowledged (arg None), or, transactional (arg (N, F),
                         its line `p`), initialises its transactions (fencing the paused one; the send loop keeps
                         the paused one's rest in tx.zombie); False: it failed
      ("resume", None)   the paused instance resumes: flushed (a transactional one hands tx.zombie's rest and asks
                         to commit it), closed, its reports told in its session
      ("sleep", s)       wait s seconds (the workload's rate)
      ("begin", None)    begin the transaction of the next message; False: it failed (r says why)
      ("send", i)        hand message i; False: refused, or stopped while it waited (the workload ends)
      ("end", None)      end the open transaction (Transactions.end_steps); False: the workload cannot go on"""
    if tx is not None:
        yield from transaction_loop(task, tx, lines, r, stop, commands)
        return
    n, chunk, rate = task["messages"], task["chunk"], task["rate"]
    count = 0
    while count < n:
        if count and not (yield from between(count, count, rate, lines, r, stop, commands, True)):
            break
        if count % chunk == 0:
            lines.put(f"chunk {int(time.time() * 1000)}")
        end = min(n, (count // chunk + 1) * chunk)
        for i in range(count, end):
            if not (yield "send", i):
                end = i + 1
                break
        count = r.handed = end
        if r.error or stop.is_set():
            break


def between(sent: int, sends: int, rate, lines: Lines, r: "Result", stop: threading.Event, commands: "Commands",
            replaces: bool, arg=None):
    """Between two pieces: the lines written, then a stop, a failed client, the run's command (a restart or a
    pause, served with `arg` when `replaces`, else kept for a later step; a resume), the pace. Returns False when
    the workload ends here, "restarted" after a restart, "paused" after a pause, else True."""
    lines.put(f"sent {sent}")
    yield "tick", None
    lines.emit()
    if stop.is_set() or (yield "failed", None):
        return False
    command = commands.poll(keep=() if replaces else ("restart", "pause"))
    if command is not None:
        if command not in SERVED or not (yield command, arg if command in ("restart", "pause") else None):
            if not r.error:  # the end of stdin, or a line it cannot serve: the run is stopping
                stop.set()
            return False
    ahead = r.t0 + sends / rate - time.monotonic() if rate else 0
    if ahead > 0:
        yield "sleep", ahead
    return {"restart": "restarted", "pause": "paused"}.get(command, True)


def transaction_loop(task: dict, tx: Transactions, lines: Lines, r: "Result", stop: threading.Event,
                     commands: "Commands"):
    """send_loop() of a transactional task, as the Java child's transactions(): transaction K's `b` line names its
    messages, those a restart took from their transaction first (sent again, in this session), then fresh ones,
    `size` in all. A restart or a pause is served between two of its sends (pieces of `block` sends, as
    transactional.py's; one asked at a transaction's end waits for the next), with (fresh messages the old
    session handed, where the new one's start). A restart closes the instance at once: the transaction is
    aborted, cause restart, and its messages are sent again first thing in the next transactions. A pause leaves
    the instance with its transaction (tx.zombie): what it had handed is sent again so, the rest is its own."""
    n, chunk, rate = task["messages"], task["chunk"], task["rate"]
    block = max(1, min(64, tx.size // 2))
    pending: list[int] = []  # messages to send again, ascending
    number = sends = chunks = 0  # chunks: the chunk lines said (fresh message i's is the i // chunk th)
    while pending or tx.fresh < n:
        if number >= tx.planned_count:
            r.error = f"the plan of aborts covers {tx.planned_count} transactions, and restarts made more"
            return
        if number and not (yield from between(r.handed, sends, rate, lines, r, stop, commands, False)):
            return
        if not (yield "begin", None):
            return
        again, pending = pending[: tx.size], pending[tx.size:]
        lo = tx.fresh
        tx.fresh = hi = min(n, lo + tx.size - len(again))
        tx.open, tx.sends = number, 0
        number += 1
        lines.put(f"b {tx.open} {lo} {hi}" + "".join(f" {i}" for i in again))
        indices = again + list(range(lo, hi))
        k = 0
        while k < len(indices):
            if k:
                step = yield from between(r.handed, sends, rate, lines, r, stop, commands, True,
                                          (lo + max(0, k - len(again)), tx.fresh))
                if step is False:
                    return
                if step == "restarted":  # the restart took the open transaction: aborted, sent again
                    tx.ended("aborted", "restart")
                    pending = sorted(set(pending) | set(indices))
                    break
                if step == "paused":  # the paused instance keeps it, and its rest
                    pending = sorted(set(pending) | set(tx.paused(indices, max(k, len(again)))))
                    break
            end = min(len(indices), k + block)
            for j in range(k, end):
                i = indices[j]
                while j >= len(again) and i // chunk >= chunks:  # the run times fresh sends by these
                    lines.put(f"chunk {int(time.time() * 1000)}")
                    chunks += 1
                if not (yield "send", i):
                    tx.sends += j + 1 - k
                    r.handed = max(r.handed, lo + max(0, j + 1 - len(again)))
                    return
            tx.sends += end - k
            sends += end - k
            k = end
            r.handed = max(r.handed, lo + max(0, k - len(again)))
            if r.error or stop.is_set():
                return
        else:
            if not (yield "end", None):
                return


def take(steps, do) -> None:
    """Runs a send_loop() generator, do(kind, arg) taking each step (kafka-python's calls block)."""
    try:
        step = next(steps)
        while True:
            step = steps.send(do(*step))
    except StopIteration:
        pass


async def take_async(steps, do) -> None:
    """take() for aiokafka, whose steps are awaited."""
    try:
        step = next(steps)
        while True:
            step = steps.send(await do(*step))
    except StopIteration:
        pass


def ms(t0: float) -> str:
    return f"{(time.perf_counter() - t0) * 1000:.3f}"


class Result:
    def __init__(self):
        self.handed = 0
        self.error = ""
        self.fatal = ""
        self.t0 = time.monotonic()

    def refused(self, lines: Lines, p: int, v: int, e: BaseException) -> None:
        lines.put(f"r {p} {v} {error_name(e)}")
        self.failed(e)

    def failed(self, e: BaseException, fatal: bool = False) -> None:
        """The workload ends with what `e` says; `fatal`: the client failed for good with it."""
        self.error, self.fatal = f"fatal error: {said(e)}" if fatal else said(e), error_name(e)

    def ends(self, held_fatal, e: BaseException | None = None) -> bool:
        """Whether the workload cannot go on: it ended already, or the client failed for good (held_fatal(): the
        fatal error its transaction manager or sender holds, or None; its sender aborts every batch from then on,
        as librdkafka's fatal error does), or `e` ends it. The result says which."""
        if self.error:
            return True
        error = held_fatal()
        if error is not None:
            self.failed(error, fatal=True)
        elif e is not None:
            self.failed(e)
        return bool(self.error)

    def line(self, stop: threading.Event) -> str:
        return "result " + json.dumps({"handed": self.handed, "interrupted": stop.is_set(), "error": self.error,
                                       "fatal": self.fatal, "duration": time.monotonic() - self.t0})


GOING = [False]  # the run said `go`: from then on a SIGTERM stops the handing; before, the child ends at once
BLOCKED = [False]  # in a call that waits without a timeout: a SIGTERM raises Stopped there


def terminated(stop: threading.Event) -> None:
    """SIGTERM: stop handing; before `go` nothing was handed, and building or connecting the client may block for
    max_block_ms: the child answers its (empty) result and ends at once."""
    stop.set()
    if not GOING[0]:
        sys.stdout.write(Result().line(stop) + "\n")
        sys.stdout.flush()
        os._exit(0)
    if BLOCKED[0]:
        BLOCKED[0] = False
        raise Stopped


def hung_now() -> None:
    """SIGUSR1, from the watchdog: the call it saw hang is cut short (Hung), if it is still waiting."""
    hang, HANG["pending"] = HANG["pending"], ""
    if BLOCKED[0] and hang:
        BLOCKED[0] = False
        raise Hung(hang)


def blocking(call, name: str = ""):
    """call(), cut short by a SIGTERM (Stopped) or, named, by the watchdog once it hangs (Hung): a timer that, if
    the call is still waiting HANG["after"] seconds on, dumps every thread's stack to the client log and signals
    the main thread."""
    def overdue():
        if BLOCKED[0]:
            HANG["pending"] = hang_words(name)
            print(HANG["pending"], file=sys.stderr, flush=True)
            import faulthandler
            faulthandler.dump_traceback(sys.stderr, all_threads=True)
            os.kill(os.getpid(), signal.SIGUSR1)

    timer = threading.Timer(HANG["after"], overdue) if name and HANG["after"] else None
    BLOCKED[0] = True
    try:
        if timer is not None:
            timer.daemon = True
            timer.start()
        return call()
    finally:
        BLOCKED[0] = False
        if timer is not None:
            timer.cancel()


class Commands:
    """The run's lines after the task (go, restart, flush), read by a thread of their own: a restart is asked while
    the workload sends. END: the end of stdin (the run is stopping)."""

    END = ""

    def __init__(self):
        import queue
        self.q = queue.Queue()
        self.kept: str | None = None  # a line poll() kept for later
        threading.Thread(target=self._read, name="commands", daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            self.q.put(line.strip())
        self.q.put(self.END)

    def poll(self, keep: tuple[str, ...] = ()) -> str | None:
        """The next line if one came, else None; a line in `keep` is kept for a later poll (and None returned)."""
        line, self.kept = self.kept, None
        if line is None:
            try:
                line = self.q.get_nowait()
            except Exception:
                return None
        if line in keep:
            self.kept = line
            return None
        return line

    def take(self) -> str:
        line, self.kept = self.kept, None
        return self.q.get() if line is None else line


def answer(lines: Lines, say: str, expect: str, stop: threading.Event, commands: Commands, serve=None) -> bool:
    """Say `say` (ready, handed) and wait for the run's `expect` (go, flush), serving a restart, a pause or a
    resume meanwhile with serve(command) (None: none can come; it returns False when it failed); the end of stdin,
    or a stop, means the run is stopping (False). A stopped child says nothing more than its result."""
    if stop.is_set():
        return False
    lines.put(say)
    lines.emit()
    line = commands.take()
    while line in SERVED and serve is not None:
        if not serve(line):
            stop.set()
            break
        lines.emit()
        line = commands.take()
    if line != expect:
        stop.set()
    return not stop.is_set()


# -- kafka-python -------------------------------------------------------------------------------------------------
class KafkaPython:
    name = "kafka-python"

    def version(self) -> str:
        import kafka
        return kafka.__version__

    def check(self, settings: dict) -> None:
        from kafka import KafkaProducer
        # An api_version spares the constructor its probe of the (absent) brokers.
        producer = KafkaProducer(**{"api_version": (2, 8), **settings, "bootstrap_servers": NOWHERE})
        producer.close(timeout=0)

    def run(self, task: dict, lines: Lines, stop: threading.Event) -> Result:
        from kafka import KafkaProducer
        r = Result()
        tx = Transactions(task["transactions"], lines) if task.get("transactions") else None
        watch(task, {"delivery_timeout_ms": 120000, "request_timeout_ms": 30000, "transaction_timeout_ms": 60000})

        def start():
            producer = KafkaProducer(bootstrap_servers=task["bootstrap"], **task["settings"])
            try:  # connected, the topic's partitions known: sending starts at once on `go`
                if tx is not None:
                    producer.init_transactions()
                producer.partitions_for(task["topic"])
            except Exception:
                producer.close(timeout=0)
                raise
            return producer

        try:
            producer = started(start, stop, task["flush_timeout"])
        except Exception as e:  # no broker answered, or a setting it refuses only now
            r.error, r.fatal = said(e), error_name(e)
            return r
        topic, parts, n = task["topic"], task["partitions"], task["messages"]
        put, told = lines.put, lines.acked
        commands = Commands()
        if not answer(lines, "ready", "go", stop, commands):
            producer.close(timeout=0)
            return r
        GOING[0] = True
        r.t0 = time.monotonic()
        session = [0]  # the instance now: a callback of an earlier one that comes after its restart is dropped
        pending = collections.Counter()  # session -> its sends not reported yet
        is_acked = bytearray(n)  # message index -> told acknowledged: what a new instance skips
        paused = Paused()
        switch = threading.Lock()  # a callback's look at the session, and its line, against a pause's switch

        def acked(s, p, v, t, md):
            with switch:
                if s == session[0]:
                    is_acked[v * parts + p] = 1
                    told(f"a {p} {v} {md.offset} {ms(t)}")
                elif s == paused.session:
                    paused.held.append((v * parts + p, f"a {p} {v} {md.offset} {ms(t)}"))
                pending[s] -= 1

        def failed(s, p, v, t, e):
            with switch:
                if s == session[0]:
                    put(f"e {p} {v} {error_name(e)} {ms(t)}")
                elif s == paused.session:
                    paused.held.append((None, f"e {p} {v} {error_name(e)} {ms(t)}"))
                pending[s] -= 1

        def hand(instance, s: int, i: int) -> Exception | None:
            """Message i handed to `instance` (of session s); what its send() raised, if it refused it."""
            p, v = i % parts, i // parts
            t = time.perf_counter()
            again = Again(task["flush_timeout"], stop)
            while True:
                try:
                    future = instance.send(topic, value=b"%d" % v, partition=p)
                    break
                except Exception as e:
                    if not again.after(e, p, v):
                        return e
            pending[s] += 1
            future.add_callback(acked, s, p, v, t)
            future.add_errback(failed, s, p, v, t)
            return None

        def send(i) -> bool:
            """Message i handed to the instance now; False: its send() raised (refused, the workload ends)."""
            e = hand(producer, session[0], i)
            if e is not None:
                r.refused(lines, i % parts, i // parts, e)
            return e is None

        def restart(arg=None) -> bool:
            """A restart: the instance is closed without flushing (what is queued or in flight fails through
            its errback, on kafka-python's sender thread: waited for up to CLOSE_TIMEOUT), and a new one hands
            again, in index order, every message handed and not acknowledged; a transactional one (arg: send_loop's)
            initialises its transactions, fencing the old one, and sends nothing itself."""
            old = session[0]
            self.close_now(producer)
            deadline = time.monotonic() + CLOSE_TIMEOUT
            while pending[old] > 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            if arg is not None:
                return successor("s", arg)
            return replace("s")

        def successor(word: str, arg: tuple[int, int]) -> bool:
            """A new transactional instance (session), said by `word K N F` (send_loop's arg: N, F), initialises its
            transactions, which fences the one before it (and aborts what that one left open)."""
            nonlocal producer
            with switch:  # from here on the old session's callbacks are dropped (restart) or held (pause)
                session[0] += 1
                put(f"{word} {session[0]} {arg[0]} {arg[1]}")
            print(f"producer {paused.verb(word)}: session {session[0]}", file=sys.stderr, flush=True)
            try:
                producer = started(start, stop, task["flush_timeout"])
            except Exception as e:
                r.failed(e)
                return False
            return True

        def replace(word: str) -> bool:
            """A new instance (session), said by the line `word K handed`, hands again, in index order, every
            message handed and not acknowledged."""
            nonlocal producer
            producer = KafkaProducer(bootstrap_servers=task["bootstrap"], **task["settings"])
            with switch:  # from here on the old session's callbacks are dropped (restart) or held (pause)
                session[0] += 1
                put(f"{word} {session[0]} {r.handed}")
            print(f"producer {paused.verb(word)}: session {session[0]} after {r.handed} messages", file=sys.stderr,
                  flush=True)
            return all(send(i) for i in range(r.handed) if not is_acked[i])

        def pause(arg=None) -> bool:
            """A pause: the instance is left running (its sender thread goes on sending what it holds, as
            librdkafka's threads do when the application stops calling it), its reports held; a new one takes
            over as after a restart (its line `p`; a transactional one: arg, send_loop's)."""
            if not paused.may_pause(r):
                return False
            paused.instance, paused.session = producer, session[0]
            return replace("p") if arg is None else successor("p", arg)

        def finish_zombie(zombie) -> None:
            """A paused transactional instance resumes as a zombie: it hands the rest of its transaction and asks to
            commit it; every line of it (the rest's `late`, a refusal, its `t`: fenced) held for its session."""
            number, rest, sends = tx.zombie
            tx.zombie = None
            if rest:
                with switch:
                    paused.held.append((None, f"late {rest[0]} {rest[-1] + 1}"))
            for i in rest:
                e = hand(zombie, paused.session, i)
                if e is not None:  # a fenced client may refuse at once
                    with switch:
                        paused.held.append((None, f"r {i % parts} {i // parts} {error_name(e)}"))
                sends += 1
            line = drive(tx.zombie_steps(number, sends, lambda: self.held_fatal(zombie), paused.session),
                         lambda name: blocking(getattr(zombie, f"{name}_transaction"), f"{name}_transaction"))
            with switch:
                paused.held.append((None, line))

        def resume(_=None, flush: bool = True) -> bool:
            """The paused instance flushes (for up to flush_timeout; not when the child is stopping; a transactional
            one finishes its transaction: finish_zombie), is closed (what is still out fails through its errback)
            and its reports are told in its session, between `z J` and `z -`."""
            if paused.instance is not None:
                try:
                    if tx is not None and tx.zombie is not None and flush:
                        finish_zombie(paused.instance)
                    elif flush:
                        paused.instance.flush(timeout=task["flush_timeout"])
                except Exception as e:
                    print(f"paused session {paused.session}: flush: {words(e)}", file=sys.stderr, flush=True)
                if tx is not None and tx.zombie is not None:  # stopping: it hands nothing more
                    number, _, sends = tx.zombie
                    tx.zombie = None
                    with switch:
                        paused.held.append((None, tx.line(number, "aborted", "fenced", "-", sends)))
                self.close_now(paused.instance)
                deadline = time.monotonic() + CLOSE_TIMEOUT
                while pending[paused.session] > 0 and time.monotonic() < deadline:
                    time.sleep(0.01)
            with switch:
                put(paused.told(is_acked))
            lines.emit()
            return True

        def begin() -> bool:
            try:
                producer.begin_transaction()
                return True
            except Exception as e:
                self.failed(producer, r, e)
                return False

        steps = {"tick": lambda _: None, "failed": lambda _: self.failed(producer, r), "restart": restart,
                 "pause": pause, "resume": resume, "sleep": time.sleep, "begin": lambda _: begin(), "send": send,
                 "end": lambda _: self.end_transaction(producer, tx, r)}

        def last(command: str) -> bool:  # served while the run waits to say flush: no transaction is open
            return steps[command](None if tx is None or command == "resume" else (tx.fresh, tx.fresh))

        clean = False
        try:
            take(send_loop(task, tx, lines, r, stop, commands), lambda kind, arg: steps[kind](arg))
            if tx is not None:
                tx.left_open(r, stop)
            put(f"sent {r.handed}")
            self.failed(producer, r)
            if paused.instance is not None and not stop.is_set():  # it resumes at the workload's end
                resume()
            if answer(lines, "handed", "flush", stop, commands, last) and not r.error:
                producer.flush(timeout=task["flush_timeout"])
                clean = True
        except Hung as e:  # its transaction's `t` line says so; the hang ends the workload
            r.error = said(e)
        except Stopped:  # in a commit or an abort: its transaction's `t` line says so
            pass
        except Exception as e:  # flush's KafkaTimeoutError: what is still out ends unknown, as librdkafka's would
            print(f"ended early: {words(e)}", file=sys.stderr, flush=True)
        finally:
            self.failed(producer, r)
            if clean:
                try:
                    producer.close(timeout=CLOSE_TIMEOUT)
                except Exception:
                    pass
            else:  # what is queued or in flight fails now, each through its errback
                self.close_now(producer)
            if paused.instance is not None:  # stopped while an instance was paused: what it was told is said now
                resume(flush=False)
        return r

    @staticmethod
    def close_now(producer) -> None:
        """Close without flushing. kafka-python has no public way: close(timeout=0) flushes first and raises
        KafkaTimeoutError when anything is still out, leaving the instance running. Its sender's force_close()
        aborts every incomplete batch (each send's errback) and ends the sender thread; close() then has nothing
        to wait for."""
        sender = getattr(producer, "_sender", None)
        try:
            if sender is not None:
                sender.force_close()
                sender.join(CLOSE_TIMEOUT)
            producer.close(timeout=0)
        except Exception as e:
            print(f"close: {words(e)}", file=sys.stderr, flush=True)

    def end_transaction(self, producer, tx: Transactions, r: Result) -> bool:
        """Transactions.end_steps()'s rules; kafka-python's flush, commit and abort wait without a timeout (until the
        coordinator answers, or aborts the transaction at transaction_timeout_ms): a SIGTERM cuts them short."""
        calls = {"flush": producer.flush, "commit": producer.commit_transaction, "abort": producer.abort_transaction}
        return drive(tx.end_steps(lambda e: self.failed(producer, r, e)),
                     lambda name: blocking(calls[name], "flush" if name == "flush" else f"{name}_transaction"))

    @staticmethod
    def failed(producer, r: Result, e: BaseException | None = None) -> bool:
        """Result.ends with the fatal error kafka-python's idempotence or transaction state holds."""
        return r.ends(lambda: KafkaPython.held_fatal(producer), e)

    @staticmethod
    def held_fatal(producer) -> BaseException | None:
        """The fatal error the client holds (its transaction manager's), if it holds one."""
        manager = getattr(producer, "_transaction_manager", None)
        try:
            return manager.last_error if manager is not None and manager.has_fatal_error() else None
        except Exception:  # another version's insides
            return None


# -- aiokafka -----------------------------------------------------------------------------------------------------
class AioKafka:
    name = "aiokafka"

    def version(self) -> str:
        import aiokafka
        return aiokafka.__version__

    def check(self, settings: dict) -> None:
        import asyncio

        from aiokafka import AIOKafkaProducer

        async def build():  # the constructor wants a running loop; start() (which connects) is not called
            AIOKafkaProducer(**{**settings, "bootstrap_servers": NOWHERE})

        asyncio.run(build())

    def run(self, task: dict, lines: Lines, stop: threading.Event) -> Result:
        import asyncio
        return asyncio.run(self._run(task, lines, stop))

    async def _run(self, task: dict, lines: Lines, stop: threading.Event) -> Result:
        import asyncio

        from aiokafka import AIOKafkaProducer
        r = Result()
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        sending = [False]

        def on_term():
            terminated(stop)
            if sending[0]:  # a send waiting for room in its batch, or the flush: cut short
                me.cancel()

        loop.add_signal_handler(signal.SIGTERM, on_term)
        tx = Transactions(task["transactions"], lines) if task.get("transactions") else None
        # aiokafka has no delivery timeout; a producer without a transactional_id none for transactions
        watch(task, {"request_timeout_ms": 40000, **({"transaction_timeout_ms": 60000} if tx is not None else {})})
        async def started_now():
            """A started instance, connected and the topic's partitions known (sending starts at once); as started(),
            a client that cannot reach the cluster yet tries again for flush_timeout. None: it could not (r says
            why)."""
            deadline = time.monotonic() + task["flush_timeout"]
            while True:
                instance = AIOKafkaProducer(bootstrap_servers=task["bootstrap"], **task["settings"])
                try:
                    await instance.start()
                    await instance.partitions_for(task["topic"])
                    if tx is not None:  # its producer id now, as the other clients' init: that fences a paused
                        # instance of the same transactional.id before it can resume (aiokafka waits for it at the
                        # first begin_transaction otherwise)
                        await asyncio.wait_for(instance._txn_manager.wait_for_pid(),
                                               max(0.1, deadline - time.monotonic()))
                    return instance
                except Exception as e:
                    await _quietly(instance.stop(), CLOSE_TIMEOUT)
                    if stop.is_set() or time.monotonic() >= deadline:
                        r.error, r.fatal = said(e), error_name(e)
                        return None
                    print(f"start: {words(e)}; trying again", file=sys.stderr, flush=True)
                    await asyncio.sleep(0.5)

        producer = await started_now()
        if producer is None:
            return r
        topic, parts, n = task["topic"], task["partitions"], task["messages"]
        put, told = lines.put, lines.acked

        commands = Commands()

        async def answered(say: str, expect: str, serve: bool = False) -> bool:
            """answer()'s rules: a restart, a pause or a resume asked meanwhile is served (when serve)."""
            if stop.is_set():
                return False
            lines.put(say)
            lines.emit()
            line = await loop.run_in_executor(None, commands.take)
            while line in SERVED and serve:
                arg = None if tx is None or line == "resume" else (tx.fresh, tx.fresh)  # no transaction open
                if not await steps[line](arg):
                    stop.set()
                    break
                lines.emit()
                line = await loop.run_in_executor(None, commands.take)
            if line != expect:
                stop.set()
            return not stop.is_set()

        if not await answered("ready", "go"):
            await _quietly(producer.stop(), CLOSE_TIMEOUT)
            return r
        GOING[0] = True
        r.t0 = time.monotonic()
        session = [0]  # the instance now: a callback of an earlier one that comes after its restart is dropped
        is_acked = bytearray(n)  # message index -> told acknowledged: what a new instance skips
        paused = Paused()  # callbacks run on the loop: none comes between a pause's switch and its line

        def done(s, p, v, t, f):
            i = None
            if f.cancelled():
                line = f"e {p} {v} CancelledError {ms(t)}"
            elif f.exception() is not None:
                line = f"e {p} {v} {error_name(f.exception())} {ms(t)}"
            else:
                i, line = v * parts + p, f"a {p} {v} {f.result().offset} {ms(t)}"
            if s == paused.session:
                paused.held.append((i, line))
            elif s == session[0] and i is None:
                put(line)
            elif s == session[0]:
                is_acked[i] = 1
                told(line)

        async def send(i, zombie=None) -> bool | None:
            """Message i handed to the instance now (zombie: to the paused one, a refusal held for its session);
            False: its send() raised (refused: the workload ends, unless a zombie's); None: a SIGTERM came while it
            waited (handed, its fate unknown)."""
            instance, s = (producer, session[0]) if zombie is None else (zombie, paused.session)
            p, v = i % parts, i // parts
            t = time.perf_counter()
            sending[0] = True
            again = Again(task["flush_timeout"], stop)
            try:
                while True:
                    try:
                        future = await instance.send(topic, b"%d" % v, partition=p)
                        break
                    except Exception as e:
                        if not again.after(e, p, v):
                            raise
            except asyncio.CancelledError:
                me.uncancel()
                return None
            except Exception as e:
                if zombie is None:
                    r.refused(lines, p, v, e)
                else:  # a fenced client may refuse at once
                    paused.held.append((None, f"r {p} {v} {error_name(e)}"))
                return False
            finally:
                sending[0] = False
            future.add_done_callback(lambda f, s=s, p=p, v=v, t=t: done(s, p, v, t, f))
            return True

        async def restart(arg=None) -> bool:
            """A restart: the instance is closed without flushing (close_now: what is queued or in flight fails
            through its future's callback), and a new one hands again, in index order, every message handed and
            not acknowledged; a transactional one (arg: send_loop's) starts (which initialises its transactions,
            fencing the old one) and sends nothing itself."""
            nonlocal producer
            await self.close_now(producer)
            session[0] += 1
            if arg is not None:
                put(f"s {session[0]} {arg[0]} {arg[1]}")
                print(f"producer restarted: session {session[0]}", file=sys.stderr, flush=True)
            fresh = await started_now()
            if fresh is None:
                return False
            producer = fresh
            if arg is not None:
                return True
            put(f"s {session[0]} {r.handed}")
            print(f"producer restarted: session {session[0]} after {r.handed} messages", file=sys.stderr, flush=True)
            return await resend()

        async def resend() -> bool:
            """The instance now hands again, in index order, every message handed and not acknowledged."""
            for i in range(r.handed):
                if not is_acked[i] and not await send(i):
                    return False
            return True

        async def pause(arg=None) -> bool:
            """A pause: the instance is left running (its sender task goes on sending what it holds), its
            reports held; a new one, started, takes over as after a restart (its line `p`; a transactional one,
            arg send_loop's, sends nothing itself: its transactions fence the paused one)."""
            nonlocal producer
            if not paused.may_pause(r):
                return False
            fresh = await started_now()
            if fresh is None:
                return False
            paused.instance, paused.session, producer = producer, session[0], fresh
            session[0] += 1
            if arg is not None:
                put(f"p {session[0]} {arg[0]} {arg[1]}")
                print(f"producer paused: session {session[0]}", file=sys.stderr, flush=True)
                return True
            put(f"p {session[0]} {r.handed}")
            print(f"producer paused: session {session[0]} after {r.handed} messages", file=sys.stderr, flush=True)
            return await resend()

        async def finish_zombie(zombie) -> None:
            """A paused transactional instance resumes as a zombie: it hands the rest of its transaction and asks to
            commit it; every line of it (the rest's `late`, a refusal, its `t`: fenced) held for its session."""
            number, rest, sends = tx.zombie
            tx.zombie = None
            if rest:
                paused.held.append((None, f"late {rest[0]} {rest[-1] + 1}"))
            for i in rest:
                if await send(i, zombie) is None:  # a SIGTERM: the run is stopping
                    break
                sends += 1
            line = tx.line(number, "aborted", "fenced", "-", sends)
            if not stop.is_set():
                line = await drive_async(tx.zombie_steps(number, sends, lambda: self.held_fatal(zombie),
                                                         paused.session),
                                         lambda name: cut(getattr(zombie, f"{name}_transaction"), f"{name}_transaction"))
            paused.held.append((None, line))

        async def resume(_=None, flush: bool = True) -> bool:
            """The paused instance flushes (for up to flush_timeout; a SIGTERM cuts it short; a transactional one
            finishes its transaction: finish_zombie), is closed (what is still out fails through its future) and
            its reports are told in its session, between `z J` and `z -`."""
            if paused.instance is not None:
                if tx is not None and tx.zombie is not None and flush:
                    await finish_zombie(paused.instance)
                elif flush:
                    try:
                        await cut(lambda: asyncio.wait_for(paused.instance.flush(), task["flush_timeout"]))
                    except (Exception, Stopped) as e:
                        print(f"paused session {paused.session}: flush: {words(e) if str(e) else error_name(e)}",
                              file=sys.stderr, flush=True)
                if tx is not None and tx.zombie is not None:  # stopping: it hands nothing more
                    number, _, sends = tx.zombie
                    tx.zombie = None
                    paused.held.append((None, tx.line(number, "aborted", "fenced", "-", sends)))
                await self.close_now(paused.instance)
            put(paused.told(is_acked))
            lines.emit()
            return True

        async def failed_now(_) -> bool:
            return self.failed(producer, r)

        async def begin() -> bool:
            try:
                await cut(producer.begin_transaction)  # waits for the producer id
                return True
            except Exception as e:
                self.failed(producer, r, e)
                return False

        async def cut(call, name: str = ""):
            """await call(), cut short by a SIGTERM (Stopped) or, named, once it hangs (Hung)."""
            sending[0] = True
            try:
                if name and HANG["after"]:
                    try:
                        return await asyncio.wait_for(call(), HANG["after"])
                    except TimeoutError:
                        print(hang_words(name), file=sys.stderr, flush=True)
                        raise Hung(hang_words(name)) from None
                return await call()
            except asyncio.CancelledError:
                me.uncancel()
                raise Stopped from None
            finally:
                sending[0] = False

        async def end_transaction() -> bool:
            """Transactions.end_steps()'s rules; aiokafka's calls wait without a timeout too."""
            calls = {"flush": producer.flush, "commit": producer.commit_transaction,
                     "abort": producer.abort_transaction}
            return await drive_async(tx.end_steps(lambda e: self.failed(producer, r, e)),
                                     lambda name: cut(calls[name], "flush" if name == "flush" else f"{name}_transaction"))

        clean = False
        steps = {"tick": lambda _: asyncio.sleep(0), "failed": failed_now, "restart": restart, "pause": pause,
                 "resume": resume, "sleep": asyncio.sleep, "begin": lambda _: begin(), "send": send,
                 "end": lambda _: end_transaction()}
        try:
            await take_async(send_loop(task, tx, lines, r, stop, commands), lambda kind, arg: steps[kind](arg))
            if tx is not None:
                tx.left_open(r, stop)
            put(f"sent {r.handed}")
            self.failed(producer, r)
            if paused.instance is not None and not stop.is_set():  # it resumes at the workload's end
                await resume()
            if await answered("handed", "flush", serve=True) and not r.error:
                sending[0] = True  # a SIGTERM cuts the flush short too
                try:
                    await asyncio.wait_for(producer.flush(), task["flush_timeout"])
                finally:
                    sending[0] = False
                clean = True
        except Hung as e:  # its transaction's `t` line says so; the hang ends the workload
            r.error = said(e)
        except Stopped:  # in a transactional call: its transaction's `t` line says so
            pass
        except (Exception, asyncio.CancelledError) as e:  # flush's timeout: what is still out ends unknown
            print(f"flush: {words(e) if str(e) else error_name(e)}", file=sys.stderr, flush=True)
        finally:
            while me.cancelling():  # a SIGTERM's cancel that no await took
                me.uncancel()
            self.failed(producer, r)
            await _quietly(producer.stop(), 5.0 if clean else CLOSE_TIMEOUT)
            if paused.instance is not None:  # stopped while an instance was paused: what it was told is said now
                await resume(flush=False)
            await asyncio.sleep(0)
        return r


    @staticmethod
    async def close_now(producer) -> None:
        """Close without flushing. aiokafka's stop() always flushes first: its sender task is cancelled (no more
        requests; the answers of those in flight are never read), every batch queued or in flight fails with
        KafkaConnectionError (the accumulator's fail_all: each send's future), and stop() then has nothing left
        to flush. The failed futures' callbacks have run on return."""
        import asyncio

        from aiokafka.errors import KafkaConnectionError
        try:
            task = producer._sender.sender_task
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            producer._message_accumulator.fail_all(KafkaConnectionError("closed by a producer restart"))
        except Exception as e:  # another version's insides: stop() flushes instead
            print(f"close: {words(e)}", file=sys.stderr, flush=True)
        await _quietly(producer.stop(), CLOSE_TIMEOUT)
        await asyncio.sleep(0)  # the failed futures' callbacks run

    @staticmethod
    def failed(producer, r: Result, e: BaseException | None = None) -> bool:
        """Result.ends: aiokafka's client fails for good when its sender task ends with an error
        (ProducerFenced, OutOfOrderSequenceNumber, ...: every pending batch fails with it)."""
        return r.ends(lambda: AioKafka.held_fatal(producer), e)

    @staticmethod
    def held_fatal(producer) -> BaseException | None:
        """The error the client's sender task ended with, if it ended with one."""
        try:
            task = producer._sender.sender_task
            return task.exception() if task is not None and task.done() and not task.cancelled() else None
        except Exception:  # another version's insides
            return None


async def _quietly(coro, timeout: float) -> None:
    import asyncio
    try:
        await asyncio.wait_for(coro, timeout)
    except (Exception, asyncio.CancelledError):
        pass


IMPLEMENTATIONS = {c.name: c for c in (KafkaPython, AioKafka)}


def main(argv: list[str]) -> int:
    impl, folder, *rest = argv[1:]
    sys.path.insert(0, folder)
    client = IMPLEMENTATIONS[impl]()
    if rest[:1] == ["--version"]:
        print(f"client {impl} {client.version()}", flush=True)
        return 0
    if rest[:1] == ["--check"]:
        try:
            client.check(json.loads(rest[1]))
        except Exception as e:
            print("refused", words(e), flush=True)
            return 1
        print("ok", flush=True)
        return 0
    import logging
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: terminated(stop))
    signal.signal(signal.SIGUSR1, lambda *_: hung_now())
    task = json.loads(sys.stdin.readline())
    print(f"client {impl} {client.version()}", flush=True)
    lines = Lines()
    result = client.run(task, lines, stop)
    lines.put(result.line(stop))
    lines.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
