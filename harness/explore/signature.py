"""What a try's outcome says went wrong (its signature), and what it saw (its events), without numbers.

Two tries that went wrong the same way must give one signature, so that a finding is one finding however many
tries hit it; two tries that saw the same things must give one set of events, so that the corpus keeps only a
try that saw something new. Numbers (counts, offsets, ports, ids, times) differ between any two tries and say
nothing about which behaviour was reached, so none is kept: a log message is reduced to its template.

Pure: the caller reads the summary, the logs and the delivery log's error counts and hands them in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from ..verdict import ALLOWED, FAIL, PASS, UNKNOWN, status_of

COMPLETE = "complete"


def signature(summary: dict) -> tuple[str, ...]:
    """Sorted marks of what went wrong: `VARIANT: METRIC` per failed check, `VARIANT: client_fatal NAME` when the
    client failed for good, `VARIANT: unknown` when the variant's verdict is unknown, and `run: STATUS` when the
    run did not complete (interrupted, error, incomplete). () when nothing went wrong."""
    marks = set()
    status = summary.get("status", COMPLETE)
    if status != COMPLETE:
        marks.add(f"run: {status}")
    for name, variant in (summary.get("variants") or {}).items():
        for check in variant.get("expectations", []):
            if status_of(check) == FAIL:
                marks.add(f"{name}: {check['metric']}")
        if variant.get("client_fatal"):
            marks.add(f"{name}: client_fatal {variant['client_fatal']}")
        if variant.get("verdict") == UNKNOWN:
            marks.add(f"{name}: unknown")
    return tuple(sorted(marks))


def not_as_planned(summary: dict, marks: Sequence[str] | None = None) -> bool:
    """True when all that went wrong is that some variants did not run their schedule: each mark is `VARIANT:
    unknown` and that variant's only check not passed is faults_not_applied (a drawn fault that could not be
    applied: an isolation of a partition's leader while another fault of the try holds that broker paused). Such
    a try says nothing about the system under test; shrunk and rated as a finding (11 runs, 2026-11-29), it is
    reported as one, and each like it would be. `marks`: those to judge (default: the whole signature; the
    exploration gives those no known bug explains)."""
    marks = signature(summary) if marks is None else marks
    variants = summary.get("variants") or {}
    return bool(marks) and all(
        mark.endswith(": unknown") and [check["metric"] for check in
                                        variants.get(mark[:-len(": unknown")], {}).get("expectations", [])
                                        if status_of(check) not in (PASS, ALLOWED)] == ["faults_not_applied"]
        for mark in marks)


def explained(summary: dict, known: Sequence) -> tuple[tuple[str, ...], dict[str, list[str]]]:
    """The signature's marks no known bug explains, and {ref: the marks it explains}. A known bug (space.KnownBug:
    ref, marks, evidence) explains a mark its patterns match when its evidence, if it has one, is found in the
    marked variant's summary entry (as JSON, keys sorted); a mark of the run (`run: STATUS`) is never explained."""
    variants = summary.get("variants") or {}
    left, by_ref = [], {}
    for mark in signature(summary):
        name = mark.split(": ", 1)[0]
        for bug in known:
            if name in variants and any(fnmatchcase(mark, pattern) for pattern in bug.marks) and (
                    bug.evidence is None
                    or re.search(bug.evidence, json.dumps(variants[name], sort_keys=True, default=str))):
                by_ref.setdefault(bug.ref, []).append(mark)
                break
        else:
            left.append(mark)
    return tuple(left), by_ref


