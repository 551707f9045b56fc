from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    lines = (ROOT / "README.md").read_text().splitlines()
    return [line.strip() for line in lines[2:4]]


def test_readme_starts_with_the_two_commands():
    run, test = readme_commands()
    assert "kafka-chaos run experiments/quickstart.yaml" in run
    assert "pytest" in test


def test_ci_runs_the_readme_test_command():
    _, test = readme_commands()
    assert test in (ROOT / ".ci" / "run").read_text().splitlines()
