"""A run folder is data, never a program (issue 42): `report`, `compare`, `shrink` and `analyze` open every
file of a folder through one reader (RunFolder.read_spec / read_summary / read_faults / read_read,
SeriesFolder.read_aggregate) that stays inside the folder, sizes a file before parsing it, types every field
it hands on, and answers a damaged file with exit 3 in one line naming the file and the field. Text from a
folder reaches the terminal without a control character of its own.

The trap: a folder beside the run whose files would pass for the run's, each carrying SECRET, which must
show in no output and no page."""

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from harness import cli
from harness.cli import main
from harness.formats import json_object
from harness.report.render import render_compare
from harness.runfolder import RunFolder
from harness.terminal import print_summary
from tests.one_line import invoke
from tests.stored_run import make_analysable_run

SECRET = "OUTSIDE-THE-FOLDER-7f3a"

pytestmark = pytest.mark.usefixtures("signal_handlers_restored")


@pytest.fixture
def run(tmp_path) -> RunFolder:
    return make_analysable_run(tmp_path / "out")


@pytest.fixture
def trap(tmp_path, run):
    """Beside the run: a summary, a spec and a faults.jsonl as the run's would be, each carrying SECRET."""
    out = tmp_path / "trap"
    out.mkdir()
    summary = json.loads((run.path / "summary.json").read_text())
    summary["experiment"] = summary["cluster"] = SECRET
    (out / "summary.json").write_text(json.dumps(summary))
    spec = (run.path / "spec.yaml").read_text().replace("enable.idempotence: false", f"client.id: {SECRET}")
    assert SECRET in spec
    (out / "spec.yaml").write_text(spec)
    (out / "faults.jsonl").write_text(run.faults_path.read_text().replace("lost-acks", SECRET))
    return out


def pages(folder) -> str:
    """Every page under `folder`'s parent (the run's report, a comparison, the runs index)."""
    return "".join(p.read_text() for p in folder.parent.rglob("*.html"))


@pytest.mark.parametrize("name", ["summary.json", "spec.yaml", "faults.jsonl"])
def test_report_refuses_a_file_linked_out_of_the_folder_and_shows_nothing_of_it(run, trap, name):
    (run.path / name).unlink()
    os.symlink(trap / name, run.path / name)
    result = invoke("report", run.path)
    assert result.exit_code == 3 and f"{run.path / name}: leads out of the folder" in result.output, result.output
    assert SECRET not in result.output and SECRET not in pages(run.path)


def test_compare_refuses_a_summary_linked_out_of_the_folder(run, trap, tmp_path):
    other = RunFolder(shutil.copytree(run.path, run.path.with_name("20260102T000000Z-stored-cccccc")))
    (other.path / "summary.json").unlink()
    os.symlink(trap / "summary.json", other.path / "summary.json")
    result = invoke("compare", run.path, other.path)
    assert result.exit_code == 3 and f"{other.path / 'summary.json'}: leads out of the folder" in result.output
    assert SECRET not in result.output and SECRET not in pages(run.path)


def test_shrink_refuses_a_summary_linked_out_of_the_folder(run, trap, tmp_path, monkeypatch):
    tries = []
    monkeypatch.setattr(cli, "_run_once", lambda *a, **k: tries.append(a) or pytest.fail("shrink ran a try"))
    (run.path / "summary.json").unlink()
    failed = json.loads((trap / "summary.json").read_text())
    failed["variants"]["on"]["verdict"] = "fail"  # a failed run: what would make shrink start its tries
    failed["variants"]["on"]["expectations"][0]["status"] = "fail"
    (trap / "summary.json").write_text(json.dumps(failed))
    os.symlink(trap / "summary.json", run.path / "summary.json")
    result = invoke("shrink", run.path, "--out", tmp_path / "shrunk")
    assert result.exit_code == 3 and f"{run.path / 'summary.json'}: leads out of the folder" in result.output
    assert SECRET not in result.output and not tries and not (tmp_path / "shrunk").exists()


def test_report_refuses_an_aggregate_linked_out_of_the_series(run, tmp_path):
    series = run.path.with_name("20260101T000000Z-stored-repeat-dddddd")
    series.mkdir()
    outside = tmp_path / "trap-aggregate.json"
    outside.write_text(json.dumps({"experiment": SECRET, "runs": [], "variants": {}}))
    os.symlink(outside, series / "aggregate.json")
    result = invoke("report", series)
    assert result.exit_code == 3 and f"{series / 'aggregate.json'}: leads out of the folder" in result.output
    assert SECRET not in result.output and not (series / "index.html").exists()


