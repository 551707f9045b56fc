"""Every file in tests/malformed/: exit 2, one message naming the file and the field, nothing started."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

CORPUS = sorted((Path(__file__).resolve().parents[1] / "malformed").glob("*.yaml"))


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 20


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_malformed_experiment_exits_2_naming_the_field(path, tmp_path):
    expect = path.read_text().splitlines()[0].removeprefix("# expect: ")
    out = tmp_path / "reports"
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and expect in result.output, result.output
    assert not out.exists()  # nothing started, nothing written


def test_unwritable_output_folder_exits_2(tmp_path):
    good = tmp_path / "exp.yaml"
    good.write_text("name: m\nworkload: {messages: 10}\nvariants: [{name: a}]\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["run", str(good), "--out", str(blocker / "reports")])
    assert result.exit_code == 2 and "--out" in result.output
