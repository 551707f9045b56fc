"""The consumer definitions (analysis/consumption.py) on planted sinks, every count worked out by hand."""

import pandas as pd
import pytest

from harness.analysis import consumption as c

COLUMNS = ["partition", "offset", "value", "member", "session", "n", "processed_at"]


def log_of(lengths: dict[int, int]) -> pd.DataFrame:
    """A log of lengths[p] records in partition p, offsets 0.., value = 100 * partition + offset."""
    rows = [(p, o, 100 * p + o) for p, n in lengths.items() for o in range(n)]
    return pd.DataFrame(rows, columns=["partition", "offset", "value"])


def sink(rows) -> pd.DataFrame:
    """rows: (partition, offset, member, session, processed_at); n counts per member in the given order."""
    counters: dict[str, int] = {}
    out = []
    for p, o, member, session, at in rows:
        n = counters.get(member, 0)
        counters[member] = n + 1
        out.append((p, o, 100 * p + o, member, session, n, float(at)))
    return pd.DataFrame(out, columns=COLUMNS)


# The planted story. Partition 0 has offsets 0-9, partition 1 offsets 0-4.
#   a.0 processes p0 0-3 (t 1000-1003) and p1 0-1 (t 1004-1005), then dies.
#   b.0 takes p0 over from a's last commit (offset 2): 2, 3, 4, 5, then 7, 8, 9 (jumps over 6).
#   c.0 takes p1: 2, then 1 again in the same session (goes back).
# Final positions: p0 10 (past 6: skipped), p1 3 (3 and 4 never reached: unconsumed).
PLANTED = sink([
    (0, 0, "a.0", 1, 1000), (0, 1, "a.0", 1, 1001), (0, 2, "a.0", 1, 1002), (0, 3, "a.0", 1, 1003),
    (1, 0, "a.0", 1, 1004), (1, 1, "a.0", 1, 1005),
    (0, 2, "b.0", 1, 1010), (0, 3, "b.0", 1, 1011), (0, 4, "b.0", 1, 1012), (0, 5, "b.0", 1, 1013),
    (0, 7, "b.0", 1, 1014), (0, 8, "b.0", 1, 1015), (0, 9, "b.0", 1, 1016),
    (1, 2, "c.0", 3, 1020), (1, 1, "c.0", 3, 1021),
])
LOG = log_of({0: 10, 1: 5})
POSITIONS = {0: 10, 1: 3}
# c.0's watchdog said twice that a call of its client hangs: one member hung.
EVENTS = pd.DataFrame({"event": ["assign", "assign", "revoke", "assign", "start", "hung", "hung"],
                       "member": ["a.0", "b.0", "a.0", "c.0", "c.0", "c.0", "c.0"]})


def test_planted_story_counts():
    found = c.analyze(PLANTED, LOG, POSITIONS, EVENTS)
    assert found.metrics == {"reprocessed": 3, "skipped": 1, "unconsumed": 2, "poll_skips": 1,
                             "nonmonotonic_polls": 1, "processed": 15, "rebalances": 3,
                             "client_hangs": 1}
    assert found.partitions == {
        0: {"reprocessed": 2, "skipped": 1, "unconsumed": 0, "poll_skips": 1, "nonmonotonic_polls": 0, "processed": 11},
        1: {"reprocessed": 1, "skipped": 0, "unconsumed": 2, "poll_skips": 0, "nonmonotonic_polls": 1, "processed": 4},
    }


def test_reprocessed_lists_each_record_once_with_its_members_in_processing_order():
    again = c.reprocessed(PLANTED)
    assert again.to_dict("records") == [
        {"partition": 0, "offset": 2, "value": 2, "times": 2, "members": "a.0,b.0"},
        {"partition": 0, "offset": 3, "value": 3, "times": 2, "members": "a.0,b.0"},
        {"partition": 1, "offset": 1, "value": 101, "times": 2, "members": "a.0,c.0"},
    ]


def test_skipped_is_below_the_final_position_and_unconsumed_at_or_beyond_it():
    skipped, unconsumed = c.not_processed(LOG, PLANTED, POSITIONS)
    assert skipped[["partition", "offset"]].values.tolist() == [[0, 6]]
    assert unconsumed[["partition", "offset"]].values.tolist() == [[1, 3], [1, 4]]
    # A partition with no position (the group never committed there): nothing is past anything.
    skipped, unconsumed = c.not_processed(LOG, PLANTED, {1: 3})
    assert skipped.empty and unconsumed[["partition", "offset"]].values.tolist() == [[0, 6], [1, 3], [1, 4]]


def test_poll_skip_and_nonmonotonic_poll_within_a_member_session():
    skips, backs = c.polls(PLANTED, LOG)
    assert skips.to_dict("records") == [{"member": "b.0", "session": 1, "partition": 0, "offset": 7,
                                         "previous_offset": 5, "records": 1}]
    # 2 then 1: two places back (1 would be the same record twice).
    assert backs.to_dict("records") == [{"member": "c.0", "session": 3, "partition": 1, "offset": 1,
                                         "previous_offset": 2, "records": 2}]


def test_a_new_session_or_member_may_start_anywhere():
    rows = sink([(0, 5, "a.0", 1, 1), (0, 0, "a.0", 2, 2), (0, 9, "b.0", 1, 3), (0, 1, "a.0", 2, 4)])
    skips, backs = c.polls(rows, log_of({0: 10}))
    assert skips.empty and backs.empty