def test_a_summary_linked_to_an_endless_device_is_refused_not_read(run):
    (run.path / "summary.json").unlink()
    os.symlink("/dev/zero", run.path / "summary.json")
    for command in ("report", "compare"):
        result = invoke(command, run.path, *([run.path] if command == "compare" else []))
        assert result.exit_code == 3 and f"{run.path / 'summary.json'}: leads out of the folder" in result.output


def test_a_fifo_in_place_of_a_file_is_refused_without_waiting_for_a_writer(run):
    run.faults_path.unlink()
    os.mkfifo(run.path / "faults.jsonl")
    result = invoke("report", run.path)
    assert result.exit_code == 3 and f"{run.path / 'faults.jsonl'}: a FIFO, not a file" in result.output


def test_a_summary_beyond_its_bound_is_refused_before_it_is_read(run):
    os.truncate(run.path / "summary.json", (128 << 20) + 1)  # sparse: nothing of it is written
    result = invoke("compare", run.path, run.path)
    assert result.exit_code == 3
    assert f"{run.path / 'summary.json'}: 134,217,729 bytes (at most 128 MiB" in result.output


def test_a_million_fault_lines_are_refused_by_their_count(run):
    run.faults_path.write_text('{"id": 0}\n' * 10**6)  # every line a fault row as such: only the count refuses it
    result = invoke("report", run.path)
    assert result.exit_code == 3, result.output
    assert f"{run.faults_path}: 1,000,000 lines (at most 200,000: a line per fault and variant" in result.output
    assert not run.report.exists()


def test_a_fault_line_of_150000_keys_is_refused_by_its_length(run):
    line = "{" + ", ".join(f'"k{i}": 0' for i in range(150_000)) + "}"
    run.faults_path.write_text(line + "\n")
    result = invoke("report", run.path)
    assert result.exit_code == 3 and f"{run.faults_path}:1: {len(line):,} bytes (a line is at most 64 KiB" \
        in result.output


def test_a_repeated_key_is_found_among_200000_keys():
    keys = [f"k{i}" for i in range(200_000)]
    unique = "{" + ", ".join(f'"{k}": 0' for k in keys) + "}"
    assert len(json_object(unique)) == 200_000
    with pytest.raises(ValueError, match="key 'k7' given twice"):
        json_object(unique[:-1] + ', "k7": 1}')


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_a_number_beyond_a_float_is_refused(number):
    with pytest.raises(ValueError, match="beyond the range of a number"):
        json_object(f'{{"planned_duration": {number}}}')


