"""The damaged-folder corpus (tests/damaged_folders.py), the cases only the analysis finds, and the
harmless or judged ones: `kafka-chaos analyze` gives each its documented exit code, names the file
of a damaged one, never shows a traceback, and rewrites the summary only when it could analyse.
One Spark session for all of them (the conftest's)."""

import json
import shutil
import signal

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.runfolder import RunFolder
from tests.damaged_folders import CASES, log
from tests.stored_run import make_analysable_run


class _Shared:
    """The session's Spark, which analyze must not stop."""

    def __init__(self, session):
        self._session = session

    def __getattr__(self, name):
        return getattr(self._session, name)

    def stop(self):
        pass


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return make_analysable_run(tmp_path_factory.mktemp("pristine"))


@pytest.fixture(autouse=True)
def shared_spark(spark, monkeypatch):
    monkeypatch.setattr("harness.engine.session.spark_session", lambda master=None, log=None: _Shared(spark))
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


@pytest.mark.parametrize("case", [c for c in CASES if c.spark], ids=str)
def test_damaged_folder_gets_its_exit_code(case, pristine, tmp_path):
    folder = RunFolder(shutil.copytree(pristine.path, tmp_path / pristine.path.name, symlinks=True))
    case.damage(folder)
    before = (folder.path / "summary.json").read_bytes()
    result = CliRunner().invoke(main, ["analyze", str(folder.path), *case.args])
    assert result.exit_code == case.code, result.output
    assert case.says in result.output and "Traceback" not in result.output, result.output
    if case.names:
        assert str(folder.path / case.names) in result.output, result.output
    after = (folder.path / "summary.json").read_bytes()
    if case.code == 3:
        assert after == before and len(result.output.strip().splitlines()) == 1, result.output
        return
    summary = json.loads(after)
    report = (folder.path / "index.html").read_text()
    if "--partial" in case.args and case.says == "incomplete":
        missing = [name for name, v in summary["variants"].items() if v.get("incomplete")]
        assert summary["status"] == summary["verdict"] == "incomplete" and missing == ["on"], summary
        assert "incomplete" in report.lower() and "on/" in summary["variants"]["on"]["incomplete"]
        assert summary["variants"]["off"]["verdict"] == "pass"
    else:
        assert summary["verdict"] == ("pass" if case.code == 0 else "fail"), summary


def test_damage_found_in_a_spark_task_is_one_line_on_the_terminal(pristine, tmp_path):
    """Through a real process: what Spark's JVM prints reaches the terminal too, and a failed task
    would print a Python traceback there. A data error comes back as a finding instead."""
    import subprocess
    import sys

    case = next(c for c in CASES if c.name == "acks-duplicate-row")
    folder = RunFolder(shutil.copytree(pristine.path, tmp_path / pristine.path.name))
    case.damage(folder)
    result = subprocess.run([sys.executable, "-m", "harness", "analyze", str(folder.path), "--spark-master",
                             "local[1]"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 3, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line or "error" in line]
    assert len(errors) == 1 and errors[0].startswith(f"error: {folder.acks_path('off')}: {case.says}"), result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_missing_tail_without_proof_of_a_complete_read_is_unknown_never_a_pass(pristine, tmp_path):
    # A folder of a release before read.json: its read is not proven to have reached the end, so acknowledged
    # values missing at a partition's tail are unseen (lost or late): the analysis is written, verdict unknown,
    # exit 3.
    folder = RunFolder(shutil.copytree(pristine.path, tmp_path / pristine.path.name, symlinks=True))
    log(lambda rows: rows[:-3])(folder)
    (folder.path / "off" / "read.json").unlink()
    result = CliRunner().invoke(main, ["analyze", str(folder.path)])
    assert result.exit_code == 3, result.output
    assert "UNKNOWN  off: unseen == 0 (else unknown) (actual 3)" in result.output, result.output
    summary = json.loads((folder.path / "summary.json").read_text())
    assert (summary["verdict"], summary["variants"]["off"]["unseen"], summary["variants"]["off"]["lost"]) == \
        ("unknown", 3, 0)
