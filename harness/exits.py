"""Exit statuses, and the one mapping from what went wrong to a status and a one-line message.

Every command (run, analyze, report, doctor) ends through `exit_for_exception` or
`exit_for_verdict`: 0 held, 1 an expectation or a fatal anomaly failed, 2 bad input (nothing
started), 3 infrastructure or damaged data (the numbers cannot be trusted), 130/143 interrupted.
"""

from __future__ import annotations

import errno
from enum import IntEnum

from . import verdict
from .signals import interrupt_code


class Exit(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    INFRA = 3
    SIGINT = 130
    SIGTERM = 143


class HarnessError(Exception):
    """What the harness found wrong, as the user is told it: str() is the one-line message, `exit` the status.
    The errors of every layer derive from these, so this module needs none of them (it sits below them all)."""

    exit = Exit.INFRA


class UsageError(HarnessError):
    """Bad input found before anything started; str() names the file or option and what is allowed."""

    exit = Exit.USAGE


class InfraError(HarnessError, RuntimeError):
    """The cluster, the proxies or a child process failed: the run cannot be trusted (exit code 3)."""

    exit = Exit.INFRA


def exit_for_verdict(run_verdict: str, partial: bool = False) -> Exit:
    """A summary's verdict -> exit status. `partial`: the user asked to judge only complete variants."""
    if run_verdict == verdict.PASS:
        return Exit.OK
    if run_verdict == verdict.FAIL:
        return Exit.FAILED
    if run_verdict == verdict.INCOMPLETE and partial:
        return Exit.OK
    return Exit.INFRA


def exit_for_exception(e: BaseException) -> tuple[Exit, str]:
    """(status, one-line message) for anything a command can raise."""
    code = interrupt_code(e)
    if code is not None:
        return Exit(code), "interrupted"
    if isinstance(e, HarnessError):
        return e.exit, str(e)
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return Exit.INFRA, f"no space left on the device holding {e.filename or 'the run folder'}"
    if type(e).__module__.startswith(("py4j", "pyspark")):
        return Exit.INFRA, f"Spark failed: {spark_cause(e)}"
    return Exit.INFRA, f"the harness failed unexpectedly: {type(e).__name__}: {one_line(e)}"


def spark_cause(e: BaseException) -> str:
    """The root cause of a Spark error in one line. A Java error's text starts with py4j's "An error
    occurred while calling o106.getResult." and names the cause only in its last "Caused by:" line; a Python
    worker's starts with "An exception was thrown from the Python worker" and names it in the last line of its
    traceback."""
    text = str(e)
    worker = python_worker_error(text)
    if worker:
        return f"a Python worker raised {worker}"[:300]
    lines = [line.strip() for line in text.splitlines()]
    causes = [line.removeprefix("Caused by:").strip() for line in lines if line.startswith("Caused by:")]
    if not causes:
        causes = [line.removeprefix(":").strip() for line in lines[1:] if line.startswith(": ")]
    return causes[-1][:300] if causes and causes[-1] else one_line(e)


def python_worker_error(text: str) -> str | None:
    """The exception line that ends the first Python traceback in a text, alone or inside a Java error's
    (its last unindented line before the Java stack trace), or None when the text holds no traceback."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.endswith("Traceback (most recent call last):")), None)
    if start is None:
        return None
    tail = []
    for line in lines[start + 1:]:
        if line.startswith(("JVM stacktrace:", "\tat ")):  # a Java stack trace follows the Python one
            break
        if line.strip() and not line.startswith(" "):
            tail.append(line.strip())
    return tail[-1] if tail else None


def one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__