def edit_summary(run: RunFolder, edit) -> None:
    doc = json.loads((run.path / "summary.json").read_text())
    edit(doc)
    (run.path / "summary.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("command", ["report", "compare", "shrink"])
@pytest.mark.parametrize("field, value, says", [
    (("variants", "on", "expectations"), "x", 'variants.on.expectations: "x" is not a list (a list of checks'),
    (("variants", "on", "expectations"), [{"metric": "lost"}],
     "variants.on.expectations.0.rule: missing (variants.on.expectations.0 must be an object with metric, rule)"),
    (("variants", "on", "expectations"), [{"metric": "lost", "rule": "== 0", "status": "bogus"}],
     'variants.on.expectations.0.status: "bogus" is not a word it takes (pass or fail or allowed or unknown)'),
    (("seed",), "not-a-seed", 'seed: "not-a-seed" is not a whole number (a 64-bit integer, or absent)'),
    (("seed",), 2**64, "seed: 18446744073709551616 is out of range (a 64-bit integer, or absent)"),
    (("verdict",), ["pass"], 'verdict: ["pass"] is not a string'),
    (("variants", "on", "duplicates"), "many", 'variants.on.duplicates: "many" is not a whole number'),
    (("variants", "on", "latency_ms"), {"p50": 1}, "variants.on.latency_ms.p95: missing"),
    (("variants", "on", "allowed"), "lost", 'variants.on.allowed: "lost" is not a list (a list of metric names)'),
    (("warnings",), [1], "warnings.0: 1 is not a string"),
])
def test_a_summary_field_of_the_wrong_shape_is_named(run, tmp_path, command, field, value, says):
    def edit(doc):
        at = doc
        for key in field[:-1]:
            at = at[key]
        at[field[-1]] = value
    edit_summary(run, edit)
    args = {"report": [run.path], "compare": [run.path, run.path], "shrink": [run.path, "--out", tmp_path / "s"]}
    result = invoke(command, *args[command])
    assert result.exit_code == 3 and f"{run.path / 'summary.json'}: {says}" in result.output, result.output


@pytest.mark.parametrize("command", ["report", "analyze"])
def test_a_fault_planned_for_1e308_seconds_is_named(run, command):
    rows = [json.loads(line) for line in run.faults_path.read_text().splitlines()]
    rows[1]["planned_duration"] = 1e308
    run.faults_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = invoke(command, run.path)
    assert result.exit_code == 3
    assert f"{run.faults_path}:2: planned_duration: 1e+308 is out of range (a finite number, 0 to 86,400)" \
        in result.output


def test_every_file_the_harness_writes_reads_back_unchanged(run):
    """The shapes are the harness's own: its fixture run reads back whole (no field refused or dropped)."""
    assert run.read_summary() == json.loads((run.path / "summary.json").read_text())
    assert len(run.read_faults()) == len(run.faults_path.read_text().splitlines())
    assert run.read_spec()["variants"][0]["name"] == "off" and run.read_read("off")["complete"] is True


ESC = "\x1b]0;pwned\x07\x1b[2J"  # set the window title, clear the screen


def test_compare_prints_no_escape_sequence_from_a_folder(run):
    other = RunFolder(shutil.copytree(run.path, run.path.with_name("20260102T000000Z-stored-cccccc")))
    edit_summary(other, lambda doc: doc["variants"]["on"].update(client=f"librdkafka {ESC}"))
    result = CliRunner().invoke(main, ["compare", str(run.path), str(other.path)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "librdkafka \\x1b]0;pwned\\x07\\x1b[2J" in result.output  # shown, written out


def test_a_variant_name_with_an_escape_sequence_is_refused_and_shown_written_out(run):
    edit_summary(run, lambda doc: doc["variants"].update({f"on{ESC}": doc["variants"].pop("on")}))
    result = CliRunner().invoke(main, ["compare", str(run.path), str(run.path)])
    assert result.exit_code == 3 and "is not a variant name" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output


def test_an_error_naming_a_folder_shows_its_control_characters_written_out(tmp_path):
    odd = tmp_path / f"run{ESC}"
    odd.mkdir()
    result = CliRunner().invoke(main, ["report", str(odd)])
    assert result.exit_code == 2 and "no summary.json" in result.output
    assert "\x1b" not in result.output and "run\\x1b]0;pwned" in result.output


def test_the_summary_table_shows_folder_text_without_control_characters_or_markup(run, capsys):
    summary = run.read_summary()
    summary.update(experiment=f"exp{ESC}", reason=f"[bold red]{ESC}why", status="complete\x9b31m")
    summary["variants"]["on"].update(incomplete=f"gone{ESC}")
    print_summary(summary)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "exp\\x1b]0;pwned" in out and "[bold red]\\x1b" in out and "complete\\x9b31m" in out


def test_visible_writes_out_every_control_character_and_keeps_the_rest():
    from harness.terminal import visible

    assert visible("a\x00b\x1fc\x7fd\x85e\x9ff\u202eg") == "a\\x00b\\x1fc\\x7fd\\x85e\\x9ff\\u202eg"
    assert visible("line\nnext\ttab\r") == "line\\nnext\\ttab\\r"
    assert visible("tansu · 3 × [1] é ü 日本") == "tansu · 3 × [1] é ü 日本"


def test_the_comparison_page_escapes_html_from_the_folders():
    summary = {"experiment": "<script>alert(1)</script>", "verdict": "pass", "cluster": "<b>x</b>",
               "variants": {"<script>v</script>": {"client": "<img src=x onerror=alert(2)>", "lost": 0}}}
    view = {"runs": [{"folder": "<i>run</i>", "path": "p", "href": "p/index.html", "summary": summary}],
            "variants": ["<script>v</script>"]}
    html = render_compare(view)
    assert "<script>" not in html and "<img" not in html and "<b>x" not in html and "<i>run" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;script&gt;v&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_a_fifo_where_the_runs_index_goes_is_not_waited_on_nor_overwritten(run):
    assert invoke("report", run.path).exit_code == 0
    index = run.path.parent / "index.html"
    os.mkfifo(index)
    result = invoke("report", "--index", run.path.parent)
    assert result.exit_code == 2 and f"{index}: not a page kafka-chaos wrote; not overwritten" in result.output


def test_shrink_reads_the_faults_through_the_folder_s_reader(run, tmp_path, monkeypatch):
    """shrink's schedule is loaded from faults.jsonl: a FIFO there is refused by the reader before the schedule's
    own loader could wait on it."""
    monkeypatch.setattr(cli, "_run_once", lambda *a, **k: pytest.fail("shrink ran a try"))
    failed = json.loads((run.path / "summary.json").read_text())
    failed["variants"]["on"]["verdict"] = "fail"
    failed["variants"]["on"]["expectations"][0]["status"] = "fail"
    (run.path / "summary.json").write_text(json.dumps(failed))
    run.faults_path.unlink()
    os.mkfifo(run.path / "faults.jsonl")
    result = invoke("shrink", run.path, "--out", tmp_path / "shrunk")
    assert result.exit_code == 3 and f"{run.path / 'faults.jsonl'}: a FIFO, not a file" in result.output
