"""Every file a run folder names is opened inside it (runfolder.resolve_inside): `report`, `analyze` and
`open_run` on a folder whose summary, aggregate or links point outside it answer exit 2 or 3 naming the
entry, and read nothing outside. The trap: a folder beside the run whose files carry a value (777777)
that would show in any page or table built from them."""

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness import open_run
from harness.cli import main
from harness.runfolder import RunFolder, RunFolderError
from tests.one_line import invoke
from tests.stored_run import LOG_SCHEMA, acks_table, make_analysable_run

TRAP = 777777


pytestmark = pytest.mark.usefixtures("signal_handlers_restored")


@pytest.fixture
def run(tmp_path) -> RunFolder:
    folder = make_analysable_run(tmp_path / "out")
    assert CliRunner().invoke(main, ["report", str(folder.path)]).exit_code == 0
    return folder


@pytest.fixture
def trap(tmp_path):
    """Outside every run folder: a variant's files and a summary, each holding TRAP."""
    out = tmp_path / "trap"
    (out / "log.parquet").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"partition": 0, "offset": 0, "value": TRAP, "timestamp": None}],
                                        schema=LOG_SCHEMA), out / "log.parquet" / "part-00000.parquet")
    (out / "log.parquet" / "_SUCCESS").write_text("")
    table = acks_table(1, 1)
    pq.write_table(table.set_column(1, "value", pa.array([TRAP], pa.int64())), out / "acks.parquet")
    (out / "anomalies").mkdir()
    pq.write_table(pa.table({"partition": [TRAP]}), out / "anomalies" / "partitions.parquet")
    (out / "summary.json").write_text(json.dumps({"run_id": str(TRAP), "variants": {}}))
    return out


def summary_with_key(run: RunFolder, key: str) -> None:
    doc = json.loads((run.path / "summary.json").read_text())
    doc["variants"][key] = doc["variants"].pop("on")
    (run.path / "summary.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("key", ["absolute", "../trap", "on/../../trap", ""])
def test_report_refuses_a_summary_key_that_is_a_path(run, trap, key):
    key = str(trap) if key == "absolute" else key
    summary_with_key(run, key)
    before = run.report.read_bytes()
    result = invoke("report", run.path)
    assert result.exit_code == 3
    assert f"{run.path / 'summary.json'}: variant {key!r} is not a variant name" in result.output
    assert run.report.read_bytes() == before  # the page is not rewritten, the trap not read


def test_report_and_open_run_refuse_a_variant_folder_linked_outside(run, trap):
    shutil.rmtree(run.path / "on")
    os.symlink(trap, run.path / "on")
    result = invoke("report", run.path)
    assert result.exit_code == 3 and f"{run.path / 'on'}: leads out of the folder" in result.output
    stored = open_run(run.path)
    for read in (stored.acks, stored.log):
        with pytest.raises(RunFolderError, match="leads out of the folder"):
            read("on")
    assert invoke("analyze", run.path).exit_code == 3


def test_a_log_part_linked_outside_is_refused_by_open_run(run, trap):
    part = run.path / "off" / "log.parquet" / "part-00001.parquet"
    part.unlink()
    os.symlink(trap / "log.parquet" / "part-00000.parquet", part)
    with pytest.raises(RunFolderError, match=f"{part}: leads out of the folder"):
        open_run(run.path).log("off")


def test_a_self_linked_delivery_log_is_named_not_a_symlink_loop_traceback(run):
    acks = run.path / "off" / "acks.parquet"
    acks.unlink()
    os.symlink(acks, acks)
    with pytest.raises(RunFolderError, match=f"{acks}: a symbolic link that cannot be followed"):
        open_run(run.path).acks("off")
    result = invoke("analyze", run.path)
    assert result.exit_code == 3 and f"{acks} -> {acks}: a symbolic link leading out" in result.output


def test_open_run_names_a_damaged_or_foreign_file_never_a_pyarrow_error(run):
    part = run.path / "off" / "log.parquet" / "part-00002.parquet"
    part.write_bytes(part.read_bytes()[:100])
    with pytest.raises(RunFolderError, match=f"{part}: not a readable Parquet file"):
        open_run(run.path).log("off")
    pq.write_table(pa.table({"something": ["else"]}), part)
    with pytest.raises(RunFolderError, match=f"{part}: no column 'partition'"):
        open_run(run.path).log("off")
    pq.write_table(pa.table({"partition": pa.array([0], pa.int64()), "offset": [99], "value": [TRAP]}), part)
    with pytest.raises(RunFolderError, match=f"{part}: its columns differ"):  # never mixed in
        open_run(run.path).log("off")


def series(run: RunFolder, runs) -> RunFolder:
    folder = run.path.parent / "20260101T000000Z-stored-repeat-cccccc"
    folder.mkdir()
    (folder / "aggregate.json").write_text(json.dumps({"experiment": "stored", "runs": runs, "variants": {}}))
    return RunFolder(folder)


@pytest.mark.parametrize("run_id", ["absolute", "../trap", "..", 5])
def test_a_series_refuses_a_run_id_that_is_a_path(run, trap, run_id):
    run_id = str(trap) if run_id == "absolute" else run_id
    folder = series(run, [{"run_id": run.run_id}, {"run_id": run_id}])
    result = invoke("report", folder.path)
    assert result.exit_code == 3 and f"{folder.path / 'aggregate.json'}: run_id" in result.output
    assert not (folder.path / "index.html").exists()


@pytest.mark.parametrize("junk", ["[]", '{"runs": 5}', '{"runs": [7]}', "{nope"])
def test_a_junk_aggregate_is_named(run, junk):
    folder = series(run, [])
    (folder.path / "aggregate.json").write_text(junk)
    result = invoke("report", folder.path)
    assert result.exit_code == 3 and str(folder.path / "aggregate.json") in result.output


def test_report_index_writes_only_into_a_folder_of_runs_and_only_over_its_own_page(run, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("report", "--index", empty)
    assert result.exit_code == 2 and f"{empty}: holds no run" in result.output
    assert not (empty / "index.html").exists()
    out = run.path.parent
    assert invoke("report", "--index", out).exit_code == 0  # over the page the run wrote
    page = out / "index.html"
    page.write_text("<html>the user's own page</html>")
    result = invoke("report", "--index", out)
    assert result.exit_code == 2 and f"{page}: not a page kafka-chaos wrote" in result.output
    assert page.read_text() == "<html>the user's own page</html>"


def test_a_folder_whose_name_is_not_utf8_does_not_break_the_index(run):
    out = run.path.parent
    odd = os.fsencode(str(out)) + b"/run-\xff\xfe"
    os.makedirs(odd)
    shutil.copy(run.path / "summary.json", os.fsdecode(odd + b"/summary.json"))
    result = invoke("report", "--index", out)
    assert result.exit_code == 0
    page = (out / "index.html").read_text()
    assert run.run_id in page and "run-" not in page.replace(run.run_id, "")
