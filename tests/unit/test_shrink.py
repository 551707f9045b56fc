"""ddmin over a fault schedule (harness/shrink.py) with plain predicates: no run, no clock."""

import pytest

from harness.shrink import shrink


def counting(predicate):
    calls = []

    def fails(subset):
        calls.append(tuple(subset))
        return predicate(set(subset))
    return fails, calls


def test_one_guilty_fault_among_sixteen_is_found_in_few_runs():
    fails, calls = counting(lambda s: 11 in s)
    found = shrink(list(range(16)), fails, max_runs=30)
    assert found.faults == [11] and found.minimal
    assert found.runs == len(calls) == len(set(calls)) <= 12  # never the same subset twice


def test_two_faults_that_fail_only_together_are_both_kept():
    fails, _ = counting(lambda s: {2, 13} <= s)
    found = shrink(list(range(16)), fails, max_runs=60)
    assert sorted(found.faults) == [2, 13] and found.minimal


def test_a_fault_that_needs_any_one_of_three_helpers_keeps_one():
    fails, _ = counting(lambda s: 5 in s and bool(s & {0, 9, 15}))
    found = shrink(list(range(16)), fails, max_runs=60)
    assert 5 in found.faults and len(found.faults) == 2 and found.minimal


def test_nothing_smaller_failing_keeps_the_whole_schedule():
    fails, calls = counting(lambda s: s == {0, 1, 2, 3})
    found = shrink([0, 1, 2, 3], fails, max_runs=30)
    assert found.faults == [0, 1, 2, 3] and found.minimal and found.runs == len(calls)


def test_the_budget_stops_the_search_and_says_so():
    fails, calls = counting(lambda s: 11 in s and 3 in s)
    found = shrink(list(range(16)), fails, max_runs=3)
    assert found.runs == len(calls) == 3 and not found.minimal
    assert {3, 11} <= set(found.faults)  # what it keeps still fails


@pytest.mark.parametrize("n", [0, 1])
def test_a_schedule_of_one_fault_or_none_is_already_minimal(n):
    fails, calls = counting(lambda s: True)
    found = shrink(list(range(n)), fails, max_runs=5)
    assert found.faults == list(range(n)) and found.minimal and calls == []


# -- which variant and check, and the replay file ----------------------------------------------------------

from harness.exits import UsageError  # noqa: E402
from harness.shrink import replay_rows, still_fails, target  # noqa: E402


def summary(**variants):
    return {"variants": {name: {"verdict": "fail" if failed else "pass",
                                "expectations": [{"metric": m, "status": "fail" if m in failed else "pass"}
                                                 for m in ("duplicates", "lost", "unexpected")]}
                         for name, failed in variants.items()}}


def test_the_first_failed_variant_and_its_first_failed_check_by_default():
    s = summary(off=[], on=["lost", "unexpected"])
    assert target(s, None, None, "R") == ("on", "lost")
    assert target(s, "on", "unexpected", "R") == ("on", "unexpected")


@pytest.mark.parametrize("variant, metric, said", [
    (None, None, "R: no variant failed (off pass, on pass): nothing to shrink"),
    ("nope", None, "--variant nope: no such variant in R (off, on)"),
    ("off", "lost", "--check lost: not a failed check of off (failed: none)"),
])
def test_a_run_with_nothing_failed_to_shrink_is_bad_input(variant, metric, said):
    with pytest.raises(UsageError) as e:
        target(summary(off=[], on=[]), variant, metric, "R")
    assert str(e.value) == said


def test_a_try_fails_only_by_the_same_check_of_the_same_variant():
    s = summary(off=["duplicates"], on=["lost"])
    assert still_fails(s, "on", "lost") and not still_fails(s, "on", "duplicates")
    assert not still_fails(s, "other", "lost") and not still_fails(None, "on", "lost")


def test_the_replay_file_keeps_the_variants_rows_of_the_kept_faults():
    rows = [{"variant": v, "id": i, "kind": "lost-acks"} for v in ("off", "on") for i in range(3)]
    assert replay_rows(rows, "on", {0, 2}) == [{"variant": "on", "id": 0, "kind": "lost-acks"},
                                               {"variant": "on", "id": 2, "kind": "lost-acks"}]


# -- a run folder is data: shrink runs nothing its spec.yaml names ------------------------------------------

import json  # noqa: E402

import yaml  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from harness import cli  # noqa: E402
from harness.shrink import folder_hazards  # noqa: E402
from harness.spec import load_spec  # noqa: E402
from tests.stored_run import make_run  # noqa: E402


def plant(tmp_path, marker):
    """An executable that leaves `marker` behind if anything runs it, and a Kafka distribution made of it."""
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    for tool in ("kafka-storage.sh", "kafka-server-start.sh", "kafka-features.sh", "kafka-topics.sh"):
        (home / "bin" / tool).symlink_to(script)
    return script, home


