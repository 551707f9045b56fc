"""The run folder: its layout in one place, and open_run as the README shows it."""

import re
from pathlib import Path

import pandas as pd
import pytest

from harness import open_run
from harness.runfolder import RunFolder, RunFolderError
from tests.stored_run import make_run

README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLE_RUN = "reports/20261121T101500Z-quickstart-1a2b3c"


def test_readme_example_opens_a_run_and_lists_its_jump_back_runs(tmp_path, capsys):
    folder, summary, _ = make_run(tmp_path)
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    assert EXAMPLE_RUN in block and "open_run" in block and "jump_back_runs" in block
    scope: dict = {}
    exec(block.replace(EXAMPLE_RUN, str(folder.path)).replace("\"idempotence-off\"", "\"off\""), scope)
    runs = scope["runs"]
    assert isinstance(runs, pd.DataFrame) and len(runs) == summary["variants"]["off"]["jump_back_runs"]
    assert list(runs.columns[:3]) == ["partition", "first_offset", "last_offset"]
    assert capsys.readouterr().out  # the example prints what it found


def test_open_run_gives_every_table_as_pandas(tmp_path):
    folder, summary, faults = make_run(tmp_path)
    run = open_run(folder.path)
    assert run.variants == ["off", "on"] and run.summary["verdict"] == "pass"
    assert len(run.faults) == len(faults) and {"planned_at", "applied_at"} <= set(run.faults.columns)
    assert run.anomalies("on", "jump_back_runs").empty
    with pytest.raises(KeyError, match="no such anomaly table"):
        run.anomalies("on", "nope")


def test_missing_files_are_named(tmp_path):
    folder, _, _ = make_run(tmp_path)
    assert "acks.parquet is missing" in folder.missing("off")
    (folder.variant_dir("off") / "acks.parquet").write_bytes(b"")
    assert "log.parquet is missing" in folder.missing("off")
    (folder.log_path("off")).mkdir()
    assert "no _SUCCESS" in folder.missing("off")
    with pytest.raises(RunFolderError, match="final read did not finish"):
        folder.analysis_input("off")


def test_damaged_summary_and_faults_are_named(tmp_path):
    folder = RunFolder(tmp_path)
    (tmp_path / "summary.json").write_text("{not json")
    with pytest.raises(RunFolderError, match="summary.json: unreadable") as e:
        folder.read_summary()
    assert e.value.damaged
    (tmp_path / "faults.jsonl").write_text('{"id": 1}\nnope\n')
    with pytest.raises(RunFolderError, match=r"faults.jsonl:2: not a JSON object line"):
        folder.read_faults()
