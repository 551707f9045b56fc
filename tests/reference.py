"""The anomaly definitions as plain Python loops: slow, small and obviously right (the test oracle).

Written straight from the README's Words, independently of harness/analysis/anomalies.py.
"""

from collections import defaultdict

NO_OFFSET = -1001  # the client was told no offset (acks=0)


BEST = {"acked": 3, "unknown": 2, "rejected": 1}  # a value's outcome is its best send's


def reference(log_rows, ack_rows, reads=None, owned=frozenset(), committed=frozenset()):
    """log_rows: (partition, offset, value or None[, leader epoch or None]); ack_rows: (partition, value, outcome, offset or None[,
    session]): a value may be sent once per session. reads: {partition: (log start, end)} of a complete
    final read; a partition not in it was not proven read to its end. owned: (partition, value) of values
    that belong to a transaction: an absent one is lost_committed or nothing (reference_transactional),
    never lost; committed: those of committed transactions, unseen when absent beyond what a read not proven
    complete reached (an open transaction may hide them).

    Returns {"metrics": {...}, table name: sorted list of row tuples without the partition... with it}.
    """
    logs, all_sends = defaultdict(list), defaultdict(lambda: defaultdict(list))
    epoch_at = {}  # (partition, offset) -> the record's leader epoch, where known
    for p, off, v, *epoch in log_rows:
        logs[p].append((off, v))
        if epoch and epoch[0] is not None and epoch[0] >= 0:
            epoch_at[p, off] = epoch[0]
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
        # Batches acknowledged with base offset -1: a send told -1 and the sends of its session right after it
        # told 0, 1, ... A send told -1 alone was told no offset (librdkafka's implicit ack): never checked.
        batches, batch = [], None
        for i, (session, v, off) in enumerate(told):
            prev = told[i - 1] if i else None
            if off == -1:
                batch = [(session, v)]
                batches.append(batch)
            elif batch is not None and prev[0] == session and off == prev[2] + 1:
                batch.append((session, v))
            else:
                batch = None
        minus_one = {s for b in batches if len(b) > 1 for s in b}
        untold = {s for b in batches if len(b) == 1 for s in b}
        told = [x for x in told if (x[0], x[1]) not in untold]
        gone = {}  # acked values absent from the log -> lost / unseen / deleted
        for v in sorted(sent):
            outcome, off = sent[v]
            m["sent"] += 1
            m[outcome] += 1
            present = v in first
            hidden = read is None and (p, v) in committed and not (highest is not None and v < highest)
            if outcome == "acked" and not present and ((p, v) not in owned or hidden):
                if read is None:
                    gone[v] = "lost" if highest is not None and v < highest else "unseen"
                else:
                    gone[v] = "deleted_before_read" if 0 <= off < read[0] else "lost"
                if gone[v] != "deleted_before_read":  # that metric counts the records deleted (the log start)
                    m[gone[v]] += 1
                t[gone[v]].append((p, v, off))
            for send_outcome, off, session in all_sends[p][v]:  # every acked send's offset is checked
                checked = send_outcome == "acked" and off != NO_OFFSET and (session, v) not in untold
                if checked and present:  # absent: lost, nothing else
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
                        later, copy = epoch_at.get((p, off)), epoch_at.get((p, first[v]))
                        if name == "inconsistent_offsets" and later is not None and copy is not None and later > copy:
                            name = "truncated_acks"  # a later leader rewrote the acked offset
                            cause += f" of leader epoch {later} (the value's copy: epoch {copy})"
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


# -- transactional variants ----------------------------------------------------------------------
RANK = {"fenced": 1, "aborted": 2, "unknown": 3, "committed": 4}  # a value belongs to its best send's


