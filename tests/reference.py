"""The anomaly definitions as plain Python loops: slow, small and obviously right (test oracle)."""

from collections import defaultdict


def reference(log_rows, ack_rows):
    """log_rows: (partition, offset, value); ack_rows: (partition, value, outcome) -> dict of results."""
    by_part = defaultdict(list)
    for p, off, v in log_rows:
        by_part[p].append((off, v))
    outcome = {(p, v): o for p, v, o in ack_rows}
    runs, dups, metrics = [], [], defaultdict(int)
    read = set()
    for p, recs in by_part.items():
        highest, seen, cur = None, {}, None
        for off, v in sorted(recs):
            metrics["received"] += 1
            read.add((p, v))
            jump = highest is not None and v <= highest
            if jump:
                repeat = v in seen
                if repeat:
                    dups.append((p, v, off, seen[v]))
                    metrics["duplicates"] += 1
                else:
                    seen[v] = off
                    metrics["reorders"] += 1
                if cur is None:
                    cur = {"p": p, "first_offset": off, "first_value": v, "highest_before": highest, "length": 0,
                           "repeats": 0}
                cur["last_offset"] = off
                cur["length"] += 1
                cur["repeats"] += repeat
            else:
                seen[v] = off
                if cur is not None:
                    runs.append(cur)
                    cur = None
            highest = v if highest is None else max(highest, v)
        if cur is not None:
            runs.append(cur)
    run_rows = set()
    for r in runs:
        kind = "duplicate" if r["repeats"] == r["length"] else "reorder" if r["repeats"] == 0 else "mixed"
        run_rows.add((r["p"], r["first_offset"], r["last_offset"], r["first_value"], r["highest_before"],
                      r["highest_before"] - r["first_value"] + 1, r["length"], kind))
    lost = {(p, v) for (p, v), o in outcome.items() if o == "acked" and (p, v) not in read}
    for o in ("acked", "rejected", "unknown"):
        metrics[o] = sum(1 for x in outcome.values() if x == o)
    metrics["sent"] = len(outcome)
    metrics["unique"] = metrics["received"] - metrics["duplicates"]
    metrics["jump_back_runs"] = len(runs)
    metrics["max_jump_back"] = max((r[5] for r in run_rows), default=0)
    metrics["lost"] = len(lost)
    metrics["missing"] = sum(1 for (p, v), o in outcome.items() if o != "acked" and (p, v) not in read)
    metrics["received_unacked"] = sum(1 for (p, v), o in outcome.items() if o != "acked" and (p, v) in read)
    metrics["unexpected"] = sum(1 for k in read if k not in outcome)
    gaps = set()
    for p in {p for p, _ in outcome}:
        absent = sorted(v for (q, v) in outcome if q == p and (q, v) not in read)
        start = None
        for i, v in enumerate(absent):
            if start is None:
                start = v
            if i + 1 == len(absent) or absent[i + 1] != v + 1:
                n_lost = sum(1 for x in range(start, v + 1) if outcome[(p, x)] == "acked")
                gaps.add((p, start, v, v - start + 1, n_lost, "lost" if n_lost else "missing"))
                start = None
    return {"metrics": dict(metrics), "runs": run_rows, "duplicates": set(dups), "lost": lost, "gaps": gaps}
