"""The consumer definitions (analysis/consumption.py) against the plain-Python oracle
(tests/reference.py, reference_consumption) on sinks hypothesis draws: members and their sessions
processing records of the log in any order, again, with holes and going back, processing times that
tie, final positions anywhere (or none)."""

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.analysis import consumption
from tests.reference import reference_consumption


@st.composite
def group(draw):
    lengths = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3))
    log = [(p, off, 100 * p + off) for p, n in enumerate(lengths) for off in range(0, 2 * n, 2)]  # holes
    rows, counters = [], {}
    for _ in range(draw(st.integers(0, 25))):
        p = draw(st.integers(0, len(lengths) - 1))
        off = draw(st.integers(0, 2 * lengths[p]))  # odd ones are not in the log
        member = draw(st.sampled_from(["a.0", "b.0", "b.1"]))
        n = counters.get(member, 0)
        counters[member] = n + 1
        rows.append((p, off, 100 * p + off, member, draw(st.integers(0, 1)), n, float(draw(st.integers(0, 5)))))
    positions = {p: draw(st.one_of(st.none(), st.integers(0, 2 * n + 1))) for p, n in enumerate(lengths)}
    return rows, log, positions


def tuples(frame: pd.DataFrame, columns) -> list[tuple]:
    return sorted(tuple(x.item() if hasattr(x, "item") else x for x in r) for r in frame[columns].itertuples(index=False))


# No deadline and no too_slow check: both measure wall time, which a loaded machine stretches.
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group())
def test_consumer_definitions_equal_the_reference(case):
    rows, log, positions = case
    want = reference_consumption(rows, log, positions)
    processed = pd.DataFrame(rows, columns=["partition", "offset", "value", "member", "session", "n", "processed_at"])
    got = consumption.analyze(processed, pd.DataFrame(log, columns=["partition", "offset", "value"]), positions,
                              pd.DataFrame({"event": [], "member": []}))
    for key, n in want["metrics"].items():
        assert got.metrics[key] == n, key
    for name, (schema) in consumption.TABLES.items():
        columns = [c for c, _ in schema]
        assert tuples(got.tables[name], columns) == sorted(want[name]), name


def test_the_oracle_sees_each_consumer_anomaly():
    """One of each, by hand: a broken oracle cannot agree with the code by saying nothing."""
    log = [(0, o, o) for o in range(5)]
    rows = [(0, 0, 0, "a.0", 0, 0, 1.0), (0, 2, 2, "a.0", 0, 1, 2.0),  # skips 1
            (0, 0, 0, "a.0", 0, 2, 3.0)]  # goes back 3 records: 0 again
    want = reference_consumption(rows, log, {0: 3})
    assert want["poll_skips"] == [("a.0", 0, 0, 2, 0, 1)] and want["nonmonotonic_polls"] == [("a.0", 0, 0, 0, 2, 3)]
    assert want["reprocessed"] == [(0, 0, 0, 2, "a.0,a.0")] and want["dedup_window"] == [(0, 0, 0, "a.0", "a.0", 2.0, 2)]
    assert want["skipped"] == [(0, 1, 1)] and want["unconsumed"] == [(0, 3, 3), (0, 4, 4)]
