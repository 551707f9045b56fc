"""An isolated confluent-kafka per client version: the ground of the client axis (a variant that names
`client: {confluent-kafka: "2.2.0"}` runs its workload in a child Python whose confluent_kafka is that one).

Each version is installed once into the user's cache folder, <cache>/kafka-chaos/clients/confluent-kafka-V/,
by the pip of the Python that runs the harness (`python -m pip install --target`, binary wheels only: each
wheel bundles its own librdkafka, so no compiler and no system library is involved), then checked by
importing it in a child Python that sees nothing else (-I -S, the folder first on sys.path) and asking it
for its versions. A folder is trusted only when its marker (ready.json: the versions that child reported)
is there and the import still answers the same: an install cut short or a folder damaged later is
installed again, never used.

`--target` rather than a virtualenv per version: one wheel and no interpreter copy. The workload's child
runs the harness's own produce loop (the same delivery log, whatever the version) with that folder first
on PYTHONPATH, so its `import confluent_kafka` finds the version asked for and everything else (numpy,
pyarrow, the harness) comes from the harness's environment.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka

from .. import procs
from ..cachedir import cache_folder
from ..exits import UsageError, one_line
from ..formats import json_object
from ..spec import is_client_version

PACKAGE = "confluent-kafka"
MARKER = "ready.json"
# What the child Python answers: confluent-kafka's version, then librdkafka's, one per line (a (text, int)
# tuple before 2.12, the text since).
PROBE = ("import sys; sys.path.insert(0, sys.argv[1]); import confluent_kafka as c; "
         "text = lambda v: v[0] if isinstance(v, tuple) else v; print(text(c.version())); print(text(c.libversion()))")
INSTALL_TIMEOUT = 600.0  # a download on a slow link; the install is killed (its process group) beyond it
PROBE_TIMEOUT = 60.0


class ClientEnvError(UsageError):
    """A client version that cannot be had: exit 2 before anything starts; str() names it and why."""


@dataclass(frozen=True)
class ClientEnv:
    version: str  # confluent-kafka's, as the installed package reports it
    librdkafka: str  # as that package's bundled librdkafka reports it
    path: Path  # the folder to put first on the child's sys.path

    def environ(self) -> dict[str, str]:
        """The environment of a child Python of the harness's that imports this confluent_kafka (its folder
        first on PYTHONPATH, before the site-packages that hold the harness's own) and the harness."""
        rest = os.environ.get("PYTHONPATH")
        return {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.path), *([rest] if rest else [])])}


def text(version) -> str:
    """confluent_kafka.version() or libversion() as text: a (text, int) tuple before 2.12, the text since."""
    return version[0] if isinstance(version, tuple) else version


def running() -> str:
    """The client this Python imported, as the summary records it: "confluent-kafka V, librdkafka L"."""
    return f"confluent-kafka {text(confluent_kafka.version())}, librdkafka {text(confluent_kafka.libversion())}"


def clients_folder() -> Path:
    return cache_folder() / "clients"


def ensure(version: str, folder: Path | None = None, pip: list[str] | None = None) -> ClientEnv:
    """The environment of confluent-kafka `version`, installed first when the cache lacks it (or holds a
    damaged copy). ClientEnvError naming the version when it is not a version, cannot be installed, or
    installs as something else."""
    if not is_client_version(version):
        raise ClientEnvError(f"client.{PACKAGE}: {version!r} is not a version (X.Y.Z, e.g. 2.2.0)")
    root = folder or clients_folder()
    target = root / f"{PACKAGE}-{version}"
    ready = _ready(target, version)
    if ready is not None:
        return ready
    pip = pip or [sys.executable, "-m", "pip"]

    def install(tmp: Path) -> dict:
        env = _install(version, tmp, pip)
        return {"version": env.version, "librdkafka": env.librdkafka}

    marker = install_once(root, PACKAGE, version, install, lambda: _ready(target, version))
    return ClientEnv(marker["version"], marker["librdkafka"], target)


def install_once(root: Path, name: str, version: str, install: Callable[[Path], dict],
                 installed_meanwhile: Callable[[], object]) -> dict:
    """Package `name` at `version` into <root>/<name>-<version>/ (this module's and foreignenv.py's one way):
    install(tmp) fills a private folder and returns its marker, written as ready.json; then the folder takes the
    target's place in one rename (a damaged copy there is removed first). When the rename fails because another
    harness installed it meanwhile, installed_meanwhile() says whether that copy is sound. Returns the marker."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ClientEnvError(f"client.{name}: cannot create the cache folder {root} ({one_line(e)})") from None
    target = root / f"{name}-{version}"
    tmp = root / f".{name}-{version}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        marker = install(tmp)
        (tmp / MARKER).write_text(json.dumps(marker) + "\n")
        shutil.rmtree(target, ignore_errors=True)  # a damaged copy
        try:
            os.replace(tmp, target)
        except OSError:  # another harness installed it meanwhile
            if installed_meanwhile() is None:
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return marker


def _install(version: str, tmp: Path, pip: list[str]) -> ClientEnv:
    cmd = [*pip, "install", "--target", str(tmp), "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--no-input", "--quiet", f"{PACKAGE}=={version}"]
    try:
        code, out = procs.probe(cmd, timeout=INSTALL_TIMEOUT)
    except (OSError, procs.ProbeTimeout) as e:
        raise ClientEnvError(f"client.{PACKAGE}: {version} could not be installed ({one_line(e)})") from None
    if code != 0:
        raise ClientEnvError(f"client.{PACKAGE}: {version} could not be installed with {' '.join(pip)} "
                             f"({_last_line(out) or f'exit status {code}'})")
    env = _probe(tmp)
    if env is None:
        raise ClientEnvError(f"client.{PACKAGE}: {version} was installed but does not import "
                             f"({_last_line(_probe_output(tmp))})")
    if env.version != version:
        raise ClientEnvError(f"client.{PACKAGE}: asked for {version}, the installed package says {env.version}")
    return env


def _ready(target: Path, version: str) -> ClientEnv | None:
    """The cached environment when its marker and its import agree on `version`; None otherwise."""
    try:
        marker = json_object((target / MARKER).read_text())
    except (OSError, ValueError):
        return None
    env = _probe(target)
    if env is None or env.version != version or marker.get("version") != version:
        return None
    return env


def _probe_output(path: Path) -> str:
    try:
        code, out = procs.probe([sys.executable, "-I", "-S", "-c", PROBE, str(path)], timeout=PROBE_TIMEOUT)
    except (OSError, procs.ProbeTimeout) as e:
        return one_line(e)
    return out if code == 0 else f"exit {code}: {out}"


def _probe(path: Path) -> ClientEnv | None:
    lines = _probe_output(path).splitlines()
    if len(lines) != 2 or not is_client_version(lines[0]):
        return None
    return ClientEnv(lines[0], lines[1].strip(), path)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
