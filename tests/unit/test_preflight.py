"""What `run` checks before anything starts, and in which order: every check that installs nothing comes before
the install of a client version (minutes, over the network); a variant's feature levels are judged by the Kafka
distribution's own tool; every command that takes --spark-master refuses a bad one before a JVM starts."""

import json
import stat
from types import SimpleNamespace

import pytest
import yaml
from click.testing import CliRunner

import harness.preflight
from harness.exits import InfraError
from harness.cli import main
from harness.cluster import local
from harness.preflight import check
from harness.spec import SpecError
from harness.workload.clientenv import ClientEnvError

CLIENT = {"name": "m", "workload": {"messages": 100, "rate": 100}, "client": {"confluent-kafka": "2.2.0"},
          "variants": [{"name": "a"}]}


@pytest.fixture
def installs(monkeypatch):
    """The install of a client version replaced by one that records it was asked, then refuses (exit 2), so a
    run that gets that far stops there."""
    asked = []

    def ensure(version, *args, **kwargs):
        asked.append(version)
        raise ClientEnvError(f"client.confluent-kafka: the test's install of {version}")

    monkeypatch.setattr(harness.preflight, "ensure", ensure)
    return asked


def run(tmp_path, doc, *args, out=None):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = out or tmp_path / "reports"
    return CliRunner().invoke(main, ["run", str(exp), "--out", str(out), *args]), out


def test_good_input_reaches_the_install_and_it_comes_last(tmp_path, installs):
    result, out = run(tmp_path, CLIENT)
    assert result.exit_code == 2 and "the test's install of 2.2.0" in result.output, result.output
    assert installs == ["2.2.0"] and out.is_dir()  # --out was checked (made) before it


BAD_REPLAY = {"id": 0, "kind": "lost-acks", "target": "all", "planned_at": -1, "planned_duration": 0.2, "params": {}}


@pytest.mark.parametrize("case", ["replay", "spark-master", "kafka-home", "out", "junit", "librdkafka"])
def test_bad_input_is_refused_before_any_client_version_is_installed(tmp_path, installs, case):
    doc, args, out = CLIENT, [], None
    if case == "replay":
        replay = tmp_path / "faults.jsonl"
        replay.write_text(json.dumps(BAD_REPLAY) + "\n")
        args = ["--replay", str(replay)]
    elif case == "spark-master":
        args = ["--spark-master", "bogus://x"]
    elif case == "kafka-home":
        doc = {**CLIENT, "cluster": {"broker": "kafka", "kafka_home": str(tmp_path / "no-kafka")}}
    elif case == "out":
        (tmp_path / "afile").write_text("")
        out = tmp_path / "afile" / "reports"
    elif case == "junit":
        (tmp_path / "afile").write_text("")
        args = ["--junit", str(tmp_path / "afile" / "junit.xml")]
    else:
        doc = {**CLIENT, "producer": {"enable.idempotence": True, "acks": 1}}
    result, _ = run(tmp_path, doc, *args, out=out)
    assert result.exit_code == 2, result.output
    assert installs == [], result.output  # the install was never asked for
    said = {"replay": "planned_at", "spark-master": "--spark-master", "kafka-home": "cluster.kafka_home",
            "out": "--out", "junit": "--junit", "librdkafka": "librdkafka rejects it"}[case]
    assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_analyze_refuses_a_bad_spark_master_before_anything_starts(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr("harness.run.reanalyze", lambda *a, **k: started.append(a))
    for master in ("bogus://x", "local\n", "local[\uff12]", ""):
        result = CliRunner().invoke(main, ["analyze", str(tmp_path), "--spark-master", master])
        assert result.exit_code == 2, result.output
        assert "--spark-master" in result.output and "not a Spark master URL" in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert started == []


# A stand-in for a Kafka distribution's kafka-storage.sh: what Kafka 4.1.0's prints, and each call logged.
STORAGE = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls"
case "$1" in
version-mapping)
  printf 'metadata.version=27 (4.1-IV1)\\nkraft.version=1\\ntransaction.version=2\\ngroup.version=1\\n'
  printf 'eligible.leader.replicas.version=1\\nshare.version=0\\nstreams.version=0\\n' ;;
feature-dependencies)
  for a in "$@"; do
    case "$a" in transaction.version=9) echo "Feature level 9 is not supported for feature transaction.version" >&2
                                        exit 1 ;; esac
  done
  echo "no dependencies" ;;
