"""Loss never passes: for every shipped experiment that runs on the embedded default, every variant that
does not allow loss fails when acknowledged records are missing from the end, or the middle, of one
partition of a complete final read, whatever else it allows, with the loss named and counted exactly.

The metrics come from the definitions themselves (anomalies.check_partition, fed in Arrow batches whose
boundaries fall inside the removed range) and the verdict from verdict.judge with the variant's own allow
list and rules, as `kafka-chaos analyze` combines them.
"""

from functools import cache
from pathlib import Path

import pyarrow as pa
import pytest

from harness import verdict
from harness.analysis import metrics
from harness.analysis.anomalies import check_partition
from harness.spec import load_spec as load

load_spec = cache(load)  # an experiment is loaded once, not once per case

EXPERIMENTS = sorted((Path(__file__).resolve().parents[2] / "experiments").rglob("*.yaml"))
SENT, GONE = 1000, 37  # values 0..999 acked at offsets 0..999 (in transactions of 10); 37 of them removed


def embedded(path: Path) -> bool:
    spec = load_spec(path)
    return spec.cluster.backend == "local" and spec.cluster.broker == "tansu"


def variants():
    for path in EXPERIMENTS:
        if embedded(path):
            spec = load_spec(path)
            for v in spec.variants:
                yield pytest.param(path, v.name, id=f"{path.stem}:{v.name}")


def delivery_log(transactional: bool) -> tuple[pa.Table, pa.Table | None]:
    value = pa.array(range(SENT), pa.int64())
    acks = pa.table({"partition": pa.array([0] * SENT, pa.int32()), "value": value,
                     "outcome": pa.array(["acked"] * SENT), "offset": value, "session": pa.array([0] * SENT, pa.int32()),
                     "txn": pa.array([v // 10 if transactional else None for v in range(SENT)], pa.int64())})
    book = pa.table({"txn": pa.array(range(SENT // 10), pa.int64()), "outcome": ["committed"] * (SENT // 10),
                     "session": pa.array([0] * (SENT // 10), pa.int32())}) if transactional else None
    return acks, book


def log_without(removed: range) -> list[pa.RecordBatch]:
    kept = [v for v in range(SENT) if v not in removed]
    table = pa.table({"partition": pa.array([0] * len(kept), pa.int32()), "offset": pa.array(kept, pa.int64()),
                      "value": pa.array(kept, pa.int64())})
    return table.to_batches(max_chunksize=100)  # batch boundaries fall inside the removed ranges


@pytest.mark.parametrize("where", ["end", "middle"])
@pytest.mark.parametrize("path, name", list(variants()))
def test_acked_records_removed_from_a_partition_fail_every_variant_that_does_not_allow_loss(path, name, where):
    spec = load_spec(path)
    variant = next(v for v in spec.variants if v.name == name)
    transactional = spec.transactional(variant)
    loss = "lost_committed" if transactional else "lost"  # the loss's one name in such a variant
    if loss in variant.allow:
        pytest.skip(f"{path.name}: {name} allows {loss} (its experiment says why)")
    removed = range(SENT - GONE, SENT) if where == "end" else range(480, 480 + GONE)
    acks, book = delivery_log(transactional)
    found = check_partition(0, [acks], log_without(removed), transactions=book, read=(0, SENT))
    assert found.metrics[loss] == GONE and found.metrics["unseen"] == 0
    # No second name for the same values (an allowance of it could otherwise hide the loss). A transaction
    # whose values are partly gone is torn as well: that is about the transaction (atomicity), not a value.
    others = {k: found.metrics[k] for k in metrics.FATAL - {"torn_transactions"} if k != loss and found.metrics.get(k)}
    assert others == {}, others
    checks = verdict.judge(found.metrics, spec.rules(name), set(variant.allow))
    failed = [(c["metric"], c["actual"]) for c in checks if c["status"] == verdict.FAIL]
    assert (loss, GONE) in failed and verdict.variant_verdict(checks) == verdict.FAIL


def test_the_embedded_experiments_are_all_checked():
    # Guards the parametrization above: a change to embedded() must not silently check nothing.
    names = {p.stem for p in EXPERIMENTS if embedded(p)}
    assert {"quickstart", "lost-acks", "connection-kills", "transactions", "producer-restart"} <= names


def test_no_shipped_experiment_allows_inconsistent_offsets():
    # The embedded broker's base offset -1 answer has its own name (base_offset_minus_one) and so has an
    # unclean election's rewritten offset (truncated_acks): allowing every inconsistent offset to cover
    # either could hide a real one.
    allowing = {path.name for path in EXPERIMENTS for v in load_spec(path).variants
                if "inconsistent_offsets" in v.allow}
    assert allowing == set()
    unclean = load_spec(next(p for p in EXPERIMENTS if p.name == "unclean-election.yaml"))
    assert all(set(v.allow) == {"lost", "truncated_acks"} for v in unclean.variants)


def test_an_offset_a_later_leader_rewrote_is_a_truncated_ack_and_allowing_it_allows_nothing_else():
    # Values 0..99 at offsets 0..99, written under leader epoch 0 up to offset 54 and 1 after (a new leader).
    # Value 50 was told offset 60 (its retry's copy, truncated; the new leader wrote value 60 there) and
    # value 20 offset 30 (the same epoch: a wrong offset, no truncation). Batches of 7 split the ranges.
    told = {v: v for v in range(100)} | {50: 60, 20: 30}
    acks = pa.table({"partition": pa.array([0] * 100, pa.int32()), "value": pa.array(range(100), pa.int64()),
                     "outcome": pa.array(["acked"] * 100), "offset": pa.array([told[v] for v in range(100)], pa.int64())})
    log = pa.table({"partition": pa.array([0] * 100, pa.int32()), "offset": pa.array(range(100), pa.int64()),
                    "value": pa.array(range(100), pa.int64()),
                    "leader_epoch": pa.array([0 if o < 55 else 1 for o in range(100)], pa.int32())})
    found = check_partition(0, [acks], log.to_batches(max_chunksize=7), read=(0, 100))
    assert found.metrics["truncated_acks"] == 1 and found.metrics["inconsistent_offsets"] == 1
    assert found.metrics["lost"] == 0
    row = found.table("truncated_acks").to_pylist()[0]
    assert (row["value"], row["offset"], row["found_value"], row["found_at"]) == (50, 60, 60, 50)
    assert "leader epoch 1 (the value's copy: epoch 0)" in row["cause"]
    checks = verdict.judge(found.metrics, {}, {"truncated_acks"})
    failed = [c["metric"] for c in checks if c["status"] == verdict.FAIL and c["metric"] in found.metrics]
    assert failed == ["inconsistent_offsets"]  # (a consumer metric this check does not compute is not judged here)
    # Without the epochs (a broker or an older folder that does not say) nothing is provably truncated.
    plain = check_partition(0, [acks], log.drop_columns(["leader_epoch"]).to_batches(max_chunksize=7), read=(0, 100))
    assert plain.metrics["truncated_acks"] == 0 and plain.metrics["inconsistent_offsets"] == 2
