"""A finding's evidence.txt: the log lines around the failure in the try that first showed it, so a reader
can judge the claim without the exploration: each variant's client log (its fatal error, its last lines)
and the brokers' WARN/ERROR lines written while the try ran (the runner keeps them in the try's
logs/brokers-during-run.log, since the long-lived cluster's own logs span every try)."""

from __future__ import annotations

import re
from pathlib import Path

CLIENT_TAIL = 30  # the last lines of a client log: how it ended
MATCHING = 20  # its error lines (the fatal one among them)
# A client log line at error level or worse (logfile.py writes the level), or naming a fatal error: librdkafka
# says "Fatal error: Local: Inconsistent state: ...", not the error's code name (_INCONSISTENT).
CLIENT_ERROR = re.compile(r"^\S+ \S+ (ERROR|CRITICAL) |Fatal error|fatal", re.I)
BROKER_LINES = 80
BROKER_LEVEL = re.compile(r"\b(WARN|ERROR|FATAL)\b")
DURING_RUN = "brokers-during-run.log"


def _lines(path: Path, limit_bytes: int = 32 * 2**20) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit_bytes))
            return f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def evidence_text(finding: dict, first: dict, try_folder: Path) -> str:
    out = [f"finding {finding['id']}: {'; '.join(finding['signature'])}",
           f"first shown by try {first['try']} ({first.get('origin', '')}), run folder {try_folder}", ""]
    for name in finding.get("variants", []):
        log = try_folder / "logs" / f"producer-{name}.log"
        lines = _lines(log)
        fatal = next((m.split(" client_fatal ", 1)[1] for m in finding["signature"]
                      if m.startswith(f"{name}: client_fatal ")), None)
        out.append(f"== client log of {name} ({log}) ==")
        if not lines:
            out.append("(no client log kept)")
        errors = [x for x in lines if CLIENT_ERROR.search(x) or (fatal and fatal in x)]
        out += [f"-- its error lines ({len(errors)}; the last {min(MATCHING, len(errors))} shown)"
                + (f"; it failed for good with {fatal}" if fatal else "") + " --", *errors[-MATCHING:]]
        out += [f"-- its last {min(CLIENT_TAIL, len(lines))} lines --", *lines[-CLIENT_TAIL:], ""]
    brokers = [x for x in _lines(try_folder / "logs" / DURING_RUN) if BROKER_LEVEL.search(x)]
    out.append(f"== broker WARN/ERROR lines while the try ran ({len(brokers)}; the last {BROKER_LINES} shown) ==")
    out += brokers[-BROKER_LINES:] or ["(none)"]
    return "\n".join(out) + "\n"
