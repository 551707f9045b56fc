"""What the user sees on the terminal (rich): escaping, a run's progress, the printed summary, aggregate and
comparison. Drawing is kept here so that cli.py holds only the commands and their wiring.

User text is never read as console markup, and text from a run folder (or any data) reaches the terminal
through visible(): no control character or escape sequence of its own.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .verdict import ALLOWED, FAIL, PASS, UNKNOWN

console = Console(soft_wrap=True, highlight=False)  # never break paths or messages: CI logs get read and grepped
err_console = Console(stderr=True, soft_wrap=True, highlight=False)


# Every control character (C0, DEL, C1) and bidirectional override, written out as Python writes it in a string.
_CONTROL = {**{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7f, 0xa0))}, 0x09: "\\t", 0x0a: "\\n",
            0x0d: "\\r", **{c: f"\\u{c:04x}" for c in (0x061c, 0x200e, 0x200f, *range(0x202a, 0x202f),
                                                        *range(0x2066, 0x206a))}}


def visible(text) -> str:
    """Text as the terminal may show it: every control character (C0, DEL, C1) and bidirectional override
    written out the way Python writes it in a string (\\x1b, \\n, \\u202e), so that a name, a reason or a value
    from a run folder cannot move the cursor, clear the screen, set the window title or reorder a line. The
    one way folder text reaches the terminal (with Text, never markup: a '[' is a '[')."""
    return str(text).translate(_CONTROL)


def shown(text, style: str = "") -> Text:
    """visible(text) as a rich Text: a table cell or title that is neither markup nor a control sequence."""
    return Text(visible(text), style=style)


def say(text: str, style: str | None = None, err: bool = False) -> None:
    """Print user-facing text as it is (a '[' in a path or name is not markup; a control character is shown
    written out, never sent: visible())."""
    (err_console if err else console).print(shown(text, style or ""))


def say_error(message: str) -> None:
    """One line on stderr: "error: " in bold red, then the message as it is (visible())."""
    err_console.print(Text.assemble(("error: ", "bold red"), visible(message)))


def print_summary(summary: dict, run_dir: Path | None = None) -> None:
    """Metrics as rows and variants as columns, so the table fits a narrow terminal."""
    from .analysis.metrics import FIGURES, METRICS, applies, not_measured, not_measured_text
    from .verdict import held_text, status_of, variant_verdict

    variants = summary.get("variants", {})
    table = Table(title=shown(f"{summary.get('experiment')} · {summary.get('status')} · verdict "
                              f"{summary.get('verdict')}"), title_justify="left")
    table.add_column("")
    for name in variants:
        table.add_column(shown(name), justify="right")
    consumers = any(x.get("consumer") for x in variants.values())  # consumer metrics only where a group ran
    absent = not_measured(variants)  # no transactions, no consumer group: said once below the table
    for m in sorted((m for m in METRICS if m not in absent), key=lambda m: m.accounting):
        cells = [shown(f"{x[m.key]:,}" if isinstance(x.get(m.key), int) and applies(m, x) else "-")
                 for x in variants.values()]
        table.add_row(m.label + (" *" if m.fatal else ""), *cells, style="dim" if m.accounting else None)
    from .report.render import latency_text, lso_stall_text, window_text

    for f in FIGURES:
        if f.key.startswith("dedup_window") and not consumers:
            continue
        if f.key == "lso_stall_s" and not any(f.key in x for x in variants.values()):
            continue
        cells = [latency_text(x.get(f.key)) if f.key == "latency_ms" else window_text(x.get(f.key))
                 if f.key.startswith("dedup_window") else lso_stall_text(x) if f.key == "lso_stall_s"
                 else str(x.get(f.key, "-")) for x in variants.values()]
        table.add_row(f.label, *map(shown, cells))
    console.print(table)
    if absent:
        say(not_measured_text(variants), "dim")
    for name, x in variants.items():
        if x.get("incomplete"):
            console.print(Text.assemble("  ", ("INCOMPLETE", "bold red"), visible(f"  {name}: {x['incomplete']}")))
        marks = {PASS: ("pass", "green"), FAIL: ("FAIL", "bold red"), ALLOWED: ("allowed", "yellow"),
                 UNKNOWN: ("UNKNOWN", "bold magenta")}
        checks = [{**c, "status": status_of(c)} for c in x.get("expectations", [])]
        if checks:  # the variant's verdict, then what held in one line, then each other check
            console.print(Text.assemble("  ", marks[variant_verdict(checks)],
                                        visible(f"  {name}: {held_text(checks, x)}")))
        for c in checks:
            if c["status"] == PASS:
                continue
            mark = marks[c["status"]]
            actual = f"{c['actual']:,}" if isinstance(c.get("actual"), int) else c.get("actual")
            console.print(Text.assemble("  ", mark, visible(f"  {name}: {c['metric']} {c['rule']} (actual {actual})")))
    if summary.get("reason"):
        say(summary["reason"], "yellow")
    kept = summary.get("broker_data")
    if isinstance(kept, dict):
        size = f", {kept['bytes'] / 2**20:,.1f} MiB" if isinstance(kept.get("bytes"), int) else ""
        say(f"brokers' logs kept ({kept.get('why')}{size}): {kept.get('path')}; show offsets with: kafka-chaos "
            f"evidence {run_dir or summary.get('run_id')} --partition P --offsets A-B")
    if run_dir is not None:
        say(f"report: {run_dir / 'index.html'}")


class ProgressListener:
    """Draws a run's progress: one bar per variant (run.Listener's methods)."""

    def __init__(self, total: int):
        self.total = total
        self.progress = Progress(TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console)
        self.tasks: dict[str, int] = {}

    def _task(self, variant: str) -> int:
        if variant not in self.tasks:
            self.tasks[variant] = self.progress.add_task(Text(variant).plain, total=self.total)
        return self.tasks[variant]

    def phase(self, variant: str, what: str) -> None:
        task = self._task(variant)
        self.progress.update(task, description=f"{variant}: {what}".replace("[", "\\["))

    def sent(self, variant: str, count: int, total: int) -> None:
        self.progress.update(self._task(variant), completed=count)

    def warning(self, text: str) -> None:
        self.progress.console.print(Text(f"note: {text}", style="yellow"))


def print_aggregate(doc: dict) -> None:
    """Per variant: the anomalies any run had, as mean per run and as rate per 100,000 acked, each with its
    95% interval, and how many runs had them; then the price (throughput, unavailability, p99 latency)."""
    from .analysis.metrics import BY_KEY

    def n(x: float) -> str:
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"

    def ci(x, share: bool = False):
        if not x:
            return ""
        return f" [{x[0]:.0%}, {x[1]:.0%}]" if share else f" [{n(x[0])}, {n(x[1])}]"

    variants = doc.get("variants", {})
    ran = len(doc.get("runs", []))
    verdicts = ", ".join(f"{k} {v}" for v, k in doc.get("verdicts", {}).items())
    table = Table(title=shown(f"{doc.get('experiment')} · {ran} of {doc.get('requested')} runs ({verdicts}) · "
                              "mean per run [95% interval]"), title_justify="left")
    table.add_column("")
    for name in variants:
        table.add_column(shown(name), justify="right")
    metrics = next(iter(variants.values()), {}).get("metrics", {})
    keys = [k for k in metrics if k in ("duplicates", "jump_back_runs", "max_jump_back", "lost") or
            k not in ("received", "unique", "missing") and any(v["metrics"][k]["max"] for v in variants.values())]
    for key in keys:
        table.add_row(BY_KEY[key].label, *[f"{n(v['metrics'][key]['mean'])}{ci(v['metrics'][key]['mean_ci95'])}"
                                           for v in variants.values()])
        if BY_KEY[key].combine != "max":
            table.add_row(Text("  per 100k acked", style="dim"),
                          *[Text(f"{n(v['metrics'][key]['rate_per_100k'])}{ci(v['metrics'][key]['ci95'])}",
                                 style="dim") for v in variants.values()])
        table.add_row(Text("  runs with any", style="dim"),
                      *[Text(f"{v['metrics'][key]['runs_with']}/{v['runs']}"
                             f"{ci(v['metrics'][key].get('runs_with_ci95'), share=True)}", style="dim")
                        for v in variants.values()])
    table.add_row("duplicates per jump-back run", *[n(v["duplicates_per_jump_back_run"])
                                                    if v.get("duplicates_per_jump_back_run") else "-"
                                                    for v in variants.values()])
    failures = sorted({e for v in variants.values() for e in v.get("client_failures", {})})
    for error in failures:  # a known bug that fails the client for good shows here
        table.add_row(shown(f"client failed for good: {error}"),
                      *[f"{f['runs_with']}/{v['runs']}{ci(f['runs_with_ci95'], share=True)} ({f['times']}x)"
                        if (f := v.get("client_failures", {}).get(error)) else f"0/{v['runs']}"
                        for v in variants.values()])
    for label, key in (("acked / s", "acked_per_s"), ("unavailable (s)", "unavailable_s"),
                       ("latency p99 (ms)", "latency_p99_ms"), ("last stable offset stall (s)", "lso_stall_s")):
        if key == "lso_stall_s" and not any(v.get(key) for v in variants.values()):
            continue
        table.add_row(label, *[n(v[key]["mean"]) if v.get(key) else "-" for v in variants.values()])
    console.print(table)


def print_compare(view: dict) -> None:
    """`kafka-chaos compare`'s tables: one per variant, its runs side by side (they fit a narrow terminal)."""
    from .report.render import compare_rows

    rows = compare_rows(view)
    for name in view["variants"]:
        table = Table(title=shown(name), title_justify="left")
        table.add_column("")
        for i in range(len(view["runs"])):
            table.add_column(f"run {i + 1}", justify="right")
        table.add_column("")
        for row in rows:
            style = "bold yellow" if row["differs"][name] else None
            cells = [row["cells"][(name, i)] for i in range(len(view["runs"]))]
            table.add_row(row["metric"].label if row.get("metric") else row["label"],
                          *(shown("-" if x is None else f"{x:,}" if isinstance(x, int) else x, style=style or "")
                            for x in cells), "differs" if row["differs"][name] else "")
        console.print(table)