# What varies between two occurrences of one event, each replaced by a placeholder (in this order: a UUID holds
# hex digits, an address holds numbers).
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# Kafka's topic and incarnation ids: 22 characters of URL-safe base64 (a Uuid's text), with a digit and both cases.
_KAFKA_ID = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[a-z])(?=[\w-]*[A-Z])[\w-]{22}(?![\w-])")
_ADDRESS = re.compile(r"\b(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-fA-F:]+\])(?::\d+)?\b|\b[\w.-]+\.[a-z]+:\d+\b")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|(?<=@)[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
_NAME = re.compile(r"""(['"])kc-[^'"]*\1|\bkc-[\w.-]*[\w]""")  # the harness's topics, groups, transactional ids
_NUMBER = re.compile(r"(?<![A-Za-z<])-?\d+(?:\.\d+)?")
# The Java client's own name in its lines, `[Producer clientId=m2.1, ...]`: each member (slot and session) or
# producer instance has its own, and the same event said by two members is one event.
_CLIENT_ID = re.compile(r"(?<=clientId=)[^,\]\s]+")
_THREAD = re.compile(r"^\[thrd:[^\]]*\]:\s*")  # librdkafka's thread name, which holds its broker's address
# librdkafka's count of the same error said again ("(after 101ms in state UP, 3 identical error(s) suppressed)"):
# the same event.
_SUPPRESSED = re.compile(r", <n> identical error\(s\) suppressed")


def _collapse(text: str) -> str:
    """Data dumped in a message ({...} maps and sets, or `(key=value, ...)` holding more of them: a fetch
    request's partitions) differs between two occurrences by its content, not by its kind: replaced by `{…}` or
    `(…)`. A group without nested data, `(/<addr>)` or `RequestHeader(apiKey=...)`, is kept."""
    out, i = [], 0
    while i < len(text):
        if text[i] in "({":
            close, depth = -1, 0
            for j in range(i, len(text)):
                depth += 1 if text[j] in "({[" else -1 if text[j] in ")}]" else 0
                if depth == 0:
                    close = j
                    break
            if close > 0:
                inner = text[i + 1:close]
                if text[i] == "{" or ("=" in inner and any(c in inner for c in "({[")):
                    out.append("{…}" if text[i] == "{" else "(…)")
                    i = close + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def template(text: str) -> str:
    """A log message with what varies between occurrences of the same event replaced: the Java client's client
    ids (<client>), UUIDs and Kafka ids (<id>), addresses (<addr>), hex numbers and object hashes (<hex>), the
    harness's names (<name>), data dumps, then every other number (<n>: counts, offsets, broker and node ids,
    durations' values)."""
    text = _THREAD.sub("", text.strip())
    text = _CLIENT_ID.sub("<client>", text)
    text = _UUID.sub("<id>", text)
    text = _KAFKA_ID.sub("<id>", text)
    text = _ADDRESS.sub("<addr>", text)
    text = _HEX.sub("<hex>", text)
    text = _NAME.sub("<name>", text)
    text = _collapse(text)
    return " ".join(_SUPPRESSED.sub("", _NUMBER.sub("<n>", text)).split())


# librdkafka's own log line, `%LEVEL|SECONDS|FACILITY|CLIENT| message`, and the line a run folder's client log
# holds (logfile.py: `DATE TIME [LEVELNAME ]FACILITY [CLIENT] message`, the level only if its format writes it).
_RAW = re.compile(r"^%(?P<level>\d)\|[\d.]+\|(?P<fac>[^|]+)\|[^|]*\|\s*(?P<msg>.*)$")
_FILED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ (?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) )?"
                    r"(?P<fac>[A-Z][A-Z0-9_]*) \[[^\]]*\] (?P<msg>.*)$")
# The other implementations' children write their client's log to the same file (stderr): the Java client's
# through log4j's default console pattern, `HH:MM:SS.mmm [THREAD] LEVEL LOGGER - message` (the logger's class
# named by its last part), and kafka-python's and aiokafka's through pychild's logging format, `DATE TIME,MS
# LEVELNAME LOGGER: message`. Both log at WARN by default; their INFO and DEBUG (asked for when debugging) are not
# events, as a broker's are not.
_JAVA = re.compile(r"^\d\d:\d\d:\d\d\.\d+ \[[^\]]*\] (?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+"
                   r"(?:[\w$]+\.)*(?P<fac>[\w$]+) - (?P<msg>.*)$")