PLACES = {  # where a spec.yaml can name something to run, load, read or reach: (edit of the spec, field named)
    "cluster.proxy": (lambda s, e, h: s["cluster"].update(proxy=str(e)), "cluster.proxy"),
    "cluster.kafka_home": (lambda s, e, h: s["cluster"].update(broker="kafka", kafka_home=str(h)),
                           "cluster.kafka_home"),
    "cluster.compose_file": (lambda s, e, h: s["cluster"].update(backend="compose", broker="kafka", compose_file=str(e)),
                             "cluster.compose_file"),
    "cluster.bootstrap_servers": (lambda s, e, h: s["cluster"].update(backend="external", broker="kafka",
                                                                      bootstrap_servers="10.1.2.3:9092"),
                                  "cluster.bootstrap_servers"),
    "kinit.cmd": (lambda s, e, h: s["producer"].update({"sasl.kerberos.kinit.cmd": str(e)}),
                  "producer.sasl.kerberos.kinit.cmd"),
    "plugin": (lambda s, e, h: s["cluster"].update(client={"plugin.library.paths": str(e)}),
               "cluster.client.plugin.library.paths"),
    "engine": (lambda s, e, h: s["variants"][0]["producer"].update({"ssl.engine.location": str(e)}),
               "variants.0.producer.ssl.engine.location"),
    "consumer": (lambda s, e, h: s.update(consumer={"config": {"ssl.ca.location": str(e)}}),
                 "consumer.config.ssl.ca.location"),
}


@pytest.mark.parametrize("place", PLACES)
def test_shrink_runs_nothing_a_run_folder_names(tmp_path, monkeypatch, place):
    marker = tmp_path / "ran"
    script, home = plant(tmp_path, marker)
    folder, _, _ = make_run(tmp_path / "runs", off_lost=5)  # variant off lost data: a failed run to shrink
    spec = yaml.safe_load(folder.spec_path.read_text())
    # a spec that validates: without the refusal, shrink would go on to run a try with what it names
    spec.update(cluster={"backend": "local", "broker": "tansu"}, workload={"messages": 100, "rate": 100})
    edit, field = PLACES[place]
    edit(spec, script, home)
    folder.spec_path.write_text(yaml.safe_dump(spec))
    rows = [json.loads(x) for x in folder.faults_path.read_text().splitlines()]
    folder.faults_path.write_text("".join(json.dumps({**r, "params": {"cut_after_ms": 100}} if r["kind"] == "lost-acks"
                                                     else r) + "\n" for r in rows))
    tries = []
    monkeypatch.setattr(cli, "_run_once", lambda *a, **k: tries.append(a) or pytest.fail("a try was run"))
    monkeypatch.setenv("KAFKA_HOME", str(home))  # even the user's own KAFKA_HOME is not reached for
    r = CliRunner().invoke(cli.main, ["shrink", str(folder.path), "--out", str(tmp_path / "tries")])
    assert r.exit_code == 2, r.output
    assert field in r.output and "--experiment" in r.output, r.output
    assert not marker.exists() and tries == []
    assert not (tmp_path / "tries").exists()  # nothing written either


def test_a_folder_of_an_ordinary_run_names_nothing_to_run():
    """The spec.yaml a run writes (public_dict) of each shipped experiment has nothing shrink would refuse."""
    from pathlib import Path

    for path in sorted(Path("experiments").glob("*.yaml")):
        assert folder_hazards(load_spec(path).public_dict()) == [], path


def test_hazards_are_found_only_where_the_field_has_its_shape():
    assert folder_hazards({"cluster": "x", "producer": ["ssl.ca.location"], "variants": "v"}) == []
    assert folder_hazards({"cluster": {"proxy": "toxiproxy"}, "variants": [{"producer": {"acks": "all"}}]}) == []
    assert folder_hazards({"matrix": {"ssl.ca.location": ["/a", "/b"]}}) == ["matrix.ssl.ca.location"]


@pytest.mark.parametrize("version", ["2.2.0\n", "２.２.０"])
def test_a_folder_s_client_version_is_checked_before_anything_is_installed(tmp_path, monkeypatch, version):
    """A run folder's spec.yaml naming a version with a trailing line break or full-width digits reached pip
    through shrink; it is refused as in an experiment file, and nothing is installed or run."""
    import harness.preflight

    folder, _, _ = make_run(tmp_path / "runs", off_lost=5)
    spec = yaml.safe_load(folder.spec_path.read_text())
    spec.update(cluster={"backend": "local", "broker": "tansu"}, workload={"messages": 100, "rate": 100})
    spec["variants"][0]["client"] = {"confluent-kafka": version}
    folder.spec_path.write_text(yaml.safe_dump(spec))
    installed = []
    monkeypatch.setattr(harness.preflight, "ensure", lambda v: installed.append(v))
    monkeypatch.setattr(cli, "_run_once", lambda *a, **k: pytest.fail("a try was run"))
    r = CliRunner().invoke(cli.main, ["shrink", str(folder.path), "--out", str(tmp_path / "tries")])
    assert r.exit_code == 2 and "is not a version" in r.output, r.output
    assert installed == []
