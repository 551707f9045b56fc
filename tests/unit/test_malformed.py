"""Every file in tests/malformed/: a bad input to `kafka-chaos run`, refused with exit 2 before anything
starts, in one message naming the file (or option) and the field, without a traceback.

Each file starts with comment lines that say how to run it and what must come out:

    # expect: <text the message must contain>
    # args: --replay {replay} --seed 3        (optional) more arguments to `run`
    # names: {replay}                         (optional) what the message must name; default the file itself
    # replay: {"id": 0, ...}                  (optional, repeatable) lines of the {replay} file

In args and names, {replay} is a faults.jsonl made of the `# replay:` lines, {tmp} a fresh folder,
{afile} a regular file in it, {dir} the folder of this corpus, {nl} a line break.
"""

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

CORPUS = sorted((Path(__file__).resolve().parents[1] / "malformed").glob("*.yaml"))


def headers(path: Path) -> dict[str, list[str]]:
    """The leading `# key: value` lines (the files may hold bytes that are not UTF-8 further down)."""
    out: dict[str, list[str]] = {}
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        if not line.startswith("# ") or ": " not in line:
            break
        key, _, value = line[2:].partition(": ")
        out.setdefault(key, []).append(value)
    return out


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 150


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_malformed_input_exits_2_naming_the_file_and_field(path, tmp_path):
    h = headers(path)
    replay = tmp_path / "replay.jsonl"
    if "replay" in h:
        replay.write_text("".join(line + "\n" for line in h["replay"] if line != "(empty)"))
    afile = tmp_path / "afile"
    afile.write_text("")
    fill = {"replay": str(replay), "tmp": str(tmp_path), "afile": str(afile), "dir": str(path.parent), "nl": "\n"}
    args = [a.format(**fill) for a in shlex.split(h.get("args", [""])[0])]
    out = tmp_path / "reports"
    if "--out" not in args:
        args += ["--out", str(out)]
    result = CliRunner().invoke(main, ["run", str(path), *args])
    named = h.get("names", [str(path)])[0].format(**fill)
    assert result.exit_code == 2, result.output
    assert named in result.output and h["expect"][0] in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not out.exists()  # nothing started, nothing written


def test_unwritable_output_folder_exits_2(tmp_path):
    good = tmp_path / "exp.yaml"
    good.write_text("name: m\nworkload: {messages: 10}\nvariants: [{name: a}]\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["run", str(good), "--out", str(blocker / "reports")])
    assert result.exit_code == 2 and "--out" in result.output


def test_a_file_larger_than_1_mib_is_refused_unread(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("name: m\nworkload: {messages: 10}\nvariants: [{name: a}]\ndescription: " + "x" * (1 << 20) + "\n")
    result = CliRunner().invoke(main, ["run", str(big), "--out", str(tmp_path / "reports")])
    assert result.exit_code == 2 and f"{big}: not valid YAML: larger than 1024 KiB" in result.output, result.output
