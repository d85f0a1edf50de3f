"""mosaic_sdk.exit_status: an exit code in words, a signal by its name and number."""

from __future__ import annotations

import signal

from mosaic_sdk.exit_status import describe_exit, exit_status, signal_name


def test_a_signal_is_named() -> None:
    assert signal_name(11) == "SIGSEGV"
    assert signal_name(int(signal.SIGBUS)) == "SIGBUS"
    assert signal_name(1000) == "signal 1000"


def test_exit_status_is_a_noun_phrase() -> None:
    assert exit_status(-11) == "killed by signal SIGSEGV (-11)"
    assert exit_status(-9) == "killed by signal SIGKILL (-9)"
    assert exit_status(-1000) == "killed by signal 1000 (-1000)"
    assert exit_status(0) == "exit code 0"
    assert exit_status(3) == "exit code 3"
    assert exit_status(None) == "no exit code"


def test_describe_exit_is_a_verb_phrase() -> None:
    assert describe_exit(-11) == "was killed by signal SIGSEGV (-11)"
    assert describe_exit(2) == "exited with code 2"
    assert describe_exit(None) == "did not start"
    assert describe_exit(None, unknown="is still running") == "is still running"
