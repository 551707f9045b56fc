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


def ci_environment(tmp_path, with_kafka: bool, with_toxiproxy: bool) -> tuple[str, dict]:
    """Run .ci/run's part before the test command in a clone at tmp_path/clone with tmp_path/shared beside it;
    (what it printed, the environment it leaves)."""
    import os
    import subprocess

    shared = tmp_path / "shared"
    for present, program in ((with_kafka, "kafka/kafka_2.13-4.1.0/bin/kafka-server-start.sh"),
                             (with_toxiproxy, "toxiproxy/bin/toxiproxy-server")):
        if present:
            (shared / program).parent.mkdir(parents=True)
            (shared / program).write_text("#!/bin/sh\n")
            (shared / program).chmod(0o755)
    clone = tmp_path / "clone"
    (clone / ".ci").mkdir(parents=True)
    script = (ROOT / ".ci" / "run").read_text()
    before_tests = script[:script.index("python3 -m venv")]
    setup = before_tests[before_tests.index("shared="):before_tests.index("# The Compose tier")]
    (clone / ".ci" / "env").write_text(f'cd "$(dirname "$0")/.."\nset -euo pipefail\n{setup}'
                                       'echo "KAFKA_HOME=${KAFKA_HOME:-}"; echo "PATH=$PATH"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_HOME", "PATH")}
    env["PATH"] = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if "toxiproxy" not in p)
    out = subprocess.run(["bash", str(clone / ".ci" / "env")], capture_output=True, text=True, env=env, check=True)
    lines = out.stdout.splitlines()
    return lines[0], dict(line.split("=", 1) for line in lines[1:])


def test_ci_uses_the_real_components_beside_the_clone_and_says_so_in_one_line(tmp_path):
    said, env = ci_environment(tmp_path, with_kafka=True, with_toxiproxy=True)
    shared = (tmp_path / "shared").resolve()
    assert env["KAFKA_HOME"] == f"{shared}/kafka/kafka_2.13-4.1.0"
    assert env["PATH"].startswith(f"{shared}/toxiproxy/bin:")
    assert said == (f"real components: KAFKA_HOME={shared}/kafka/kafka_2.13-4.1.0 "
                    f"toxiproxy-server={shared}/toxiproxy/bin/toxiproxy-server")


def test_ci_without_them_says_what_will_skip(tmp_path):
    said, env = ci_environment(tmp_path, with_kafka=False, with_toxiproxy=False)
    assert env["KAFKA_HOME"] == "" and "toxiproxy" not in env["PATH"]
    assert said.startswith("real components: none found under") and "skip" in said
