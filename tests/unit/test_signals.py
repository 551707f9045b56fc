"""A signal that surfaces wrapped by C code must still count as an interrupt, and nothing else must;
inside deferred() the first signal waits for the block to end."""

import os
import signal

import pytest

from harness import signals
from harness.signals import Interrupted, interrupt_code


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(signals, "_received", [])
    monkeypatch.setattr(signals, "_raised", [False])
    old = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGINT, old[0])
    signal.signal(signal.SIGTERM, old[1])


def wrapped(inner: BaseException) -> SystemError:
    try:
        try:
            raise inner
        except BaseException as e:
            raise SystemError("<method 'values' of 'dict' objects> returned a result with an exception set") from e
    except SystemError as outer:
        return outer


def test_wrapped_signal_is_an_interrupt():
    assert interrupt_code(wrapped(KeyboardInterrupt())) == 130
    assert interrupt_code(wrapped(Interrupted(143))) == 143


def test_plain_error_is_not_an_interrupt():
    assert interrupt_code(wrapped(ValueError("boom"))) is None
    assert interrupt_code(RuntimeError("boom")) is None


def test_recorded_signal_wins(monkeypatch):
    monkeypatch.setattr(signals, "_received", [143])
    assert interrupt_code(RuntimeError("raised while the signal handler ran")) == 143


def test_first_signal_raises_at_once():
    signals.install()
    with pytest.raises(Interrupted) as e:
        os.kill(os.getpid(), signal.SIGTERM)
    assert e.value.code == 143


def test_deferred_block_finishes_then_raises():
    signals.install()
    done = []
    with pytest.raises(Interrupted) as e:
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the block went on")
    assert done == ["the block went on"] and e.value.code == 130


def test_a_signal_a_library_swallowed_is_raised_by_check():
    signals.install()
    signals.check()  # nothing arrived: nothing raised
    try:  # what py4j does with an Interrupted raised while it sends a command: catch it and send again
        os.kill(os.getpid(), signal.SIGINT)
    except Exception:
        pass
    with pytest.raises(Interrupted) as e:
        signals.check()
    assert e.value.code == 130


def test_each_signal_says_at_once_what_it_did(capfd):
    signals.install()
    with pytest.raises(Interrupted):
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            assert capfd.readouterr().err.strip() == signals.FIRST  # heard, while clean-up goes on
            os.kill(os.getpid(), signal.SIGINT)
            assert capfd.readouterr().err.strip() == signals.SECOND
