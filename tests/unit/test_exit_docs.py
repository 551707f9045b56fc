"""What the README and the CLI's --help say about exit statuses and fatal anomalies is what the code does:
the fatal anomalies are metrics.FATAL (the registry), the statuses are the Exit enum. Both are read from
the code, so a metric made fatal or a status added fails here until the README says so."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.analysis.metrics import FATAL, KEYS
from harness.cli import main
from harness.exits import Exit

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
CODES = {int(code) for code in Exit}


def exit_table(header: str) -> dict[int, str]:
    """The README table under `header`: status -> its row's text ("130 / 143" is two statuses)."""
    start = README.index(header)
    rows = {}
    for line in README[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        first, text = line.strip("|").split("|", 1)
        for code in first.split("/"):
            rows[int(code)] = text
    return rows


@pytest.mark.parametrize("header", ["| exit | meaning |", "| exit | `analyze` |"])
def test_every_exit_status_has_a_row_in_the_readme(header):
    assert set(exit_table(header)) == CODES


def test_the_readme_names_exactly_the_fatal_anomalies_as_exit_1():
    named = set(re.findall(r"`(\w+)`", exit_table("| exit | meaning |")[1]))
    assert FATAL - named == set(), "fatal but not in the README's exit-1 row"
    assert named - FATAL == set(), "in the README's exit-1 row but not fatal"


@pytest.mark.parametrize("command", ["run", "analyze"])
def test_the_help_names_every_exit_status_and_exactly_the_fatal_anomalies(command):
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())  # click wraps the lines
    statuses = text[text.index("Exit status: "):]
    for code in CODES:
        assert re.search(rf"[:;] {code} ", statuses), code
    named = set(re.search(r"fatal anomaly[^(]*\(([^)]*)\)", statuses).group(1).split(", "))
    assert named == FATAL
    assert named <= set(KEYS)
