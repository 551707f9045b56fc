"""A kafka-chaos command run in-process that must answer in one line, never with a traceback."""

from click.testing import CliRunner

from harness.cli import main


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in result.output and "unexpectedly" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    return result
