"""What a real run's fault journal must say whatever the machine's load: the truth about each fault.

A test on a real cluster cannot promise that a fault lands on time (a loaded machine decides that, and bench/
measures it); it can check that faults.jsonl tells what happened: how late each fault took effect, that it was
held its planned duration from then (or says it was cut short), and that every fault late or short by more than
the nemesis's tolerance is marked so, in the journal and in summary.json's warnings, and no other is.
"""

from harness.nemesis import TOLERANCE

ROUNDING = 0.0021  # each journal time is rounded to the millisecond


def journal_problems(faults: list[dict], summary: dict) -> list[str]:
    """Every way the journal contradicts itself or the summary; [] when it tells the truth."""
    problems = []
    for f in faults:
        name = f"{f['variant']} fault {f['id']} ({f['kind']})"
        if f["outcome"] not in ("applied", "healed"):
            if "deviation" not in f and "error" not in f:
                problems.append(f"{name}: {f['outcome']} without a deviation or an error saying why")
            continue
        if abs(f["late_s"] - (f["applied_offset"] - f["planned_at"])) > ROUNDING:
            problems.append(f"{name}: late_s {f['late_s']} is not applied_offset - planned_at")
        if "held_s" not in f:
            continue  # applied, never healed: the run ended in the hold
        if abs(f["held_s"] - (f["healed_offset"] - f["applied_offset"])) > ROUNDING:
            problems.append(f"{name}: held_s {f['held_s']} is not healed_offset - applied_offset")
        cut_short = "cut short" in f.get("deviation", "")
        if f["held_s"] < f["planned_duration"] - ROUNDING and not cut_short:
            problems.append(f"{name}: held {f['held_s']} s of {f['planned_duration']} s from when it took effect, "
                            "and not said to be cut short")
        marked = f["late_s"] > TOLERANCE or f["planned_duration"] - f["held_s"] > TOLERANCE
        if marked != ("deviation" in f):
            problems.append(f"{name}: late {f['late_s']} s, held {f['held_s']} s of {f['planned_duration']} s, "
                            f"deviation {f.get('deviation')!r}")
        if "deviation" in f and not any(w.startswith(f"{f['variant']}: ") and f["deviation"] in w
                                        for w in summary.get("warnings", [])):
            problems.append(f"{name}: its deviation {f['deviation']!r} is not among summary.json's warnings")
    return problems
