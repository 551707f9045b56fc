"""experiments/known-bugs/series.py without a broker: a run's output lines, the broker killed when the program says
the word and started again after it, the program told on its stdin; the argument checks (exit 2, nothing started)."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("series", ROOT / "experiments" / "known-bugs" / "series.py")
series = importlib.util.module_from_spec(spec)
spec.loader.exec_module(series)

# Prints a line, asks for the kill, prints what its stdin then says.
PROGRAM = "print('sent 10', flush=True); print('KILL now', flush=True); print('told', input(), flush=True)"


class Cluster:
    """Records the calls series.py makes of a cluster."""

    def __init__(self):
        self.calls = []

    def kill_broker(self, index):
        self.calls.append(("kill", index))

    def start_broker(self, index):
        self.calls.append(("start", index))


def test_the_broker_is_killed_at_the_word_and_started_again_before_the_program_goes_on():
    cluster = Cluster()
    said = series.run_program([sys.executable, "-c", PROGRAM], None, cluster, "KILL", 0.0)
    assert cluster.calls == [("kill", 0), ("start", 0)]
    assert said[:2] == ["sent 10", "KILL now"]
    assert said[2].startswith("(series: broker killed, started again 0 s later, running ")
    assert said[3:] == ["told killed"]


def test_without_the_word_nothing_is_killed():
    cluster = Cluster()
    program = "print('sent 10'); print('done')"
    assert series.run_program([sys.executable, "-c", program], None, cluster, None, 0.0) == ["sent 10", "done"]
    assert series.run_program([sys.executable, "-c", program], None, cluster, "KILL", 0.0) == ["sent 10", "done"]
    assert cluster.calls == []


def test_a_program_that_prints_nothing_is_known_by_its_last_error_line():
    program = "import sys; sys.stderr.write('first\\nException: it broke\\n'); sys.exit(1)"
    assert series.run_program([sys.executable, "-c", program], None, Cluster(), None, 0.0) == ["Exception: it broke"]


@pytest.mark.parametrize("argv, home, says", [
    (["missing.java"], "", "KAFKA_HOME must name an Apache Kafka folder"),
    (["missing.java"], "kafka", "program: no such file"),
    (["program.py"], "kafka", "--kafka-python VERSION goes with a .py program"),
    (["program.java", "--kafka-python", "3.0.12"], "kafka", "--kafka-python VERSION goes with a .py program"),
    (["program.java", "--tv", "3"], "kafka", "argument --tv: invalid choice: '3'"),
])
def test_bad_arguments_exit_2_naming_them_before_anything_starts(tmp_path, monkeypatch, capsys, argv, home, says):
    (tmp_path / "kafka" / "libs").mkdir(parents=True)
    (tmp_path / "program.py").write_text("")
    (tmp_path / "program.java").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path / home) if home else "")
    monkeypatch.setattr(sys, "argv", ["series.py", *argv])
    monkeypatch.setattr(series, "make_cluster", lambda *a: pytest.fail("a cluster was made"))
    with pytest.raises(SystemExit) as exit:
        series.main()
    assert exit.value.code == 2
    assert says in capsys.readouterr().err
