"""The HTML reports, pure: a view (load.py) in, one self-contained HTML page out.

    render_run(view) -> str       <run>/index.html
    render_index(runs, series) -> str   <out>/index.html, every run with its verdict and the trend across
                                  runs, and every series of repeated runs with its rates
    render_aggregate(view) -> str <series>/index.html, the aggregate of repeated runs
    render_compare(view) -> str   compare-....html, runs side by side (`kafka-chaos compare`)

Pages are jinja2 templates with autoescaping (every value from data or experiment files is
escaped), inline CSS and SVG, no script and no network request. Links are built only from names
the harness generated (run folder names on disk, variant names the spec validated), each
percent-encoded as a relative path.
"""

from __future__ import annotations

import functools
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ..aggregate import RANKED
from ..analysis.metrics import BY_KEY, FIGURES, METRICS, applies, not_measured, not_measured_text
from .. import verdict as v
from ..status import COMPLETE, INTERRUPTED
from . import charts
from .load import DETAIL_TABLES, LISTING_CAP


@functools.cache  # one per process: compiling the templates took half of a run's rendering in a series
def _env() -> Environment:
    env = Environment(loader=PackageLoader("harness.report", "templates"),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    env.globals.update(COMPLETE=COMPLETE, PASS=v.PASS)
    env.filters["fig"] = fig
    env.filters["path"] = lambda *parts: "/".join(quote(str(p), safe="") for p in parts)
    env.filters["num"] = lambda x: f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else ("-" if x is None
                                                                                                   else x)
    return env


def fig(x) -> str:
    """A measured figure: 12,345 / 123.4 / 0.1234; "-" when absent."""
    if not isinstance(x, (int, float)):  # absent (None, or missing from an older file)
        return "-"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def listing_line(run: dict) -> str:
    """A jump-back run in the seed article's words: "Msg: m=65899 Last-acked=65929 JUMP BACK 30 DUPLICATE"
    (the article prints no JUMP BACK for a repeat of the value just read: size 0), then where it is."""
    kind = str(run["kind"]).upper()
    head = (f"Msg: m={run['first_value']} {kind}" if run["size"] == 0 else
            f"Msg: m={run['first_value']} Last-acked={run['highest_before']} JUMP BACK {run['size']} {kind}")
    return f"{head}  (p={run['partition']} offsets {run['first_offset']}-{run['last_offset']}, {run['length']} records)"


def headline(summary: dict, run_verdict: str) -> tuple[str, str]:
    """(css class, the report's first line): the verdict and why."""
    variants = summary.get("variants", {})
    if run_verdict in (v.INTERRUPTED, v.ERROR):
        return "fail", f"{run_verdict.upper()}: {summary.get('reason') or 'the run did not finish'}"
    failed = [f"{name}: {_check_text(c)}" for name, var in variants.items() for c in var.get("expectations", [])
              if v.status_of(c) == v.FAIL]
    if failed:
        return "fail", "FAIL: " + "; ".join(failed)
    incomplete = [f"{name} ({var['incomplete']})" for name, var in variants.items() if var.get("incomplete")]
    if incomplete:
        return "fail", "INCOMPLETE: not analysed: " + "; ".join(incomplete)
    unknown = [f"{name}: {_check_text(c)}" for name, var in variants.items() for c in var.get("expectations", [])
               if v.status_of(c) == v.UNKNOWN]
    if unknown and all(c["metric"] == "unseen" for var in variants.values() for c in var.get("expectations", [])
                       if v.status_of(c) == v.UNKNOWN):
        return "fail", ("UNKNOWN: the final read could not prove it reached every partition's end, so acknowledged "
                        "values it did not find may be lost or late: " + "; ".join(unknown))
    if unknown:  # the run did not do what it planned (verdict.plan_checks: each rule says why)
        return "fail", "UNKNOWN: " + "; ".join(unknown)
    allowed = [f"{name}: {_check_text(c)}" for name, var in variants.items() for c in var.get("expectations", [])
               if v.status_of(c) == v.ALLOWED]
    if allowed:
        return "allowed", "PASS with allowed anomalies: " + "; ".join(allowed)
    return "pass", "PASS: every check held"


def _check_text(c: dict) -> str:
    metric = BY_KEY.get(c["metric"])
    label = metric.label if metric else c["metric"]
    actual = f"{c['actual']:,}" if isinstance(c.get("actual"), int) else c.get("actual")
    if c.get("status") == v.ALLOWED:
        return f"{label} = {actual} (allowed by the experiment)"
    return f"{label} = {actual}, expected {c['rule']}"


def _dense(rows: list[dict]) -> list[dict]:
    """Per-second rows with the silent seconds in between filled with zeros (a stall shows as a stall)."""
    if not rows:
        return []
    by_second = {r["second"]: r for r in rows}
    lo, hi = min(by_second), max(by_second)
    zero = {k: 0 for k in rows[0] if k != "second"}
    return [by_second.get(t, {"second": t, **zero}) for t in range(lo, hi + 1)]


def _charts(name: str, var: dict, figures: dict | None = None) -> list:
    """figures: the variant's entry in summary.json (its longest unavailability is marked on the acks chart)."""
    series = _dense(var["series"])
    figures = figures or {}
    stretch = None
    if figures.get("unavailable_from_ms") is not None and figures.get("unavailable_s"):
        start = figures["unavailable_from_ms"] / 1000
        stretch = {"start": start, "end": start + figures["unavailable_s"],
                   "label": f"longest unavailable: {figures['unavailable_s']} s"}
    out = []
    if series:
        t0, t1 = series[0]["second"], series[-1]["second"] + 1
        lines = {"records (by produce time)": [(r["second"], r["records"]) for r in series]}
        if any(r.get("acks") for r in series):
            lines["acks (by acknowledgement time)"] = [(r["second"], r.get("acks") or 0) for r in series]
        out.append(charts.timeline(f"{name}: records and acknowledgements per second (faults shaded by kind)",
                                   t0, t1, lines, var["faults"], stretch if "acks (by acknowledgement time)" in lines
                                   else None))
        out.append(charts.timeline(f"{name}: duplicates and jump-backs per second", t0, t1,
                                   {"duplicates": [(r["second"], r["duplicates"]) for r in series],
                                    "jump-backs": [(r["second"], r["jump_backs"]) for r in series]}, var["faults"]))
        timed = [r for r in series if r.get("latency_p99_ms") is not None]
        if (var.get("cloud") or {}).get("points"):  # every send (or 1 in k, said) over the faults
            out.append(charts.cloud(f"{name}: latency of each send, ms, coloured by outcome (faults shaded by kind)",
                                    t0, t1, var["cloud"], var["faults"]))
        elif timed:
            out.append(charts.timeline(f"{name}: latency of the sends of each second, ms (faults shaded by kind)",
                                       t0, t1, {"p99": [(r["second"], r["latency_p99_ms"]) for r in timed],
                                                "p50": [(r["second"], r["latency_p50_ms"]) for r in timed]},
                                       var["faults"], stretch))
    out.append(charts.histogram(f"{name}: jump-back sizes ({var['runs_total']} runs)", var["sizes"]))
    return out


def _window_charts(name: str, var: dict, entry: dict) -> list:
    """The dedup window a consumer variant needed: the share of repeats caught by each window size."""
    group = var.get("consumer")
    if not group:
        return []
    out = []
    for key, unit, what in (("window_records", "records", "records processed since the first processing"),
                            ("window_ms", "ms", "time since the first processing")):
        figure = entry.get(f"dedup_{key}") or {}
        marks = {q: figure[q] for q in ("p50", "p99", "p100") if q in figure}
        out.append(charts.window_cdf(f"{name}: dedup window, {what}", group[key], unit, marks))
    return out


def window_text(window) -> str:
    """{p50, p99, p100, count} -> "12 / 340 / 1,020"; "-" without repeats."""
    if not window:
        return "-"
    return " / ".join(f"{window[k]:,}" for k in ("p50", "p99", "p100"))


def _n(x) -> str:
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else "-"


def finding(x: dict, clients: bool = False) -> str:
    """A variant's outcome in the seed article's words, said after its name: sent, confirmed, received,
    duplicates in jump-backs and the largest, loss, any other anomaly, and the longest stall. clients: name its
    client first (they differ)."""
    if x.get("incomplete"):
        return f": not analysed ({x['incomplete']})."
    who = f" ({x['client']})" if clients and x.get("client") else ""
    parts = [f"{_n(x.get('sent'))} sent, {_n(x.get('acked'))} confirmed, {_n(x.get('received'))} received"]
    dup, runs, big = x.get("duplicates") or 0, x.get("jump_back_runs") or 0, x.get("max_jump_back") or 0
    parts.append(f"{dup:,} duplicates in {runs:,} jump-back{'s' if runs != 1 else ''} of up to {big:,}"
                 if dup or runs else "no duplicate, no jump-back")
    lost = x.get("lost") or 0
    parts.append(f"{lost:,} confirmed value{'s' if lost != 1 else ''} lost" if lost else "nothing lost")
    told = ("duplicates", "jump_back_runs", "max_jump_back", "lost")
    parts += [f"{x[m.key]:,} {m.label}" + (" (allowed)" if m.key in (x.get("allowed") or []) else "")
              for m in METRICS if m.anomaly and m.key not in told and applies(m, x) and x.get(m.key)]
    if x.get("unavailable_s"):
        parts.append(f"the longest stall {x['unavailable_s']} s")
    return f"{who}: " + "; ".join(parts) + "."


def comparison(s: dict) -> Markup | None:
    """The variants side by side: duplicates, lost and the longest stall (the finding as one picture)."""
    names = [n for n, x in s.get("variants", {}).items() if not x.get("incomplete")]
    if not names:
        return None
    xs = [s["variants"][n] for n in names]
    return charts.compare("the variants side by side", names, [
        ("duplicates", [x.get("duplicates") for x in xs]), ("lost", [x.get("lost") for x in xs]),
        ("longest stall (s)", [x.get("unavailable_s") for x in xs])])


def partition_metrics(view_variants: dict, entries: dict) -> list:
    """The per-partition table's columns: the delivery figures, then every anomaly that applies and shows
    in some partition (so the table fits a laptop's screen)."""
    always = ("received", "duplicates", "jump_back_runs", "max_jump_back", "lost")
    seen = {m.key for var in view_variants.values() for p in var.get("partitions", []) for m in METRICS
            if isinstance(p.get(m.key), int) and p.get(m.key)}
    return [m for m in METRICS if m.key in always or (m.anomaly and m.key in seen and any(
        applies(m, x) for x in entries.values()))]


def render_run(view: dict) -> str:
    s = view["summary"]
    css, line = headline(s, view["verdict"])
    entries = s.get("variants", {})
    clients = len({x.get("client") for x in entries.values()}) > 1
    checks_open = any(v.status_of(c) != v.PASS for x in entries.values() for c in x.get("expectations", [])) or \
        any(x.get("incomplete") for x in entries.values())
    variants = {name: {**var, "charts": _charts(name, var, s.get("variants", {}).get(name)),
                       "listing": [listing_line(r) for r in var["runs"]],
                       "window_charts": _window_charts(name, var, s["variants"].get(name, {}))}
                for name, var in view["variants"].items()}
    has_consumer = any(var.get("consumer") for var in view["variants"].values()) or any(
        v.get("consumer") for v in s.get("variants", {}).values())
    absent = not_measured(entries)
    return _env().get_template("run.html.j2").render(
        findings={n: finding(x, clients) for n, x in entries.items()}, comparison=comparison(s),
        held={n: v.held_text(x.get("expectations", []), x) for n, x in entries.items()}, checks_open=checks_open,
        absent=not_measured_text(entries), applies=applies, partition_metrics=partition_metrics(view["variants"], entries),
        by_key=BY_KEY, clients=clients,
        s=s, verdict=view["verdict"], headline=line, headline_class=css,
        metrics=[m for m in METRICS if m not in absent], figures=FIGURES,
        latency_text=latency_text, window_text=window_text, has_consumer=has_consumer, lso_stall_text=lso_stall_text,
        has_lso=any("lso_stall_s" in x for x in s.get("variants", {}).values()),
        setting_keys=view["setting_keys"], settings=view["settings"], faults=view["faults"],
        faults_total=view.get("faults_total", len(view["faults"])), variants=variants, evidence=view.get("evidence", []),
        fault_lines=view.get("fault_lines", {}),
        detail_tables=DETAIL_TABLES, cap=LISTING_CAP, tables=view["tables"], duration=_duration(s),
        ranking=view.get("ranking", []), ranked=RANKED, ci=interval_text,
        allowed_fatal={name: 1 for name, x in s.get("variants", {}).items() if x.get("allowed")})


def lso_stall_text(variant: dict) -> str:
    """"0.0"; "\u2265 15.0" when a partition's last stable offset never caught up; "-" for a variant without
    transactions."""
    if "lso_stall_s" not in variant:
        return "-"
    return ("\u2265 " if variant.get("lso_stalled") else "") + f"{variant['lso_stall_s']:,}"


def latency_text(latency) -> str:
    """{p50, p95, p99, max} -> "4.1 / 9.8 / 120 / 6,030"; "-" when nothing was timed."""
    if not latency:
        return "-"
    return " / ".join(f"{latency[k]:,.3g}" if latency[k] < 1000 else f"{latency[k]:,.0f}"
                      for k in ("p50", "p95", "p99", "max"))


def _duration(s: dict) -> str:
    from .load import _epoch

    start, end = _epoch(s.get("started_at")), _epoch(s.get("ended_at"))
    return f"{end - start:.0f} s" if start and end else ""


def interval_text(ci) -> str:
    return f"[{fig(ci[0])}, {fig(ci[1])}]" if ci else ""


def render_aggregate(view: dict) -> str:
    doc = view["aggregate"]
    variants = doc.get("variants", {})
    shown = [m for m in METRICS if not m.accounting and m.key != "acked"]
    runs = [r.get("verdict") for r in doc.get("runs", [])]
    ran, series = len(runs), v.series_verdict(runs)  # computed again: an older aggregate.json has no verdict
    if doc.get("status") == INTERRUPTED:
        css, line = "fail", f"INTERRUPTED: {ran} of {doc.get('requested')} runs; the aggregate covers those"
    elif doc.get("failed_run"):
        css, line = "fail", f"FAIL: run {doc['failed_run']} failed; replay it with --replay {doc.get('failed_faults')}"
    elif series == v.FAIL:
        failed = {name: x["failed_runs"] for name, x in variants.items() if x.get("failed_runs")}
        css, line = "fail", "FAIL: " + ("; ".join(f"{n}: {k} of {variants[n]['runs']} runs failed"
                                                  for n, k in failed.items()) or
                                        f"{runs.count(v.FAIL)} of {ran} runs failed")
    elif series == v.PASS:
        css, line = "pass", f"PASS: every check held in all {ran} runs"
    else:
        css, line = "fail", f"{ran - runs.count(v.PASS)} of {ran} runs did not complete" if ran else "no run finished"
    return _env().get_template("aggregate.html.j2").render(
        a=doc, headline=line, headline_class=css, metrics=shown, variants=variants, ranking=view["ranking"],
        setting_keys=view["setting_keys"], settings=view["settings"], ci=interval_text, ranked=RANKED,
        allowed_fatal=view.get("allowed", {}),
        failures=sorted({e for x in variants.values() for e in x.get("client_failures", {})}),
        has_lso=any(x.get("lso_stall_s") for x in variants.values()))


def compare_rows(view: dict) -> list[dict]:
    """Per metric that applies somewhere: its values per (variant, run), and whether the runs differ on it."""
    rows = []
    entries = {(n, i): r["summary"]["variants"].get(n) for n in view["variants"] for i, r in enumerate(view["runs"])}
    absent = not_measured({f"{n}@{i}": x for (n, i), x in entries.items() if x is not None})
    for m in (m for m in METRICS if m not in absent):
        cells = {key: (x.get(m.key) if x is not None and applies(m, x) else None) for key, x in entries.items()}
        differs = {n: len({cells[(n, i)] for i in range(len(view["runs"]))}) > 1 for n in view["variants"]}
        rows.append({"metric": m, "cells": cells, "differs": differs})
    for key, label in (("unavailable_s", "longest stall (s)"), ("client", "client")):
        cells = {k: (x.get(key) if x is not None else None) for k, x in entries.items()}
        differs = {n: len({cells[(n, i)] for i in range(len(view["runs"]))}) > 1 for n in view["variants"]}
        rows.append({"label": label, "cells": cells, "differs": differs})
    return rows


def render_compare(view: dict) -> str:
    return _env().get_template("compare.html.j2").render(runs=view["runs"], variants=view["variants"],
                                                        rows=compare_rows(view))


def render_index(runs: list[dict], series: list[dict] = (), compares: list[str] = ()) -> str:
    oldest_first = list(reversed(runs))
    names = sorted({(r["summary"].get("experiment"), name) for r in runs for name in r["summary"].get("variants", {})},
                   key=str)
    trend = []
    consumers = any(v.get("consumer") for r in runs for v in r["summary"].get("variants", {}).values())
    for metric in (m.key for m in METRICS if m.trend and (consumers or not m.consumer)):
        lines = {f"{exp}/{name}": [r["summary"]["variants"].get(name, {}).get(metric)
                                   if r["summary"].get("experiment") == exp else None for r in oldest_first]
                 for exp, name in names}
        trend.append(charts.trend(f"{metric} per variant, oldest run left", [r["folder"] for r in oldest_first], lines))
    return _env().get_template("index.html.j2").render(runs=runs, trend=trend, series=series, ci=interval_text,
                                                       compares=compares)


def fault_text(fault: dict) -> str:
    """A drawn fault in one line: `latency at 1.2 s for 0.8 s on all (latency_ms=3000)`."""
    timing = {"kind", "at", "duration", "downtime", "target"}
    length = fault.get("downtime", fault.get("duration"))
    settings = ", ".join(f"{k}={fault[k]}" for k in sorted(fault) if k not in timing)
    target = fault.get("target", "all")
    if isinstance(target, dict):
        target = ", ".join(f"{k} {val}" for k, val in target.items())
    return (f"{fault.get('kind')} at {fault.get('at')} s" + (f" for {length} s" if length is not None else "")
            + f" on {target}" + (f" ({settings})" if settings else ""))


def known_shown(tries: list[dict]) -> dict[str, list[int]]:
    """{a known bug's ref: the tries whose marks it explained (an exploration journal row's `known`)}, in the
    order first shown."""
    out: dict[str, list[int]] = {}
    for row in tries:
        for ref in row.get("known", {}):
            out.setdefault(ref, []).append(row["try"])
    return out


def render_exploration(view: dict) -> str:
    """<exploration>/index.html: its findings, its tries and whether it is still learning."""
    tries, findings = view["tries"], view["findings"]
    infra = sum(1 for t in tries if t.get("status") != COMPLETE)
    events, found, points_try, points_time = set(), {}, {"distinct events": [], "findings": []}, \
        {"distinct events": [], "findings": []}
    for t in tries:
        events |= set(t.get("events", []))
        if t.get("finding"):
            found[t["finding"]] = True
        end = t.get("at_s", 0.0) + t.get("seconds", 0.0)
        for key, n in (("distinct events", len(events)), ("findings", len(found))):
            points_try[key].append(n)
            points_time[key].append((end, n))
    minutes = round(max((t.get("at_s", 0) + t.get("seconds", 0) for t in tries), default=0) / 60, 1)
    if findings:
        css, line = "fail", f"FOUND {len(findings)}: " + "; ".join(
            f"{f['id']} {' · '.join(f['signature'])} ({f['rate'][0]} of {f['rate'][1]} runs)" for f in findings)
    elif tries and infra == len(tries):
        css, line = "fail", f"NOTHING RAN: all {infra} tries could not run"
    else:
        css, line = "pass", f"NOTHING FOUND in {len(tries) - infra} tries ({minutes} min)"
    known = known_shown(tries)
    if known:
        line += "; known bugs shown (no finding): " + ", ".join(f"{ref} ({len(t)})" for ref, t in known.items())
    return _env().get_template("explore.html.j2").render(
        x=view["facts"], tries=tries, findings=findings, headline=line, headline_class=css, infra=infra,
        known=known, events=len(events), minutes=minutes, rebuilds=sum(1 for t in tries if t.get("rebuilt")),
        fault_text=fault_text,
        by_try=charts.trend("distinct events and findings by try", [str(t["try"]) for t in tries], points_try),
        by_time=charts.timeline("distinct events and findings by seconds of exploration", 0.0,
                                max([p[0] for p in points_time["findings"]] + [1.0]), points_time, []))
