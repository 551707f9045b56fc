"""Ctrl-C and SIGTERM: the first interrupts the run, the second only says clean-up is running, the
third quits at once. Inside `deferred()` (writing summary.json, stopping what the run started) the
first signal is recorded and raised when the block ends, so what is recorded is never cut in half.
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; `code` is the exit code to use (130 or 143)."""

    def __init__(self, code: int):
        super().__init__(f"interrupted (exit {code})")
        self.code = code


_received: list[int] = []  # exit codes of the signals received, in order
_deferring = [0]  # depth of deferred() blocks
_raised = [False]  # the first signal has been raised as Interrupted


FIRST = "interrupted: healing the faults, stopping what the run started, writing summary.json"
SECOND = "still cleaning up (stopping what the run started, writing summary.json); interrupt again to quit at once"


def _say(text: str) -> None:
    # os.write, not sys.stderr: the handler may run while the main thread is inside a write to stderr, and a
    # buffered stream entered twice raises RuntimeError (reentrant call)
    try:
        os.write(2, f"\n{text}\n".encode())
    except OSError:
        pass  # stderr closed: nothing to tell


def _handler(signum, frame) -> None:
    _received.append(130 if signum == signal.SIGINT else 143)
    if len(_received) == 1:
        _say(FIRST)  # at once, so whoever pressed Ctrl-C knows it was heard while clean-up runs
        if not _deferring[0]:
            _raised[0] = True
            raise Interrupted(_received[0])
        return
    if len(_received) == 2:
        _say(SECOND)
        return
    os._exit(_received[0])


def install() -> None:
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


def received() -> int | None:
    """The exit code of the first signal, if one arrived."""
    return _received[0] if _received else None


def check() -> None:
    """Raise Interrupted if a signal arrived, also one whose Interrupted a library caught and dropped:
    py4j resends a command whose send a signal cut short (ERROR_ON_SEND), so a Ctrl-C landing there
    would otherwise let the run finish as if nothing had happened."""
    if _received:
        _raised[0] = True
        raise Interrupted(_received[0])


@contextmanager
def deferred():
    """Record a first signal instead of raising it; raise it when the block ends."""
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1
    if _received and not _raised[0] and not _deferring[0]:
        _raised[0] = True
        raise Interrupted(_received[0])


def interrupt_code(e: BaseException | None) -> int | None:
    """The exit code if `e` stems from a signal, else None.

    A signal that lands while C code runs a Python callback (librdkafka, dict views) can surface
    wrapped, e.g. as SystemError caused by Interrupted, so the recorded signal wins over the type.
    """
    if _received:
        return _received[0]
    while e is not None:
        if isinstance(e, Interrupted):
            return e.code
        if isinstance(e, KeyboardInterrupt):
            return 130
        e = e.__cause__ or e.__context__
    return None