esac
"""


def distribution(tmp_path, storage=STORAGE):
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    for tool, text in (("kafka-server-start.sh", ""), ("kafka-storage.sh", storage)):
        (home / "bin" / tool).write_text(text)
        (home / "bin" / tool).chmod(0o755 | stat.S_IEXEC)
    return home


def features_spec(tmp_path, home, *levels: dict):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"name": "m", "workload": {"messages": 100, "rate": 100},
                                   "cluster": {"broker": "kafka", "kafka_home": str(home)},
                                   "variants": [{"name": f"v{i}", "features": f} for i, f in enumerate(levels)]}))
    return exp


@pytest.fixture
def java(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # input_problems only asks that Java is there
    local.kafka_storage.cache_clear()
    yield
    local.kafka_storage.cache_clear()


def test_a_feature_the_distribution_does_not_have_is_refused_naming_the_allowed_ones(tmp_path, java):
    home = distribution(tmp_path)
    with pytest.raises(SpecError) as e:
        check(features_spec(tmp_path, home, {"transaction.version": 2}, {"bogus.feature.version": 1}), None, None, None)
    message = str(e.value)
    assert "variants.1.features.bogus.feature.version (variant v1): not a feature this Kafka" in message
    assert "allowed: eligible.leader.replicas.version, group.version, kraft.version, share.version, " \
           "streams.version, transaction.version" in message  # metadata.version's level is a release: not settable
    with pytest.raises(SpecError, match="variants.0.features.metadata.version"):
        check(features_spec(tmp_path, home, {"metadata.version": 27}), None, None, None)


def test_a_level_the_distribution_does_not_support_is_refused_and_each_answer_is_asked_once(tmp_path, java):
    home = distribution(tmp_path)
    spec, _ = check(features_spec(tmp_path, home, {"transaction.version": 1}, {"transaction.version": 2}), None, None, None)
    assert spec.notes == []
    with pytest.raises(SpecError) as e:
        check(features_spec(tmp_path, home, {"transaction.version": 9}), None, None, None)
    assert ("variants.0.features.transaction.version (variant v0): level 9 is not one this Kafka "
            f"({home}) supports (its default level is 2)") in str(e.value)
    check(features_spec(tmp_path, home, {"transaction.version": 1}, {"transaction.version": 2}), None, None, None)
    calls = (home / "bin" / "calls").read_text().splitlines()
    assert calls.count("version-mapping") == 1  # one JVM start per distribution and question, in a process
    assert len(calls) == 3


def test_a_distribution_that_cannot_answer_leaves_each_feature_named_unchecked(tmp_path, java):
    home = distribution(tmp_path, "#!/bin/sh\necho 'unknown command' >&2\nexit 1\n")
    spec, _ = check(features_spec(tmp_path, home, {"transaction.version": 1}, {"group.version": 0}), None, None, None)
    assert len(spec.notes) == 1
    assert spec.notes[0].startswith("variants.0.features.transaction.version (variant v0), variants.1.features."
                                    "group.version (variant v1): unchecked before the cluster starts")
    assert "unknown command" in spec.notes[0]


def test_the_feature_check_needs_a_distribution_first(tmp_path, java, monkeypatch):
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({"name": "m", "workload": {"messages": 100}, "cluster": {"broker": "kafka"},
                                   "variants": [{"name": "v", "features": {"bogus.version": 1}}]}))
    with pytest.raises(SpecError, match="cluster.kafka_home: broker kafka with backend local needs"):
        check(exp, None, None, None)


def test_shrink_refuses_a_bad_spark_master_before_any_try(tmp_path, monkeypatch):
    from harness import cli
    from tests.stored_run import make_run

    folder, _, _ = make_run(tmp_path / "runs", off_lost=5)  # a failed run to shrink
    spec = yaml.safe_load(folder.spec_path.read_text())
    folder.spec_path.write_text(yaml.safe_dump({**spec, "workload": {"messages": 100, "rate": 100}}))
    rows = [json.loads(x) for x in folder.faults_path.read_text().splitlines()]
    folder.faults_path.write_text("".join(json.dumps({**r, "params": {"cut_after_ms": 100}} if r["kind"] == "lost-acks"
                                                     else r) + "\n" for r in rows))
    tries = []

    def run_once(*args, **kwargs):
        tries.append(args)
        raise InfraError("the test's try")

    monkeypatch.setattr(cli, "_run_once", run_once)
    monkeypatch.setattr("harness.engine.session.SharedSpark", lambda *a: SimpleNamespace(stop=lambda: None))
    shrink = ["shrink", str(folder.path), "--out", str(tmp_path / "t"), "--spark-master"]
    assert CliRunner().invoke(main, [*shrink, "local[1]"]).exit_code == 3 and len(tries) == 1  # a good one: a try
    r = CliRunner().invoke(main, [*shrink, "local\n"])
    assert r.exit_code == 2 and "--spark-master 'local\\n': not a Spark master URL" in r.output, r.output
    assert len(tries) == 1