_PYTHON = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                     r"(?P<fac>[\w.]+): (?P<msg>.*)$")
_FOREIGN_LEVELS = ("WARN", "WARNING", "ERROR", "FATAL", "CRITICAL")
# Syslog levels kept: 0-5 (emergency .. notice), what librdkafka itself calls worth saying (a broker
# disconnected, a request timed out, a fatal error). 6 (info) is state chatter and 7 (debug) only what a
# `debug` setting asks for: counted as events, a try that sets `debug` would look new in every line.
MAX_CLIENT_LEVEL = 5
# Python's levels, as confluent-kafka maps librdkafka's onto them (notice and info both go to INFO, so INFO is
# kept: a notice must not be lost; debug is dropped).
_KEPT_NAMES = {"INFO", "WARNING", "ERROR", "CRITICAL"}


def client_events(lines: Iterable[str]) -> set[str]:
    """`client FAC: TEMPLATE` for each librdkafka log line at level notice or above (MAX_CLIENT_LEVEL); a line
    of the run folder's client log without a level is kept (librdkafka logs below info only when asked). A line
    of the Java client or of a Python client (FAC: its logger) counts at WARN and above."""
    out = set()
    for line in lines:
        m = _RAW.match(line)
        if m:
            if int(m["level"]) > MAX_CLIENT_LEVEL:
                continue
        elif m := _JAVA.match(line) or _PYTHON.match(line):
            if m["level"] not in _FOREIGN_LEVELS:
                continue
        else:
            m = _FILED.match(line)
            if not m or (m["level"] and m["level"] not in _KEPT_NAMES):
                continue
        out.add(f"client {m['fac'].strip()}: {template(m['msg'])}")
    return out


# A broker log's line: Kafka's log4j `[DATE TIME,MS] LEVEL message (logger)`, or Tansu's (Rust tracing)
# `TIMESTAMP LEVEL target: message`. A line that is neither (a stack trace's next lines) is not an event.
_KAFKA = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,.]+\] (?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (?P<msg>.*)$")
_TANSU = re.compile(r"^(?:\x1b\[[\d;]*m)*\d{4}-\d\d-\d\dT[\d:.]+Z?(?:\x1b\[[\d;]*m)*\s+(?:\x1b\[[\d;]*m)*"
                    r"(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)(?:\x1b\[[\d;]*m)*\s+(?P<msg>.*)$")
_ANSI = re.compile(r"\x1b\[[\d;]*m")
BROKER_LEVELS = ("WARN", "ERROR", "FATAL")


def broker_events(lines: Iterable[str]) -> set[str]:
    """`broker LEVEL: TEMPLATE` for each WARN, ERROR or FATAL line of a broker's log (its logger kept, its
    numbers not); a stack trace counts by its first line."""
    out = set()
    for line in lines:
        m = _KAFKA.match(line) or _TANSU.match(line)
        if m and m["level"] in BROKER_LEVELS:
            out.add(f"broker {m['level']}: {template(_ANSI.sub('', m['msg']))}")
    return out


def error_events(summary: dict, errors: Mapping[str, int]) -> set[str]:
    """`error NAME` for each librdkafka error the producers' delivery reports got (the caller counts acks.parquet's
    `error` column, of every variant) and each variant's client_fatal; `producer_error TEMPLATE` for the words of
    the exception that ended a producer (it has no name of its own when it was not fatal: a template of it)."""
    out = {f"error {name}" for name, count in errors.items() if name and count}
    for variant in (summary.get("variants") or {}).values():
        if variant.get("client_fatal"):
            out.add(f"error {variant['client_fatal']}")
        if variant.get("producer_error"):
            out.add(f"producer_error {template(variant['producer_error'])}")
    return out
