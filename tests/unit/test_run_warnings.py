"""What a run says before it starts, so its numbers are read right (Tansu's known wrong answers), and a workload it
refuses to judge."""

import yaml

from harness.schedule import plan
from harness.run import warnings_for
from harness.spec import load_spec


def spec(tmp_path, cluster, variants, faults=()):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "w", "cluster": cluster, "workload": {"messages": 100, "rate": 100},
                                    "variants": variants, "faults": list(faults)}))
    return load_spec(path)


TANSU = {"backend": "local", "broker": "tansu", "brokers": 1}
KAFKA = {"backend": "local", "broker": "kafka", "brokers": 1}
VARIANTS = [{"name": "plain", "producer": {"acks": "all"}},
            {"name": "tx", "producer": {"transactional.id": "w-tx"}},
            {"name": "kp-tx", "client": {"kafka-python": "3.0.12"}, "producer": {"transactional_id": "w-kp"}}]


def test_transactions_on_tansu_are_said_to_show_their_aborted_records(tmp_path):
    s = spec(tmp_path, TANSU, VARIANTS)
    [said] = warnings_for(s, plan(s, 1))
    assert said.startswith("tx, kp-tx: transactions on Tansu") and "aborted_reads" in said


def test_nothing_is_said_on_kafka_or_without_transactions(tmp_path):
    s = spec(tmp_path, KAFKA, VARIANTS)
    assert warnings_for(s, plan(s, 1)) == []
    s = spec(tmp_path, TANSU, VARIANTS[:1])
    assert warnings_for(s, plan(s, 1)) == []


def test_a_producer_stopped_by_something_else_than_the_run_is_never_judged():
    from harness.run import stopped_by_another
    from harness.workload.producer import ProduceResult

    cut = ProduceResult(5000, 4000, 0, 1000, 990.0, interrupted=True)
    assert stopped_by_another(cut, stopping=False, planned=100_000) == (
        "the producer stopped after 5,000 of 100,000 sends though the run did not ask it to (its process was "
        "signalled from outside the run?); see its client log")
    assert stopped_by_another(cut, stopping=True, planned=100_000) == ""  # the run asked (Ctrl-C, a dead broker)
    failed = ProduceResult(5000, 4000, 0, 1000, 990.0, interrupted=True, error="the client hangs: ...")
    assert stopped_by_another(failed, stopping=False, planned=100_000) == ""  # an error says why: judged as such
    whole = ProduceResult(100_000, 100_000, 0, 0, 9.0, interrupted=False)
    assert stopped_by_another(whole, stopping=False, planned=100_000) == ""
    assert stopped_by_another(None, stopping=False, planned=100_000) == ""