def test_successor_is_the_next_record_in_the_log_not_the_next_offset():
    # The log has gaps (offsets 0, 2, 4: e.g. transaction markers): 0 -> 2 -> 4 is contiguous, 0 -> 4 a skip.
    log = pd.DataFrame({"partition": [0, 0, 0], "offset": [0, 2, 4], "value": [0, 1, 2]})
    skips, _ = c.polls(sink([(0, 0, "a", 1, 1), (0, 2, "a", 1, 2), (0, 4, "a", 1, 3)]), log)
    assert skips.empty
    skips, _ = c.polls(sink([(0, 0, "a", 1, 1), (0, 4, "a", 1, 2)]), log)
    assert skips[["offset", "previous_offset", "records"]].values.tolist() == [[4, 0, 1]]


def test_same_record_twice_in_a_session_is_a_nonmonotonic_poll_of_one():
    _, backs = c.polls(sink([(0, 3, "a", 1, 1), (0, 3, "a", 1, 2)]), log_of({0: 5}))
    assert backs[["offset", "previous_offset", "records"]].values.tolist() == [[3, 3, 1]]


def test_dedup_window_distances_in_ms_and_records():
    w = c.dedup_window(PLANTED)
    # Processing order: a's six (positions 0-5), b's seven (6-12), c's two (13-14).
    assert w[["partition", "offset", "first_member", "member", "ms", "records"]].values.tolist() == [
        [0, 2, "a.0", "b.0", 8.0, 4],  # 1010 - 1002; position 6 - 2
        [0, 3, "a.0", "b.0", 8.0, 4],  # 1011 - 1003; 7 - 3
        [1, 1, "a.0", "c.0", 16.0, 9],  # 1021 - 1005; 14 - 5
    ]
    found = c.analyze(PLANTED, LOG, POSITIONS, EVENTS)
    # Nearest rank over [8, 8, 16]: p50 -> the 2nd (ceil(1.5)), p99 -> the 3rd (ceil(2.97)), p100 -> the 3rd.
    assert found.figures == {"dedup_window_ms": {"p50": 8, "p99": 16, "p100": 16, "count": 3},
                             "dedup_window_records": {"p50": 4, "p99": 9, "p100": 9, "count": 3}}


def test_a_record_processed_three_times_has_two_repeats_measured_from_the_first():
    rows = sink([(0, 0, "a", 1, 100), (0, 1, "a", 1, 110), (0, 0, "b", 1, 130), (0, 0, "c", 1, 170)])
    w = c.dedup_window(rows)
    assert w[["member", "ms", "records"]].values.tolist() == [["b", 30.0, 2], ["c", 70.0, 3]]
    again = c.reprocessed(rows)
    assert again[["offset", "times", "members"]].values.tolist() == [[0, 3, "a,b,c"]]


def test_processing_order_breaks_time_ties_by_member_then_its_counter():
    rows = sink([(0, 0, "b", 1, 5), (0, 1, "a", 1, 5), (0, 2, "a", 1, 5)])
    order = c.in_processing_order(rows)
    assert order[["member", "offset", "position"]].values.tolist() == [["a", 1, 0], ["a", 2, 1], ["b", 0, 2]]


@pytest.mark.parametrize("distances, expected", [
    (list(range(1, 101)), (50, 99, 100)),   # ceil(50) -> 50th, ceil(99) -> 99th, the 100th
    (list(range(1, 201)), (100, 198, 200)),  # ceil(100) -> 100th, ceil(198) -> 198th
    ([7], (7, 7, 7)),
    ([5, 1, 3, 2, 4], (3, 5, 5)),            # sorted 1..5: ceil(2.5) -> 3rd, ceil(4.95) -> 5th
])
def test_window_catches_the_given_share_by_nearest_rank(distances, expected):
    assert tuple(c.window(distances, q) for q in (50, 99, 100)) == expected
    caught = [sum(d <= c.window(distances, q) for d in distances) / len(distances) for q in (50, 99, 100)]
    assert caught[0] >= 0.5 and caught[1] >= 0.99 and caught[2] == 1.0


def test_no_repeats_no_window():
    rows = sink([(0, o, "a", 1, o) for o in range(5)])
    found = c.analyze(rows, log_of({0: 5}), {0: 5}, pd.DataFrame({"event": []}))
    assert c.window([], 50) is None
    assert found.figures == {"dedup_window_ms": None, "dedup_window_records": None}
    assert found.metrics == {"reprocessed": 0, "skipped": 0, "unconsumed": 0, "poll_skips": 0,
                             "nonmonotonic_polls": 0, "processed": 5, "rebalances": 0,
                             "client_hangs": 0}


def test_window_in_ms_rounds_up_to_whole_ms():
    assert c.window_figure([0.2, 1.5, 2.01], whole=False) == {"p50": 2, "p99": 3, "p100": 3, "count": 3}


def test_tables_convert_with_their_declared_types_nulls_kept():
    rows = sink([(0, 0, "a", 1, 1), (0, 0, "b", 1, 2)])
    rows = rows.assign(value=None)  # not a workload value
    found = c.analyze(rows, log_of({0: 1}), {0: 1}, pd.DataFrame({"event": []}))
    for name, frame in found.tables.items():
        table = c.to_arrow(name, frame)
        assert [f.name for f in table.schema] == [n for n, _ in c.TABLES[name]]
    assert c.to_arrow("reprocessed", found.tables["reprocessed"]).column("value").to_pylist() == [None]


def test_a_group_that_processed_nothing_leaves_every_record_unconsumed():
    nothing = sink([])
    found = c.analyze(nothing, LOG, {}, EVENTS.iloc[0:0])
    assert found.metrics == {"reprocessed": 0, "skipped": 0, "unconsumed": 15, "poll_skips": 0,
                             "nonmonotonic_polls": 0, "processed": 0, "rebalances": 0,
                             "client_hangs": 0}