def reference_transactional(log_rows, ack_rows, book, reads=None):
    """ack_rows: (partition, value, outcome, offset or None, session, txn or None); book: {txn: (outcome,
    cause, session)} (the transactions log; cause "fenced": its instance was fenced by a successor).

    A send in a committed transaction is acked (its offset known only if its own report said so); in any
    other transaction it is unknown. A refused send (rejected) stays rejected and belongs to no transaction.
    A record is its send's when an acked send of a transaction that did not commit was told its offset and
    value; else, a copy of a committed value at another offset than its acked send was told is its best
    never-acknowledged send's in an aborted or fenced transaction, if it has one; else it is the transaction's of
    its value. Returns reference()'s result plus aborted_reads,
    zombie_writes_visible, lost_committed (and their metrics), transaction_parts and torn_transactions
    (within each partition, as the metric counts them; across partitions: torn_across)."""
    def rank(txn):
        outcome, cause, _ = book[txn]
        return RANK["fenced"] if cause == "fenced" else RANK[outcome]

    rows, owned, written = [], {}, defaultdict(list)  # written: (p, offset) -> (value, rank, txn)
    untold = {}  # (p, v) -> best (rank, txn) of its sends in aborted or fenced transactions never told an offset
    for p, v, outcome, off, session, txn in ack_rows:
        off = NO_OFFSET if off is None else off
        if txn is None or outcome == "rejected":
            rows.append((p, v, outcome, off, session))
            continue
        r = rank(txn)
        owned[(p, v)] = max(owned.get((p, v), (0, -1)), (r, txn))
        if r == RANK["committed"]:
            rows.append((p, v, "acked", off if outcome == "acked" else NO_OFFSET, session))
        else:
            rows.append((p, v, "unknown", NO_OFFSET, session))
            if outcome == "acked" and off != NO_OFFSET:
                written[(p, off)].append((v, r, txn))
            elif r in (RANK["aborted"], RANK["fenced"]):
                untold[(p, v)] = max(untold.get((p, v), (0, -1)), (r, txn))
    committed = frozenset(k for k, (r, _) in owned.items() if r == RANK["committed"])
    out = reference(log_rows, rows, reads, owned=frozenset(owned), committed=committed)
    sent = {(p, v) for p, v, *_ in rows}
    present = {(p, v) for p, _, v in log_rows if (p, v) in sent}
    highest = {}  # per partition, the highest value read
    for p, _, v in log_rows:
        if (p, v) in sent:
            highest[p] = max(highest.get(p, v), v)

    def known(p, v):  # its absence is known: a complete read, or a higher value was read
        return p in (reads or {}) or (p in highest and v < highest[p])

    m = out["metrics"]
    for name in ("aborted_reads", "zombie_writes_visible", "lost_committed", "torn_transactions"):
        m.setdefault(name, 0)
        out[name] = []
    last_told = {}
    for p, v, outcome, off, _ in rows:
        if outcome == "acked":
            last_told[(p, v)] = off
    for p, off, v in log_rows:
        if v is None or (p, v) not in sent:
            continue  # unexpected
        mine = [(r, txn) for value, r, txn in written.get((p, off), []) if value == v]
        r, txn = max(mine) if mine else owned.get((p, v), (0, -1))
        if not mine and r == RANK["committed"] and last_told.get((p, v), NO_OFFSET) not in (NO_OFFSET, off) \
                and (p, v) in untold:
            r, txn = untold[(p, v)]
        if r == RANK["aborted"]:
            out["aborted_reads"].append((p, v, off, txn))
        elif r == RANK["fenced"]:
            out["zombie_writes_visible"].append((p, v, off, txn, book[txn][2]))
    parts = defaultdict(lambda: [0, 0])  # (p, txn) -> [sent, visible]
    for (p, v), (r, txn) in owned.items():
        if not (known(p, v) or (p, v) in present):
            continue  # beyond what the read reached: judged on no transaction
        parts[(p, txn)][0] += 1
        parts[(p, txn)][1] += (p, v) in present
        if r == RANK["committed"] and (p, v) not in present:
            off = last_told.get((p, v), NO_OFFSET)
            out["lost_committed"].append((p, v, txn, None if off == NO_OFFSET else off))
    out["transaction_parts"] = sorted((p, txn, s, vis) for (p, txn), (s, vis) in parts.items())
    m["torn_transactions"] = sum(1 for s, vis in parts.values() if 0 < vis < s)
    across = defaultdict(lambda: [0, 0])
    for (p, txn), (s, vis) in parts.items():
        across[txn][0] += s
        across[txn][1] += vis
    out["torn_across"] = sorted((txn, book[txn][2], book[txn][0], book[txn][1], s, vis)
                                for txn, (s, vis) in across.items() if 0 < vis < s)
    for name in ("aborted_reads", "zombie_writes_visible", "lost_committed"):
        m[name] = len(out[name])
        out[name] = sorted(out[name], key=repr)
    return out


# -- consumer groups -------------------------------------------------------------------------------
def reference_consumption(processed, log, positions):
    """processed: (partition, offset, value, member, session, n, processed_at) rows, n counting each member's
    records; log: (partition, offset, value); positions: {partition: final position or None}.

    The group's processing order is by processed_at, then member, then n. A member session's records of a
    partition, in its own order (n), should each be the record after the previous one in the log: one
    further on is a poll skip (records: how many were jumped over), one at or before it a nonmonotonic poll
    (records: how far back, 1 for the same record twice). A record of the log never processed is skipped
    when its partition's final position is past it, else unconsumed."""
    order = sorted(processed, key=lambda r: (r[6], r[3], r[5]))
    by_record = defaultdict(list)  # (partition, offset) -> its processings, in processing order
    for position, r in enumerate(order):
        by_record[(r[0], r[1])].append((position, r))
    reprocessed, window = [], []
    for (p, off), seen in sorted(by_record.items()):
        if len(seen) > 1:
            reprocessed.append((p, off, seen[0][1][2], len(seen), ",".join(r[3] for _, r in seen)))
            first_position, first = seen[0]
            for position, r in seen[1:]:
                window.append((p, off, r[2], first[3], r[3], r[6] - first[6], position - first_position))
    skipped, unconsumed = [], []
    for p, off, value in sorted(log):
        if (p, off) not in by_record:
            past = positions.get(p) is not None and off < positions[p]
            (skipped if past else unconsumed).append((p, off, value))
    offsets = defaultdict(list)
    for p, off, _ in log:
        offsets[p].append(off)
    skips, backs = [], []
    mine = defaultdict(list)  # (member, session, partition) -> its records in its own order
    for r in sorted(processed, key=lambda r: (r[3], r[4], r[5])):
        mine[(r[3], r[4], r[0])].append(r[1])
    for (member, session, p), offs in mine.items():
        places = [sum(1 for o in offsets[p] if o < off) for off in offs]  # index in the log (or where it would be)
        for i in range(1, len(offs)):
            step = places[i] - places[i - 1]
            if step > 1:
                skips.append((member, session, p, offs[i], offs[i - 1], step - 1))
            elif step < 1:
                backs.append((member, session, p, offs[i], offs[i - 1], 1 - step))
    metrics = {"reprocessed": len(reprocessed), "skipped": len(skipped), "unconsumed": len(unconsumed),
               "poll_skips": len(skips), "nonmonotonic_polls": len(backs), "processed": len(processed)}
    return {"metrics": metrics, "reprocessed": reprocessed, "skipped": skipped, "unconsumed": unconsumed,
            "poll_skips": sorted(skips), "nonmonotonic_polls": sorted(backs), "dedup_window": sorted(window)}
