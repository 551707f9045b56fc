"""`kafka-chaos doctor`: every probe bounded (its process group killed), what it found said in one line,
never a traceback, whatever the program on PATH does."""

import os
import stat
import time

import pytest
from click.testing import CliRunner

from harness import doctor, procs
from harness.cli import main


def program(folder, name, body: str):
    path = folder / name
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def on_path(monkeypatch, tmp_path):
    """A folder put first on PATH, with JAVA_HOME unset: the `java` written there is the one found."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


@pytest.mark.parametrize("out, major", [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_392"', 8),
                                        ('openjdk version "21" 2023-09-19', 21), ('java version "9"', 9),
                                        ("no version here", None)])
def test_java_versions_are_read_as_java_names_them(out, major):
    assert doctor.java_major(out) == major


def test_java_8_is_called_version_8_and_is_too_old(on_path):
    program(on_path, "java", "#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    check = doctor._java()
    assert not check.ok and check.detail == f"{on_path / 'java'} (version 8)" and "17" in check.fix


def test_a_java_that_never_answers_is_stopped_and_named(on_path, monkeypatch):
    monkeypatch.setattr(doctor, "PROBE_TIMEOUT", 0.5)  # the probe's bound, shortened for the test
    program(on_path, "java", "#!/bin/sh\nsleep 1000\n")  # its child (sleep) holds the pipe too
    check = doctor._java()
    assert not check.ok and str(on_path / "java") in check.detail and "did not answer within 0.5 s" in check.detail


def test_doctor_with_a_java_that_sleeps_forever_returns_naming_it(on_path):
    # The whole command, with the real 5 s bound: it returns at all (the java sleeps 1000 s) and says it gave up.
    program(on_path, "java", "#!/bin/sh\nsleep 1000\n")
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "MISSING" in result.output and f"{on_path / 'java'} -version did not answer within 5 s" in result.output
    assert "Traceback" not in result.output and result.exit_code == 1


@pytest.mark.parametrize("body, says", [
    ("not a program at all\n", "does not run"),  # executable bit, no interpreter line: Exec format error
    ("#!/bin/sh\nprintf 'java version \\\"\\377\\376\\\"' >&2\n", "names no version"),  # not UTF-8
    ("#!/bin/sh\nprintf '\\377\\376 caf\\351' >&2; exit 3\n", "failed (exit 3"),
])
def test_a_java_that_answers_nonsense_is_reported_not_a_traceback(on_path, body, says):
    program(on_path, "java", body)
    check = doctor._java()
    assert not check.ok and says in check.detail and str(on_path / "java") in check.detail


def test_a_file_that_is_not_a_toxiproxy_server_is_not_ok(monkeypatch, tmp_path):
    monkeypatch.setenv("TOXIPROXY_SERVER", "/etc/passwd")
    check = doctor._toxiproxy()
    assert not check.ok and check.detail == "/etc/passwd is not an executable file"
    monkeypatch.setenv("TOXIPROXY_SERVER", str(program(tmp_path, "true-ish", "#!/bin/sh\necho hello\n")))
    check = doctor._toxiproxy()
    assert not check.ok and "names no version: not a toxiproxy-server" in check.detail


def test_kafka_home_scripts_are_probed_too(monkeypatch, tmp_path):
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path))
    assert doctor._kafka_home().detail == f"{tmp_path / 'bin' / 'kafka-storage.sh'} is not an executable file"
    (tmp_path / "bin").mkdir()
    program(tmp_path / "bin", "kafka-storage.sh", "#!/bin/sh\n")
    program(tmp_path / "bin", "kafka-server-start.sh", "#!/bin/sh\necho noise; echo 4.1.0\n")
    check = doctor._kafka_home()
    assert check.ok and check.detail == f"{tmp_path} (Kafka 4.1.0)"


def test_a_check_that_fails_unforeseen_is_its_own_line(monkeypatch):
    def broken():
        raise RuntimeError("boom")

    monkeypatch.setitem(doctor.CHECKS, "Spark (pyspark)", broken)
    [spark] = [c for c in doctor.run_checks() if c.name == "Spark (pyspark)"]
    assert not spark.ok and spark.needed and spark.detail == "could not be checked (RuntimeError: boom)"


def test_a_probe_kills_its_whole_process_group(tmp_path):
    pidfile = tmp_path / "child"
    script = program(tmp_path, "wrapper", f"#!/bin/sh\nsleep 1000 &\necho $! > {pidfile}\nwait\n")
    with pytest.raises(procs.ProbeTimeout, match="did not answer within 0.5 s"):
        procs.probe([str(script)], 0.5)
    child = int(pidfile.read_text())
    for _ in range(100):  # reaped by init once killed; poll instead of sleeping a fixed time
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if _state(child) == "Z":
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"the probe's child {child} still runs")


def _state(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_network_namespaces_say_what_is_missing_and_whether_packets_can_be_queued(monkeypatch):
    from harness.cluster import netns

    monkeypatch.setattr(netns, "problems", lambda: ["cluster.network: namespaces needs root (...)"])
    check = doctor.CHECKS["network namespaces"]()
    assert not check.ok and "needs root" in check.detail and "cluster.network: namespaces" in check.fix
    assert not check.needed  # the embedded default runs without it
    monkeypatch.setattr(netns, "problems", lambda: [])
    for has, says in ((True, "packet queue: yes"), (False, "packet-reorder and packet-delay are refused")):
        monkeypatch.setattr(netns, "queue_available", lambda: has)
        check = doctor.CHECKS["network namespaces"]()
        assert check.ok and says in check.detail