def print_checks(checks) -> None:
    """`kafka-chaos doctor`'s lines: each check marked ok, MISSING (needed) or absent, and how to fix it."""
    for c in checks:
        mark = ("ok     ", "green") if c.ok else (("MISSING", "bold red") if c.needed else ("absent ", "yellow"))
        console.print(Text.assemble(mark, f" {c.name:<17} {c.detail}"))
        if not c.ok and c.fix:
            say(f"         fix: {c.fix}")


class ExploreProgress:
    """An exploration on the terminal: a line per try (what was drawn, the verdict, what was new), a line per
    finding, and a status line: tries, findings, distinct events, time left. Its `run` listener names the
    stage of the run in progress on the status line."""

    def __init__(self, budget_s: float | None, max_tries: int | None, clock):
        from rich.status import Status

        self.budget_s, self.max_tries, self.clock = budget_s, max_tries, clock
        self.started = clock()
        self.tries = self.findings = self.events = 0
        self.status = Status("", console=console)
        self.stage = "starting"
        self.run = _StageListener(self)
        self._draw()

    def _draw(self) -> None:
        parts = [f"try {self.tries + 1}{'/' + str(self.max_tries) if self.max_tries else ''}: {self.stage}",
                 f"{self.findings} finding(s)", f"{self.events} distinct events"]
        if self.budget_s is not None:
            left = max(0.0, self.budget_s - (self.clock() - self.started))
            parts.append(f"{left / 60:.1f} min left")
        self.status.update(shown(" · ".join(parts)))

    def tried(self, row: dict, findings: int, events: int) -> None:
        self.tries, self.findings, self.events = self.tries + 1, findings, events
        faults = len(row.get("faults", []))
        verdict = row.get("verdict")
        line = (f"try {row['try']} ({row.get('origin')}, {faults} fault(s)): {verdict}"
                + (f" ({row['reason']})" if row.get("reason") else "")
                + (f" · {' · '.join(row['signature'])}" if row.get("signature") else "")
                + (f" · {len(row['new_events'])} new event(s)" if row.get("new_events") else "")
                + f" · {row.get('seconds')} s" + (f" · cluster {row['rebuilt']}" if row.get("rebuilt") else ""))
        console.print(shown(line, "green" if verdict == PASS else "yellow"))
        self.stage = "drawing"
        self._draw()

    def investigating(self, finding: str, what: str) -> None:
        self.stage = f"investigating {finding}: {what}"
        self._draw()

    def found(self, row: dict) -> None:
        self.findings += 1
        hits, ran = row["rate"]
        how = "1-minimal" if row["one_minimal"] else "shrinking stopped at --shrink-runs"
        console.print(shown(f"finding {row['id']}: {' · '.join(row['signature'])}: {len(row['minimal_faults'])} of "
                            f"{row['faults']} fault(s) ({how}), shown in {hits} of {ran} runs", "bold red"))
        self._draw()


