"""The transactional definitions (aborted reads, zombie writes, lost committed, torn transactions) against
the plain-Python oracle (tests/reference.py, reference_transactional) on logs hypothesis draws.

Each example draws partitions whose sends belong to transactions of one transactions log: each
transaction committed, aborted or undecided, some fenced (their instance was replaced); each send
acked, rejected or unknown by its own report, some told the offset of their record, some another; some
values sent again in a second session, in another transaction; a read_committed log of sent values,
repeats and strays at increasing offsets.
"""

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.analysis import metrics
from harness.analysis.anomalies import NO_OFFSET, check_partition, torn_transactions
from tests.reference import reference_transactional

OUTCOMES = ("acked", "acked", "rejected", "unknown")


@st.composite
def book(draw):
    n = draw(st.integers(1, 5))
    return {t: (draw(st.sampled_from(["committed", "committed", "aborted", "unknown"])),
                draw(st.sampled_from([None, None, "fenced", "restart"])), draw(st.integers(0, 1)))
            for t in range(n)}


@st.composite
def partition(draw, p, txns):
    n = draw(st.integers(0, 10))
    values = draw(st.lists(st.one_of(st.integers(0, n), st.none(), st.just(2**40)), max_size=25))
    steps = draw(st.lists(st.integers(1, 2), min_size=len(values), max_size=len(values)))
    offsets = [sum(steps[: i + 1]) - 1 for i in range(len(values))]

    def told(v, outcome):
        if outcome != "acked":
            return None
        where = [o for o, x in zip(offsets, values) if x == v]
        choice = draw(st.sampled_from(["right", "right", "wrong", "untold"]))
        if choice == "right" and where:
            return draw(st.sampled_from(where))
        return NO_OFFSET if choice == "untold" else draw(st.integers(0, len(values) + 1))

    acks = []
    for session in (0, 1):
        for v in range(n):
            if session and not draw(st.booleans()):
                continue  # not sent again
            outcome = draw(st.sampled_from(OUTCOMES))
            acks.append((p, v, outcome, told(v, outcome), session, draw(st.sampled_from(txns))))
    read = draw(st.one_of(st.none(), st.just((0, offsets[-1] + 1 if offsets else 0))))
    return [(p, o, v) for o, v in zip(offsets, values)], acks, draw(st.integers(1, 6)), read


@st.composite
def runs(draw):
    b = draw(book())
    return b, [draw(partition(p, sorted(b))) for p in range(draw(st.integers(1, 3)))]


def _book_table(b):
    return pa.table({"txn": pa.array(list(b), pa.int64()), "session": pa.array([x[2] for x in b.values()], pa.int32()),
                     "outcome": pa.array([x[0] for x in b.values()], pa.string()),
                     "cause": pa.array([x[1] for x in b.values()], pa.string())})


def _tables(p, log_rows, ack_rows, batch):
    log = pa.table({"partition": pa.array([p] * len(log_rows), pa.int32()),
                    "offset": pa.array([r[1] for r in log_rows], pa.int64()),
                    "value": pa.array([r[2] for r in log_rows], pa.int64())})
    acks = pa.table({"partition": pa.array([p] * len(ack_rows), pa.int32()),
                     "value": pa.array([r[1] for r in ack_rows], pa.int64()),
                     "outcome": pa.array([r[2] for r in ack_rows], pa.string()),
                     "offset": pa.array([r[3] for r in ack_rows], pa.int64()),
                     "session": pa.array([r[4] for r in ack_rows], pa.int32()),
                     "txn": pa.array([r[5] for r in ack_rows], pa.int64())})
    return [acks], log.to_batches(max_chunksize=batch)


def rows(found, table):
    return sorted((tuple(r.values()) for f in found for r in f.table(table).to_pylist()), key=repr)


# No deadline and no too_slow check: both measure wall time, which a loaded machine stretches.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_transactional_definitions_equal_the_reference(case):
    b, parts = case
    log_rows = [r for lg, _, _, _ in parts for r in lg]
    ack_rows = [r for _, ak, _, _ in parts for r in ak]
    reads = {p: read for p, (_, _, _, read) in enumerate(parts) if read is not None}
    want = reference_transactional(log_rows, ack_rows, b, reads)
    found = [check_partition(p, *_tables(p, lg, ak, batch), transactions=_book_table(b), read=read)
             for p, (lg, ak, batch, read) in enumerate(parts)]
    got = metrics.combine_rows([f.metrics for f in found])
    for key in (m.key for m in metrics.METRICS if not m.planned):  # the planned ones are not the log's
        assert got[key] == want["metrics"].get(key, 0), key
    for table in ("duplicates", "lost", "unseen", "gaps", "inconsistent_offsets", "unexpected", "aborted_reads",
                  "zombie_writes_visible", "lost_committed"):
        assert rows(found, table) == want.get(table, []), table
    assert sorted(rows(found, "transaction_parts")) == want["transaction_parts"]
    parts_table = pa.concat_tables([f.table("transaction_parts") for f in found])
    _, torn = torn_transactions(parts_table, _book_table(b))
    assert sorted(tuple(r.values()) for r in torn.to_pylist()) == want["torn_across"]


def test_the_oracle_sees_each_transactional_anomaly():
    """The oracle itself on a hand-made log: one of each, so a broken oracle cannot agree by saying nothing."""
    b = {0: ("committed", None, 0), 1: ("aborted", None, 0), 2: ("unknown", "fenced", 0), 3: ("committed", None, 1)}
    acks = [(0, 0, "acked", 0, 0, 0), (0, 1, "acked", 1, 0, 0),  # txn 0: 0 read, 1 not: torn, 1 lost_committed
            (0, 2, "acked", 2, 0, 1),  # aborted, read: an aborted read
            (0, 3, "acked", 3, 0, 2),  # fenced, read: a zombie write
            (0, 4, "acked", None, 1, 3)]  # committed, read
    log = [(0, 0, 0), (0, 2, 2), (0, 3, 3), (0, 4, 4)]
    want = reference_transactional(log, acks, b, {0: (0, 5)})
    assert want["aborted_reads"] == [(0, 2, 2, 1)]
    assert want["zombie_writes_visible"] == [(0, 3, 3, 2, 0)]
    assert want["lost_committed"] == [(0, 1, 0, 1)]
    assert want["metrics"]["torn_transactions"] == 1 and want["metrics"].get("lost", 0) == 0
