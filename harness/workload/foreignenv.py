"""A foreign client implementation's environment (harness/clients.py), ready to run its producer child:

    kafka-python, aiokafka   the package (and its dependencies: binary wheels only) installed once into the
                             user's cache folder, <cache>/kafka-chaos/clients/NAME-V/, by the pip of the harness's
                             Python (`pip install --target`, as clientenv.py installs confluent-kafka versions),
                             then asked for its version by the child itself (pychild.py --version, isolated: it
                             sees the standard library and that folder only). A folder is trusted only when its
                             marker (ready.json) is there and the child still answers the same version.
    kafka-clients            Apache Kafka's Java client from KAFKA_HOME (libs/kafka-clients-V.jar must be the
                             version asked for) and `java` on PATH (17+): java/ChaosProducer.java, and a consumer
                             group's members java/ChaosMember.java (ForeignEnv.member), compiled once against those
                             jars into the cache folder, <cache>/kafka-chaos/clients/java-classes-KEY/ (java_classes).

check_settings() builds the producer (or, given the member's command, a consumer group member's consumer) with the
variant's settings in a short child that connects nowhere: a setting the client refuses is bad input (exit 2, the
client's own words) before anything starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import procs
from ..clients import FOREIGN
from ..exits import one_line
from ..spec import is_client_version
from .clientenv import MARKER, ClientEnvError, _last_line, clients_folder, install_once

INSTALL_TIMEOUT = 600.0
PROBE_TIMEOUT = 60.0
JAVA_PROBE_TIMEOUT = 120.0  # compiling the programs, or a JVM's start, takes seconds on a loaded machine
PYCHILD = Path(__file__).with_name("pychild.py")
JAVA_SOURCE = Path(__file__).parent / "java" / "ChaosProducer.java"
JAVA_MEMBER = Path(__file__).parent / "java" / "ChaosMember.java"


@dataclass(frozen=True)
class ForeignEnv:
    name: str  # harness/clients.py's key: kafka-python, aiokafka, kafka-clients
    version: str  # as the implementation itself reports it
    command: tuple[str, ...]  # the child's command line (the workload: the task on its stdin)
    member: tuple[str, ...] = ()  # a consumer group member's command line, when the implementation has its own

    def environ(self) -> dict[str, str]:
        return dict(os.environ)

    @property
    def implementation(self):
        return FOREIGN[self.name]


def ensure(name: str, version: str, folder: Path | None = None, pip: list[str] | None = None) -> ForeignEnv:
    """The environment of implementation `name` at `version`: installed first when the cache lacks it (Python),
    found in KAFKA_HOME (Java). ClientEnvError naming it and why when it cannot be had."""
    if name not in FOREIGN:
        raise ClientEnvError(f"client.{name}: not a foreign client implementation")
    if not is_client_version(version):
        raise ClientEnvError(f"client.{name}: {version!r} is not a version (X.Y.Z)")
    if FOREIGN[name].language == "java":
        return _java(version)
    root = folder or clients_folder()
    target = root / f"{name}-{version}"
    ready = _ready(name, target, version)
    if ready is not None:
        return ready
    pip = pip or [sys.executable, "-m", "pip"]

    def install(tmp: Path) -> dict:
        cmd = [*pip, "install", "--target", str(tmp), "--only-binary=:all:", "--disable-pip-version-check",
               "--no-input", "--quiet", f"{name}=={version}"]
        try:
            code, out = procs.probe(cmd, timeout=INSTALL_TIMEOUT)
        except (OSError, procs.ProbeTimeout) as e:
            raise ClientEnvError(f"client.{name}: {version} could not be installed ({one_line(e)})") from None
        if code != 0:
            raise ClientEnvError(f"client.{name}: {version} could not be installed "
                                 f"({_last_line(out) or f'exit status {code}'})")
        answer = _python_version(name, tmp)
        if answer != version:
            raise ClientEnvError(f"client.{name}: asked for {version}, the installed package answers "
                                 f"{answer or 'nothing'}")
        return {"version": version}

    install_once(root, name, version, install, lambda: _ready(name, target, version))
    return _python_env(name, version, target)


def _python_env(name: str, version: str, path: Path) -> ForeignEnv:
    return ForeignEnv(name, version, (sys.executable, "-I", str(PYCHILD), name, str(path)))


def _ready(name: str, target: Path, version: str) -> ForeignEnv | None:
    try:
        marker = json.loads((target / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("version") != version or _python_version(name, target) != version:
        return None
    return _python_env(name, version, target)


def _python_version(name: str, path: Path) -> str:
    """What the isolated child imports from `path`: its `client NAME V` line's V, or ""."""
    try:
        code, out = procs.probe([sys.executable, "-I", str(PYCHILD), name, str(path), "--version"],
                                timeout=PROBE_TIMEOUT)
    except (OSError, procs.ProbeTimeout):
        return ""
    words = out.strip().split()
    return words[2] if code == 0 and len(words) == 3 and words[:2] == ["client", name] else ""


