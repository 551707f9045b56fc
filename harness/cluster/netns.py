"""Network namespaces for the local Kafka backend (`cluster.network: namespaces`, root only).

Each broker runs in a namespace of its own, `kc<id>-b<i>`, with one interface `eth0` (10.A.B.i+1/24)
whose other end sits on a bridge in the namespace `kc<id>-br`; the harness's side of the network is one
more link from that bridge to this namespace, `kc<id>h` (10.A.B.254), through which the client proxies
(still on loopback, where clients reach them) and the harness's port checks reach the brokers. Brokers
talk to each other across the bridge, directly. <id> is the run folder's id, A.B drawn from it.

Faults act on the packets of one broker's link (Toxiproxy acts on streams and cannot), on both ends of
the link, so each way is hit:
- loss and duplication: an nft rule on the egress of each end (a random draw per packet; a duplicate is
  marked so that it is not copied again);
- reordering and delay: a netfilter queue in the bridge's namespace, which a process of the harness's
  (packet_queue.py) answers late or out of order: iptables sends it what enters the bridge from the broker's
  port and what leaves by it (physdev, with the bridge's iptables calls on in that namespace only). Not on
  the broker's own side: a packet its kernel holds on the way out still counts against the sending socket,
  and TCP small queues would then throttle the broker far below what the delay alone does;
- a one-way or two-way cut from its peers (`nft`, a table of its own in the broker's namespace):
  `in` drops what the peers send it, `out` what it sends them, `both` the two. Clients still reach it.

Everything lives inside the namespaces the run made, so removing them removes the links and the firewall
tables with them (the processes in them, queues included, are killed first). An owner file,
/run/kafka-chaos/netns/<id>.pid, names the harness process; `kafka-chaos run` and `shrink` first remove the
namespaces and links of runs whose owner is gone (after kill -9 of a harness, whose brokers and queues
PR_SET_PDEATHSIG took with it). Written with `ip`, `nft` and `iptables` rather than a library (pyroute2): they
are what an operator would type, and each command is journaled in the log as is.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import zlib
from pathlib import Path

from ..exits import InfraError
from ..procs import spawn, stop

OWNERS = Path("/run/kafka-chaos/netns")
NAMESPACE = re.compile(r"^kc([0-9a-f]{6})-(br|b\d+)$")
HOST_LINK = re.compile(r"^kc([0-9a-f]{6})h$")
TOOLS = ("ip", "nft")
TABLE = "kafka_chaos"  # the nft table a cut adds in the broker's namespace
MARK = "0x4b43"  # a duplicate's mark: the copy is not copied again
QUEUE_ARGS = {  # what a link fault does with a netfilter queue (packet_queue.py's MODE DELAY_MS X) -> its arguments
    "reorder": lambda p: ["reorder", str(p["delay_ms"]), f"{p['percent']:g}"],
    "delay": lambda p: ["delay", str(p["delay_ms"]), str(p["jitter_ms"])],
}
PACKET_QUEUE = str(Path(__file__).with_name("packet_queue.py"))


def _share(percent: float) -> str:
    """nft's random draw for `percent` %, to 0.01 %."""
    return f"numgen random mod 10000 < {round(percent * 100)}"


NFT_LINK = {  # what a link fault does with an nft rule -> the rule on a link end's egress (each end: each way)
    "drop": lambda p, dev: f"{_share(p['percent'])} drop",
    "duplicate": lambda p, dev: f'meta mark != {MARK} {_share(p["percent"])} meta mark set {MARK} dup to "{dev}"',
}


_queue: bool | None = None


def queue_available() -> bool:
    """Whether iptables can send packets to a netfilter queue here (tried once, in a namespace made for it)."""
    global _queue
    if _queue is None:
        if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("iptables") is None:
            return False
        probe = f"kcprobe{os.getpid()}"
        subprocess.run(["ip", "netns", "add", probe], capture_output=True, timeout=30)
        try:
            done = subprocess.run(["ip", "netns", "exec", probe, "iptables", "-t", "mangle", "-A", "PREROUTING",
                                   "-j", "NFQUEUE", "--queue-num", "1", "--queue-bypass"], capture_output=True, timeout=30)
            _queue = done.returncode == 0
        finally:
            subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)
    return _queue


