"""The numpy definitions against the plain-Python oracle on logs hypothesis draws (and shrinks).

Each example draws one or more partitions: delivery outcomes, some values sent again in a second
session (a producer restart), a log made of sent values, repeats, strays (negative, never sent, not a
number) at increasing offsets with holes, acknowledged offsets that are right, wrong or absent, a batch
told -1, 0, 1, ... (the embedded broker's base offset -1), leader epochs (rising along the log, some
unknown, or none at all), whether the final read is proven complete
(and from which log start offset), and the size of the batches the log is fed in.
"""

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.analysis import metrics
from harness.analysis.anomalies import NO_OFFSET, TABLES, check_partition
from tests.reference import reference

OUTCOMES = ("acked", "acked", "rejected", "unknown")


@st.composite
def partition(draw, p):
    n = draw(st.integers(0, 12))
    outcomes = draw(st.lists(st.sampled_from(OUTCOMES), min_size=n, max_size=n))
    values = draw(st.lists(st.one_of(st.integers(0, n + 1), st.none(), st.just(-1), st.just(2**40)), max_size=30))
    steps = draw(st.lists(st.integers(1, 2), min_size=len(values), max_size=len(values)))
    offsets = [sum(steps[: i + 1]) - 1 for i in range(len(values))]
    again = draw(st.lists(st.sampled_from(OUTCOMES + (None, None)), min_size=n, max_size=n))  # session 1

    def told(v, outcome):
        if outcome != "acked":
            return None
        where = [o for o, x in zip(offsets, values) if x == v]
        choice = draw(st.sampled_from(["right", "right", "wrong", "untold"]))
        if choice == "right" and where:
            return draw(st.sampled_from(where))
        if choice == "untold":
            return NO_OFFSET
        return draw(st.integers(-1, len(values) + 2))

    acks = [(p, v, outcome, told(v, outcome), 0) for v, outcome in enumerate(outcomes)]
    acks += [(p, v, outcome, told(v, outcome), 1) for v, outcome in enumerate(again) if outcome is not None]
    if n and draw(st.booleans()):  # a batch acknowledged with base offset -1: told -1, 0, 1, ...
        first = draw(st.integers(0, n - 1))
        batch = [i for i, a in enumerate(acks) if a[4] == 0 and first <= a[1] and a[2] == "acked"]
        for k, i in enumerate(batch[:draw(st.integers(1, 4))]):
            acks[i] = acks[i][:3] + (k - 1, 0)
    read = draw(st.one_of(st.none(), st.tuples(st.integers(0, 3), st.just(offsets[-1] + 1 if offsets else 0))))
    # Leader epochs never decrease along a log; some records' unknown (null), or the column absent (None).
    rises = draw(st.one_of(st.none(), st.lists(st.sampled_from([0, 0, 1, None]), min_size=len(values),
                                                max_size=len(values))))
    epochs = [None] * len(values) if rises is None else \
        [None if r is None else sum(x or 0 for x in rises[: i + 1]) for i, r in enumerate(rises)]
    return [(p, o, v, e) for o, v, e in zip(offsets, values, epochs)], acks, draw(st.integers(1, 8)), read


@st.composite
def runs(draw):
    return [draw(partition(p)) for p in range(draw(st.integers(1, 3)))]


def _tables(p, log_rows, ack_rows, batch):
    log = pa.table({"partition": pa.array([p] * len(log_rows), pa.int32()),
                    "offset": pa.array([r[1] for r in log_rows], pa.int64()),
                    "value": pa.array([r[2] for r in log_rows], pa.int64())})
    if any(r[3] is not None for r in log_rows):
        log = log.append_column("leader_epoch", pa.array([r[3] for r in log_rows], pa.int32()))
    acks = pa.table({"partition": pa.array([p] * len(ack_rows), pa.int32()),
                     "value": pa.array([r[1] for r in ack_rows], pa.int64()),
                     "outcome": pa.array([r[2] for r in ack_rows], pa.string()),
                     "offset": pa.array([r[3] for r in ack_rows], pa.int64()),
                     "session": pa.array([r[4] for r in ack_rows], pa.int32())})
    return [acks], log.to_batches(max_chunksize=batch)


# No deadline and no too_slow check: both measure wall time, which a loaded machine stretches.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_numpy_definitions_equal_the_reference(case):
    log_rows = [r for lg, _, _, _ in case for r in lg]
    ack_rows = [r for _, ak, _, _ in case for r in ak]
    reads = {p: read for p, (_, _, _, read) in enumerate(case) if read is not None}
    want = reference(log_rows, ack_rows, reads)
    found = [check_partition(p, *_tables(p, lg, ak, batch), read=read) for p, (lg, ak, batch, read) in enumerate(case)]
    got = metrics.combine_rows([f.metrics for f in found])
    for key in (m.key for m in metrics.METRICS if not m.planned):  # the planned ones are not the log's
        assert got[key] == want["metrics"].get(key, 0), key
    for table in ("jump_back_runs", "duplicates", "lost", "unseen", "deleted_before_read", "gaps",
                  "inconsistent_offsets", "base_offset_minus_one", "truncated_acks", "nonmonotonic_sends",
                  "unexpected"):
        rows = [tuple(r.values()) for f in found for r in f.table(table).to_pylist()]
        assert sorted(rows, key=repr) == want.get(table, []), table
    rejected = [(r["partition"], r["value"], r["offset"]) for f in found for r in f.table("rejected_visible").to_pylist()]
    assert sorted(rejected, key=repr) == want.get("rejected_visible", [])
    assert set(TABLES) >= {"partitions"}
