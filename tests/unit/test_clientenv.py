"""The client-version cache, without network: a fake pip (a script that writes a stand-in confluent_kafka
into --target, or fails as pip does) stands for the package installer."""

import json
import sys
import textwrap

import pytest

from harness.exits import Exit
from harness.workload.clientenv import MARKER, ClientEnvError, ensure

FAKE_PIP = textwrap.dedent('''
    import pathlib, sys
    args = sys.argv[1:]
    calls = pathlib.Path(__file__).with_suffix(".calls")
    calls.write_text(calls.read_text() + " ".join(args) + "\\n" if calls.exists() else " ".join(args) + "\\n")
    target, wanted = pathlib.Path(args[args.index("--target") + 1]), args[-1].split("==")[1]
    if wanted == "9.9.9":
        print("ERROR: Could not find a version that satisfies the requirement", file=sys.stderr)
        print("ERROR: No matching distribution found for confluent-kafka==9.9.9", file=sys.stderr)
        sys.exit(1)
    says = {"2.1.0": "2.1.1"}.get(wanted, wanted)  # a registry that hands over another version
    package = target / "confluent_kafka"
    package.mkdir(parents=True)
    if wanted == "2.13.0":  # since 2.12 both answer with the text alone
        code = f"def version(): return {says!r}\\ndef libversion(): return {says + '-lib'!r}\\n"
    else:  # before, a (text, int) tuple
        code = f"def version(): return ({says!r}, 0)\\ndef libversion(): return ({says + '-lib'!r}, 0)\\n"
    (package / "__init__.py").write_text(code)
''')


@pytest.fixture
def pip(tmp_path):
    script = tmp_path / "fakepip.py"
    script.write_text(FAKE_PIP)
    calls = script.with_suffix(".calls")
    return [sys.executable, str(script)], lambda: calls.read_text().count("\n") if calls.exists() else 0


def test_a_version_is_installed_once_then_served_from_the_cache(tmp_path, pip):
    command, calls = pip
    env = ensure("2.2.0", tmp_path / "cache", command)
    assert (env.version, env.librdkafka) == ("2.2.0", "2.2.0-lib")
    assert env.path == tmp_path / "cache" / "confluent-kafka-2.2.0" and (env.path / MARKER).exists()
    assert ensure("2.2.0", tmp_path / "cache", command) == env
    assert calls() == 1
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["confluent-kafka-2.2.0"]  # no temporary left


def test_versions_answered_as_text_alone_are_read_too(tmp_path, pip):
    env = ensure("2.13.0", tmp_path / "cache", pip[0])
    assert (env.version, env.librdkafka) == ("2.13.0", "2.13.0-lib")


def test_a_child_python_imports_that_version_before_the_harness_own(tmp_path, pip):
    import subprocess

    env = ensure("2.2.0", tmp_path / "cache", pip[0])
    code = "import confluent_kafka as c, harness; print(c.version()[0], c.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env=env.environ(), capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == "2.2.0" and out[1].startswith(str(env.path))


def test_a_version_the_installer_cannot_find_is_exit_2_naming_it_and_leaves_nothing(tmp_path, pip):
    with pytest.raises(ClientEnvError) as e:
        ensure("9.9.9", tmp_path / "cache", pip[0])
    assert e.value.exit == Exit.USAGE
    assert "client.confluent-kafka: 9.9.9 could not be installed" in str(e.value)
    assert "No matching distribution found for confluent-kafka==9.9.9" in str(e.value)
    assert list((tmp_path / "cache").iterdir()) == []


def test_no_installer_is_exit_2_saying_so(tmp_path):
    with pytest.raises(ClientEnvError, match=r"2\.2\.0 could not be installed .*No module named no_such_pip"):
        ensure("2.2.0", tmp_path / "cache", [sys.executable, "-m", "no_such_pip"])


def test_an_install_that_reports_another_version_is_refused(tmp_path, pip):
    with pytest.raises(ClientEnvError, match=r"asked for 2\.1\.0, the installed package says 2\.1\.1"):
        ensure("2.1.0", tmp_path / "cache", pip[0])
    assert list((tmp_path / "cache").iterdir()) == []


# "2.2.0\n" and full-width digits passed a re.match with "$" and \d, and reached pip's command line.
@pytest.mark.parametrize("version", ["2.2", "latest", "2.2.0; rm -rf /", "../2.2.0", "", 2.2, "2.2.0\n",
                                     "\uff12.\uff12.\uff10"])
def test_what_is_not_a_version_is_refused_before_any_install(tmp_path, pip, version):
    with pytest.raises(ClientEnvError, match=r"client\.confluent-kafka: .* is not a version \(X\.Y\.Z"):
        ensure(version, tmp_path / "cache", pip[0])
    assert pip[1]() == 0


@pytest.mark.parametrize("damage", ["no marker", "junk marker", "marker of another version", "package gone",
                                    "package broken", "half-installed temporary"])
def test_a_damaged_cache_is_installed_again_never_used(tmp_path, pip, damage):
    command, calls = pip
    env = ensure("2.2.0", tmp_path / "cache", command)
    package = env.path / "confluent_kafka" / "__init__.py"
    if damage == "no marker":
        (env.path / MARKER).unlink()
    elif damage == "junk marker":
        (env.path / MARKER).write_text("{nope")
    elif damage == "marker of another version":
        (env.path / MARKER).write_text(json.dumps({"version": "2.3.0", "librdkafka": "2.3.0"}))
    elif damage == "package gone":
        package.unlink()
    elif damage == "package broken":
        package.write_text("raise ImportError('truncated')\n")
    else:  # an install cut short by a crash: a temporary beside no ready copy
        import shutil

        shutil.rmtree(env.path)
        (tmp_path / "cache" / ".confluent-kafka-2.2.0.1.tmp" / "confluent_kafka").mkdir(parents=True)
    again = ensure("2.2.0", tmp_path / "cache", command)
    assert calls() == 2 and again.version == "2.2.0" and (again.path / MARKER).exists()
    assert "ImportError" not in package.read_text()