def problems() -> list[str]:
    """Why this machine cannot run brokers in namespaces (exit 2 before anything starts)."""
    if os.geteuid() != 0:
        return ["cluster.network: namespaces needs root (it makes network namespaces, links and firewall "
                "tables); run as root, or use network: loopback"]
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return [f"cluster.network: namespaces needs {', '.join(missing)} on PATH (iproute2 and nftables)"]
    return []


def run_id(run_dir: Path) -> str:
    """The run folder's id (its last 6 hex digits), or one drawn from its name."""
    tail = run_dir.name.rsplit("-", 1)[-1]
    return tail if re.fullmatch(r"[0-9a-f]{6}", tail) else hashlib.sha1(run_dir.name.encode()).hexdigest()[:6]


class Network:
    """The namespaces, links and addresses of one run's brokers."""

    def __init__(self, rid: str, brokers: int, log: Path | None = None):
        self.id, self.brokers, self.log = rid, brokers, log
        digest = hashlib.sha1(rid.encode()).digest()
        self.prefix = f"10.{200 + digest[0] % 50}.{digest[1]}"  # 10.200.0.0 - 10.249.255.0: one /24 a run
        self._queues: dict[str, tuple[int, object]] = {}  # fault name -> (netfilter queue, its packet_queue process)
        self._filters: set[str] = set()  # names of the faults that added nft rules (a table each)
        self._queue_numbers = itertools.count(1)  # faults on several links at once each have a queue of their own

    # -- names and addresses (pure) --------------------------------------------------------
    def namespace(self, broker: int) -> str:
        return f"kc{self.id}-b{broker}"

    @property
    def bridge(self) -> str:
        return f"kc{self.id}-br"

    def address(self, broker: int) -> str:
        return f"{self.prefix}.{broker + 1}"

    @property
    def host_address(self) -> str:
        return f"{self.prefix}.254"

    def exec_prefix(self, broker: int) -> list[str]:
        """What a command runs behind to run in the broker's namespace (`ip netns exec` execs it: same pid)."""
        return ["ip", "netns", "exec", self.namespace(broker)]

    def setup_commands(self) -> list[list[str]]:
        br, host, peer = self.bridge, f"kc{self.id}h", f"kc{self.id}q"
        cmds = [["ip", "netns", "add", br], ["ip", "-n", br, "link", "set", "lo", "up"],
                ["ip", "-n", br, "link", "add", "br0", "type", "bridge"], ["ip", "-n", br, "link", "set", "br0", "up"]]
        for i in range(self.brokers):
            ns, inner, outer = self.namespace(i), f"kc{self.id}b{i}", f"kc{self.id}p{i}"
            cmds += [["ip", "netns", "add", ns], ["ip", "-n", ns, "link", "set", "lo", "up"],
                     ["ip", "link", "add", inner, "type", "veth", "peer", "name", outer],
                     ["ip", "link", "set", inner, "netns", ns], ["ip", "link", "set", outer, "netns", br],
                     ["ip", "-n", ns, "link", "set", inner, "name", "eth0"],
                     ["ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0"],
                     ["ip", "-n", ns, "link", "set", "eth0", "up"],
                     ["ip", "-n", br, "link", "set", outer, "master", "br0"], ["ip", "-n", br, "link", "set", outer, "up"]]
        cmds += [["ip", "link", "add", host, "type", "veth", "peer", "name", peer],
                 ["ip", "link", "set", peer, "netns", br], ["ip", "-n", br, "link", "set", peer, "master", "br0"],
                 ["ip", "-n", br, "link", "set", peer, "up"],
                 ["ip", "addr", "add", f"{self.host_address}/24", "dev", host], ["ip", "link", "set", host, "up"]]
        return cmds

    def link_commands(self, broker: int, name: str, action: str, params: dict) -> list[tuple[list[str], str]]:
        """(command, stdin) that start loss or duplication `name` on both ends of the broker's link: its eth0
        (what it sends) and its bridge port (what it receives), an nft table of the fault's own on each end's
        egress (they add up)."""
        table = _table(name)
        return [(["ip", "netns", "exec", ns, "nft", "-f", "-"],
                 f"table netdev {table} {{\n  chain egress {{\n    type filter hook egress device \"{dev}\" "
                 f"priority 0;\n    {NFT_LINK[action](params, dev)}\n  }}\n}}\n") for ns, dev in self._link_ends(broker)]

    def heal_commands(self, broker: int, name: str) -> list[list[str]]:
        return [["ip", "netns", "exec", ns, "nft", "delete", "table", "netdev", _table(name)]
                for ns, _ in self._link_ends(broker)]

    def queue_commands(self, broker: int, queue: int, action: str) -> list[list[str]]:
        """The iptables commands (`-A` adds, `-D` deletes) in the bridge's namespace that send the broker's
        packets, each way, to netfilter queue `queue`: what enters the bridge by its port, what leaves by it.
        A delay or reordering at a time on a link (the schedule refuses two that could meet): the first rule
        that queues a packet is the last it meets."""
        port = f"kc{self.id}p{broker}"
        target = ["-j", "NFQUEUE", "--queue-num", str(queue), "--queue-bypass"]
        return [["ip", "netns", "exec", self.bridge, "iptables", "-t", "mangle", action, chain, "-m", "physdev", *match,
                 *target] for chain, match in (("PREROUTING", ["--physdev-in", port]),
                                               ("POSTROUTING", ["--physdev-out", port, "--physdev-is-bridged"]))]

    def cut_ruleset(self, broker: int, direction: str) -> str:
        """The nft table that cuts the broker off from its peers: in, out or both (clients still pass)."""
        peers = ", ".join(self.address(i) for i in range(self.brokers) if i != broker) or self.address(broker)
        chains = []
        if direction in ("in", "both"):
            chains.append(f"  chain cut_in {{\n    type filter hook input priority 0;\n    ip saddr {{ {peers} }} drop\n  }}\n")
        if direction in ("out", "both"):
            chains.append(f"  chain cut_out {{\n    type filter hook output priority 0;\n    ip daddr {{ {peers} }} drop\n  }}\n")
        return f"table inet {TABLE} {{\n{''.join(chains)}}}\n"

    def _link_ends(self, broker: int) -> list[tuple[str, str]]:
        return [(self.namespace(broker), "eth0"), (self.bridge, f"kc{self.id}p{broker}")]

    # -- acting (root) -------------------------------------------------------------------------
    def up(self) -> None:
        OWNERS.mkdir(parents=True, exist_ok=True)
        (OWNERS / f"{self.id}.pid").write_text(str(os.getpid()))
        for cmd in self.setup_commands():
            self._run(cmd)

    def down(self) -> None:
        remove(self.id)

    def link_fault(self, broker: int, name: str, action: str, params: dict) -> None:
        """Start fault `name` on the broker's link: an nft rule (NFT_LINK's actions) or a queue (QUEUE_ARGS')."""
        if action in NFT_LINK:
            self._filters.add(name)
            for cmd, stdin in self.link_commands(broker, name, action, params):
                self._run(cmd, stdin=stdin)
            return
        self._run(["ip", "netns", "exec", self.bridge, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1"])
        queue = next(self._queue_numbers)
        cmd = ["ip", "netns", "exec", self.bridge, sys.executable, "-I", PACKET_QUEUE, str(queue),
               *QUEUE_ARGS[action](params), str(zlib.crc32(name.encode()))]
        proc = spawn(cmd, self.log or Path(os.devnull), talk=True)
        if proc.stdout.readline().strip() != "bound":
            stop(proc)
            raise InfraError(f"network namespaces: the packet queue for {name} did not start (see {self.log})")
        self._queues[name] = (queue, proc)
        for cmd in self.queue_commands(broker, queue, "-A"):
            self._run(cmd)

    def heal_link(self, broker: int, name: str) -> dict | None:
        """Heal fault `name`; for a queue (a delay or reordering), what it did (packet_queue.py's counts)."""
        if name in self._filters:
            self._filters.discard(name)
            for cmd in self.heal_commands(broker, name):
                self._run(cmd, check=False)  # gone already (healed by heal_all) is fine
            return None
        if name not in self._queues:
            return None  # healed by heal_all already
        queue, proc = self._queues.pop(name)
        for cmd in self.queue_commands(broker, queue, "-D"):
            self._run(cmd, check=False)
        return _stop_queue(name, proc)

    def cut(self, broker: int, direction: str) -> None:
        self._run([*self.exec_prefix(broker), "nft", "-f", "-"], stdin=self.cut_ruleset(broker, direction))

    def rejoin(self, broker: int) -> None:
        self._run([*self.exec_prefix(broker), "nft", "delete", "table", "inet", TABLE], check=False)

    def heal_all(self) -> None:
        """No fault left on any link: every nft table and queue rule the faults added removed, queues stopped."""
        for i in range(self.brokers):
            self.rejoin(i)
            for ns, _ in self._link_ends(i):
                self._run(["ip", "netns", "exec", ns, "nft", "flush", "ruleset", "netdev"], check=False)
        if self._queues:
            self._run(["ip", "netns", "exec", self.bridge, "iptables", "-t", "mangle", "-F"], check=False)
        while self._queues:
            name, (_, proc) = self._queues.popitem()
            _stop_queue(name, proc)

    def _run(self, cmd: list[str], check: bool = True, stdin: str | None = None) -> None:
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30)
        if self.log is not None:
            with open(self.log, "a") as f:
                f.write(f"{' '.join(cmd)}{'  # ' + stdin.strip() if stdin else ''} -> {done.returncode}"
                        f"{': ' + done.stderr.strip() if done.returncode else ''}\n")
        if check and done.returncode != 0:
            raise InfraError(f"network namespaces: `{' '.join(cmd)}` failed: {done.stderr.strip()}")


def _stop_queue(name: str, proc) -> dict:
    """Stop a packet queue (it lets what it holds go first) and return what it did, from its last line."""
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        stop(proc)
        raise InfraError(f"network namespaces: the packet queue for {name} did not stop within 10 s") from None
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise InfraError(f"network namespaces: the packet queue for {name} ended with exit status "
                         f"{proc.returncode} and no count (a fault it held may have gone unheld)") from None


def _table(name: str) -> str:
    return "kc_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=30).stdout
    return [m.group(1).split("@")[0] for m in re.finditer(r"^\d+:\s+(\S+?):", out, re.M)]


def owner_alive(rid: str) -> bool:
    try:
        pid = int((OWNERS / f"{rid}.pid").read_text())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_ids(namespaces: list[str], links: list[str], alive) -> list[str]:
    """Run ids that own namespaces or links here and whose harness is gone (pure: alive(rid) -> bool)."""
    ids = {m.group(1) for n in namespaces if (m := NAMESPACE.match(n))}
    ids |= {m.group(1) for n in links if (m := HOST_LINK.match(n))}
    return sorted(rid for rid in ids if not alive(rid))


def remove(rid: str) -> None:
    """Remove a run's namespaces (the processes left in them killed first) and its host link."""
    for ns in (n for n in _namespaces() if (m := NAMESPACE.match(n)) and m.group(1) == rid):
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
    if f"kc{rid}h" in _links():
        subprocess.run(["ip", "link", "del", f"kc{rid}h"], capture_output=True, timeout=30)
    (OWNERS / f"{rid}.pid").unlink(missing_ok=True)


def remove_stale() -> list[str]:
    """Remove what runs whose harness is gone left behind; their ids."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return []
    ids = stale_ids(_namespaces(), _links(), owner_alive)
    for rid in ids:
        remove(rid)
    return ids
