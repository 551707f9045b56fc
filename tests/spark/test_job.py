"""`spark-submit harness/job.py --run RUN` exits as `kafka-chaos analyze` does (exits.exit_for_verdict),
decided before the report is rendered: a rendering failure changes nothing but a warning."""

import json
import shutil

import pytest
from click.testing import CliRunner

from harness import job
from harness.cli import main
from harness.runfolder import RunFolder
from tests.damaged_folders import log, remove, set_row
from tests.spark.test_damaged_folders import _Shared
from tests.stored_run import make_analysable_run


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return make_analysable_run(tmp_path_factory.mktemp("pristine"))


@pytest.fixture(autouse=True)
def shared_spark(spark, monkeypatch):
    monkeypatch.setattr("harness.engine.session.spark_session", lambda master=None, log=None: _Shared(spark))


def interrupted(folder: RunFolder) -> None:
    summary = folder.read_summary()
    (folder.path / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))


CASES = {  # name: (damage, arguments, exit status, verdict)
    "pass": (lambda f: None, [], 0, "pass"),
    "fail": (log(set_row(19, value=None)), [], 1, "fail"),  # a record nobody sent: unexpected, fatal
    "interrupted": (interrupted, [], 3, "interrupted"),  # neither pass nor fail
    "incomplete-with-partial": (remove("on/acks.parquet"), ["--partial"], 0, "incomplete"),
}


def copy(pristine, tmp_path, name, damage) -> RunFolder:
    folder = RunFolder(shutil.copytree(pristine.path, tmp_path / name / pristine.path.name))
    damage(folder)
    return folder


def run_job(folder: RunFolder, args) -> int:
    with pytest.raises(SystemExit) as ended:
        job.main(["--run", str(folder.path), *args])
    return ended.value.code


@pytest.mark.parametrize("case", CASES)
def test_the_job_exits_as_analyze_does(case, pristine, tmp_path):
    damage, args, code, verdict = CASES[case]
    by_job, by_cli = (copy(pristine, tmp_path, name, damage) for name in ("job", "cli"))
    assert run_job(by_job, args) == code
    assert by_job.read_summary()["verdict"] == verdict
    assert CliRunner().invoke(main, ["analyze", str(by_cli.path), *args]).exit_code == code


def test_a_report_that_cannot_be_rendered_does_not_change_the_exit_status(pristine, tmp_path, monkeypatch, capsys):
    def broken(folder):
        raise ValueError("template missing")

    monkeypatch.setattr("harness.report.write_report", broken)
    folder = copy(pristine, tmp_path, "fail", CASES["fail"][0])
    assert run_job(folder, []) == 1
    assert folder.read_summary()["verdict"] == "fail"
    assert "the report could not be rendered (ValueError: template missing); the verdict stands" in capsys.readouterr().err
