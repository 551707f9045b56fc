"""The damaged-folder corpus (tests/damaged_folders.py), the cases refused before Spark starts:
`kafka-chaos analyze` exits 2 (missing) or 3 (damaged) in one message naming the file, without a
traceback, and rewrites nothing. The cases that need the analysis are in tests/spark."""

import shutil

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.runfolder import RunFolder
from tests.damaged_folders import CASES
from tests.stored_run import make_analysable_run

BEFORE_SPARK = [c for c in CASES if not c.spark]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return make_analysable_run(tmp_path_factory.mktemp("pristine"))


pytestmark = pytest.mark.usefixtures("signal_handlers_restored")


def test_corpus_is_large_enough():
    assert len(CASES) >= 40 and len(BEFORE_SPARK) >= 40


@pytest.mark.parametrize("case", BEFORE_SPARK, ids=str)
def test_damaged_folder_is_refused_naming_the_file(case, pristine, tmp_path):
    folder = RunFolder(shutil.copytree(pristine.path, tmp_path / pristine.path.name, symlinks=True))
    case.damage(folder)
    summary = folder.path / "summary.json"
    before = summary.read_bytes() if summary.exists() else None
    result = CliRunner().invoke(main, ["analyze", str(folder.path), *case.args])
    assert result.exit_code == case.code, result.output
    assert case.says in result.output and str(folder.path / case.names) in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    # Nothing rewritten, nothing written or deleted through a link.
    assert (summary.read_bytes() if summary.exists() else None) == before
    assert not any(folder.path.glob("*/anomalies")) or case.name == "anomalies-linked-outside"
    if (tmp_path / "outside").exists():
        assert (tmp_path / "outside" / "keep.txt").read_text() == "keep me"
        assert [p.name for p in (tmp_path / "outside").iterdir()] == ["keep.txt"]
