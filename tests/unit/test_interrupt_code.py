"""A signal that surfaces wrapped by C code must still count as an interrupt, and nothing else must."""

from harness import runner
from harness.runner import Interrupted, interrupt_code


def wrapped(inner: BaseException) -> SystemError:
    try:
        try:
            raise inner
        except BaseException as e:
            raise SystemError("<method 'values' of 'dict' objects> returned a result with an exception set") from e
    except SystemError as outer:
        return outer


def test_wrapped_signal_is_an_interrupt(monkeypatch):
    monkeypatch.setattr(runner, "_signalled", [])
    assert interrupt_code(wrapped(KeyboardInterrupt())) == 130
    assert interrupt_code(wrapped(Interrupted(143))) == 143


def test_plain_error_is_not_an_interrupt(monkeypatch):
    monkeypatch.setattr(runner, "_signalled", [])
    assert interrupt_code(wrapped(ValueError("boom"))) is None
    assert interrupt_code(RuntimeError("boom")) is None


def test_recorded_signal_wins(monkeypatch):
    monkeypatch.setattr(runner, "_signalled", [143])
    assert interrupt_code(RuntimeError("raised while the signal handler ran")) == 143