class _StageListener:
    """A run's phases (run.Listener), shown on the exploration's status line."""

    def __init__(self, progress: ExploreProgress):
        self.progress = progress

    def phase(self, variant: str, what: str) -> None:
        self.progress.stage = f"{variant}: {what}"
        self.progress._draw()

    def sent(self, variant: str, count: int, total: int) -> None:
        pass

    def warning(self, text: str) -> None:
        pass


def told_text(told: list[dict], offset: int) -> str:
    """What the delivery log says the client was told about one value: "acked here", "acked @341", "rejected
    (MSG_TIMED_OUT)", "unknown (...)", each send of it in turn; "not sent" when it holds no row of it."""
    if not told:
        return "not sent"
    out = []
    for row in told:
        if row.get("outcome") == "acked":
            out.append("acked here" if row.get("offset") == offset else f"acked @{row.get('offset')}")
        else:
            out.append(f"{row.get('outcome')}" + (f" ({row['error']})" if row.get("error") else ""))
    return ", ".join(out)


def print_evidence(view: dict) -> None:
    """`kafka-chaos evidence`: a line per replica (its segments read, its leader epochs, its end), then a row per
    offset and replica: the record's value, its batch's partition leader epoch, producer id/epoch, the record's
    sequence, transactional flag, what the client was told about that value, and (first row of an offset) the
    values acknowledged at it. A row where the replica disagrees with what was acknowledged there, or where more
    than one value was acknowledged at the offset, is yellow."""
    first, last = view["offsets"]
    say(f"{view['run']} · variant {view['variant']} · topic {view['topic']} partition {view['partition']} · "
        f"offsets {first}-{last}", "bold")
    for r in view["replicas"]:
        epochs = ", ".join(f"{e}@{o}" for e, o in r["leader_epochs"]) if r["leader_epochs"] is not None else "none"
        end = f" · log end {r['log_end']:,}" if r["log_end"] is not None else ""
        torn = f" · {r['trailing_bytes']:,} bytes of a torn batch at a segment's end" if r["trailing_bytes"] else ""
        say(f"  broker {r['broker']}: read {', '.join(r['segments']) or 'no segment'} · leader epochs (epoch@start "
            f"offset) {epochs}{end}{torn}")
    table = Table(title_justify="left")
    for name, justify in (("offset", "right"), ("broker", "right"), ("value", "right"), ("epoch", "right"),
                          ("producer", "right"), ("seq", "right"), ("txn", "left"), ("told (this value)", "left"),
                          ("acked at offset", "left")):
        table.add_column(name, justify=justify)
    for at in view["at"]:
        acked = at["acked"]
        for i, rep in enumerate(at["replicas"]):
            rec = rep["record"]
            here = ", ".join(map(str, acked)) if acked else "none"
            if rec is None:
                cells = ["-", "", "", "", "", "absent from its log"]
                odd = bool(acked)
            else:
                value = (f"{rec['marker']} marker" if rec["control"] else
                         str(rec["value"]) if rec["value"] is not None else repr(rec["payload"])[:40])
                producer = f"{rec['producer_id']}/{rec['producer_epoch']}" if rec["producer_id"] >= 0 else "none"
                cells = [value, str(rec["leader_epoch"]), producer, str(rec["sequence"]),
                         "yes" if rec["transactional"] else "no",
                         "" if rec["control"] else told_text(rec["told"], at["offset"])]
                odd = len(acked) > 1 or (bool(acked) and rec["value"] not in acked)
            table.add_row(str(at["offset"]) if i == 0 else "", str(rep["broker"]), *map(shown, cells),
                          here if i == 0 else "", style="yellow" if odd else None,
                          end_section=i + 1 == len(at["replicas"]))
    # Piped or captured (not a terminal: 80 columns), the table keeps its natural width: a row a line, to grep.
    needed = Measurement.get(console, console.options.update_width(10_000), table).maximum
    wide = console if console.is_terminal or needed <= console.width else Console(width=needed, highlight=False)
    wide.print(table)
    say("epoch: the partition leader epoch its batch was written under · producer: id/epoch (none: not idempotent) · "
        "seq: the record's sequence · told: the delivery log's outcome of each send of that value", "dim")
