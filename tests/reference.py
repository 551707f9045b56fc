"""The anomaly definitions as plain Python loops: slow, small and obviously right (the test oracle).

Written straight from DESIGN.md's Words, independently of harness/analysis/anomalies.py.
"""

from collections import defaultdict

NO_OFFSET = -1001  # the client was told no offset (acks=0)


BEST = {"acked": 3, "unknown": 2, "rejected": 1}  # a value's outcome is its best send's


def reference(log_rows, ack_rows, reads=None):
    """log_rows: (partition, offset, value or None); ack_rows: (partition, value, outcome, offset or None[,
    session]): a value may be sent once per session. reads: {partition: (log start, end)} of a complete
    final read; a partition not in it was not proven read to its end.

    Returns {"metrics": {...}, table name: sorted list of row tuples without the partition... with it}.
    """
    logs, all_sends = defaultdict(list), defaultdict(lambda: defaultdict(list))
    for p, off, v in log_rows:
        logs[p].append((off, v))
    for row in ack_rows:
        p, v, outcome, off = row[:4]
        all_sends[p][v].append((outcome, NO_OFFSET if off is None else off, row[4] if len(row) > 4 else 0))
    sends = defaultdict(dict)  # p -> v -> (best outcome, offset of its last acked send)
    for p, by_value in all_sends.items():
        for v, ss in by_value.items():
            best = max((s[0] for s in ss), key=BEST.get)
            acked_offsets = [s[1] for s in ss if s[0] == "acked"]
            sends[p][v] = (best, acked_offsets[-1] if acked_offsets else NO_OFFSET)
    m = defaultdict(int)
    t = defaultdict(list)
    for p in sorted(set(logs) | set(sends) | set(reads or {})):
        records = sorted(logs[p])
        sent = sends[p]
        highest, first, run = None, {}, None
        for off, v in records:
            if v is None or v not in sent:
                m["unexpected"] += 1
                t["unexpected"].append((p, off, v))
                continue
            m["received"] += 1
            if highest is not None and v <= highest:  # a jump-back
                repeat = v in first
                if repeat:
                    m["duplicates"] += 1
                    t["duplicates"].append((p, v, off, first[v]))
                else:
                    first[v] = off
                    m["reorders"] += 1
                if run is None:
                    run = {"first_offset": off, "first_value": v, "highest_before": highest, "length": 0, "repeats": 0}
                run["last_offset"], run["length"], run["repeats"] = off, run["length"] + 1, run["repeats"] + repeat
            else:
                first[v] = off
                if run is not None:
                    t["jump_back_runs"].append(_run(p, run))
                    run = None
            highest = v if highest is None else max(highest, v)
        if run is not None:
            t["jump_back_runs"].append(_run(p, run))

        by_offset = dict(records)
        last_offset = records[-1][0] if records else None
        read = (reads or {}).get(p)
        m["deleted_before_read"] += read[0] if read else 0
        told = sorted((session, v, off) for v in sent for outcome, off, session in all_sends[p][v]
                      if outcome == "acked" and off != NO_OFFSET)  # send order: by session, then value
        minus_one = set()  # (session, value) of sends in a batch acknowledged with base offset -1
        for i, (session, v, off) in enumerate(told):
            prev = told[i - 1] if i else None
            in_batch = prev is not None and prev[0] == session and off == prev[2] + 1 and \
                (prev[0], prev[1]) in minus_one
            if off == -1 or in_batch:
                minus_one.add((session, v))
        gone = {}  # acked values absent from the log -> lost / unseen / deleted
        for v in sorted(sent):
            outcome, off = sent[v]
            m["sent"] += 1
            m[outcome] += 1
            present = v in first
            if outcome == "acked" and not present:
                if read is None:
                    gone[v] = "lost" if highest is not None and v < highest else "unseen"
                else:
                    gone[v] = "deleted_before_read" if 0 <= off < read[0] else "lost"
                if gone[v] != "deleted_before_read":  # that metric counts the records deleted (the log start)
                    m[gone[v]] += 1
                t[gone[v]].append((p, v, off))
            for send_outcome, off, session in all_sends[p][v]:  # every acked send's offset is checked
                if send_outcome == "acked" and off != NO_OFFSET and present:  # absent: lost, nothing else
                    cause = None
                    if off < 0:
                        cause = "negative offset (the client was told none)"
                    elif off not in by_offset:
                        cause = ("beyond the end of the log" if last_offset is None or off > last_offset
                                 else "no record at this offset")
                    elif by_offset[off] is None:
                        cause = "holds a record that is not a number"
                    elif by_offset[off] != v:
                        cause = "holds another value"
                    if cause:
                        name = "base_offset_minus_one" if (session, v) in minus_one else "inconsistent_offsets"
                        m[name] += 1
                        found = by_offset.get(off) if off >= 0 else None
                        t[name].append((p, v, off, found, cause, first[v]))
            if outcome == "acked":
                continue
            if not present:
                m["missing"] += 1
            elif outcome == "unknown":
                m["received_unacked"] += 1
            else:
                m["rejected_visible"] += 1
                t["rejected_visible"].append((p, v, first[v]))
        told = [x for x in told if (x[0], x[1]) not in minus_one]
        for (ps, pv, po), (s, v, off) in zip(told, told[1:]):
            if s == ps and off < po:
                m["nonmonotonic_sends"] += 1
                t["nonmonotonic_sends"].append((p, v, off, pv, po))
        absent = [v for v in sorted(sent) if v not in first]
        start = None
        for i, v in enumerate(absent):
            start = v if start is None else start
            if i + 1 == len(absent) or absent[i + 1] != v + 1:
                kinds = [gone.get(x) for x in range(start, v + 1)]
                n_lost, n_unseen = kinds.count("lost"), kinds.count("unseen")
                kind = ("lost" if n_lost else "unseen" if n_unseen else "deleted"
                        if "deleted_before_read" in kinds else "missing")
                t["gaps"].append((p, start, v, v - start + 1, n_lost, n_unseen, kind))
                start = None
    runs = t["jump_back_runs"]
    m["unique"] = m["received"] - m["duplicates"]
    m["jump_back_runs"] = len(runs)
    m["max_jump_back"] = max((r[5] for r in runs), default=0)
    return {"metrics": dict(m), **{k: sorted(v, key=repr) for k, v in t.items()}}


def _run(p, r):
    kind = "duplicate" if r["repeats"] == r["length"] else "reorder" if r["repeats"] == 0 else "mixed"
    return (p, r["first_offset"], r["last_offset"], r["first_value"], r["highest_before"],
            r["highest_before"] - r["first_value"], r["length"], kind)