# -- Java ---------------------------------------------------------------------------------------------------------
# The children's classes (the client's, the protocol's, the JSON task's) fill about 23 MB of metaspace, just over
# HotSpot's default first threshold (21 MB) where a bare produce loop stays just under it (20.8 MB, Java 17). Crossing
# it mid-workload started a concurrent mark cycle whose remark shrank the heap from 468 to 80 MB: twice the young
# collections for the rest of the run (13 against 7 per million sends, bench/clients.py's GC logs, 2026-11-29). An
# application crosses it while it starts, long before its traffic; a threshold above what the children use does the
# same for them. GC timing only: nothing the client does changes.
JVM_OPTIONS = ("-XX:MetaspaceSize=64m",)


def java_home_libs() -> Path | None:
    home = os.environ.get("KAFKA_HOME")
    return Path(home) / "libs" if home else None


def _java(version: str) -> ForeignEnv:
    libs = java_home_libs()
    if libs is None:
        raise ClientEnvError("client.kafka-clients: the Java client comes from a Kafka distribution: set KAFKA_HOME")
    jars = sorted(libs.glob("kafka-clients-*.jar"))
    have = [j.name[len("kafka-clients-"):-len(".jar")] for j in jars]
    if version not in have:
        raise ClientEnvError(f"client.kafka-clients: {version} is not in {libs} (it holds "
                             f"{', '.join(have) or 'no kafka-clients jar'})")
    java = shutil.which("java")
    if java is None:
        raise ClientEnvError("client.kafka-clients: no `java` on PATH (17 or later, with its compiler module)")
    path = f"{java_classes(java, libs)}:{libs}/*"
    return ForeignEnv("kafka-clients", version, (java, *JVM_OPTIONS, "-cp", path, JAVA_SOURCE.stem),
                      (java, *JVM_OPTIONS, "-cp", path, JAVA_MEMBER.stem))


def java_classes(java: str, libs: Path) -> Path:
    """The Java programs compiled once for these sources, client jars and JVM (their key), in the cache folder. Run
    from its source file, each child compiled them again as it started, and the JIT went on compiling the compiler
    in the child's first seconds, beside the workload (bench/clients.py: 0.3 s of the child's CPU per million
    sends, 3,000,000 sends a round). javac runs in a JVM of its own (the jdk.compiler module, which the source
    launcher needed too)."""
    jars = sorted(libs.glob("*.jar"))
    digest = hashlib.sha256()
    for part in (JAVA_SOURCE.read_bytes(), JAVA_MEMBER.read_bytes(), os.path.realpath(java).encode(),
                 *(f"{jar.name} {jar.stat().st_size}".encode() for jar in jars)):
        digest.update(part + b"\0")
    key = digest.hexdigest()[:16]
    root = clients_folder()
    target = root / f"java-classes-{key}"
    if (target / MARKER).exists():
        return target

    def compile_into(tmp: Path) -> dict:
        tmp.mkdir(parents=True)
        cmd = [java, "-m", "jdk.compiler/com.sun.tools.javac.Main", "-d", str(tmp), "-nowarn", "-XDsuppressNotes",
               "-cp", ":".join(str(jar) for jar in jars), str(JAVA_SOURCE), str(JAVA_MEMBER)]
        try:
            code, out = procs.probe(cmd, timeout=JAVA_PROBE_TIMEOUT)
        except (OSError, procs.ProbeTimeout) as e:
            raise ClientEnvError(f"client.kafka-clients: the Java programs could not be compiled ({one_line(e)})") \
                from None
        if code != 0:
            errors = [line.strip() for line in out.splitlines() if "error:" in line]
            raise ClientEnvError(f"client.kafka-clients: the Java programs do not compile against {libs} with {java} "
                                 f"({errors[0][:300] if errors else _last_line(out) or f'exit status {code}'})")
        return {"key": key}

    install_once(root, "java-classes", key, compile_into, lambda: (target / MARKER).exists() or None)
    return target


# -- settings -----------------------------------------------------------------------------------------------------
def check_settings(env: ForeignEnv, settings: dict, program: tuple[str, ...] = ()) -> str:
    """"" when the implementation builds a producer (program env.member: a member's consumer) with `settings`; else
    its own words for what it refuses."""
    cmd = [*(program or env.command), "--check", json.dumps(settings)]
    timeout = JAVA_PROBE_TIMEOUT if env.implementation.language == "java" else PROBE_TIMEOUT
    try:
        code, out = procs.probe(cmd, timeout=timeout)
    except (OSError, procs.ProbeTimeout) as e:
        return f"the settings could not be checked ({one_line(e)})"
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if code == 0 and lines and lines[-1] == "ok":
        return ""
    said = next((line[len("refused "):] for line in reversed(lines) if line.startswith("refused ")), "")
    return said or _last_line(out) or f"exit status {code}"
