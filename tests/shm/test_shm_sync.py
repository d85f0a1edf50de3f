"""Signal lines: no lost wake-ups, no wake system call without sleepers, peer watching."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time

import pytest

from mosaic_sdk.shm.atomics import SharedWords
from mosaic_sdk.shm.sync import (
    DEFAULT_COMMAND_SPIN,
    PeerWatch,
    SignalLine,
    TransportTimeoutError,
    command_spin_budget,
    spin_budget,
)


class CountingWords:
    """SharedWords that counts futex_wake calls."""

    def __init__(self, buf: bytearray) -> None:
        self._w = SharedWords(buf)
        self.wakes = 0

    def futex_wake(self, off: int, count: int) -> int:
        self.wakes += 1
        return int(self._w.futex_wake(off, count))

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._w, name)


def line() -> tuple[CountingWords, SignalLine]:
    words = CountingWords(bytearray(64))
    return words, SignalLine(words, 0, 8, 16)


def never() -> None:
    return None


def test_publisher_skips_the_wake_call_when_nobody_sleeps() -> None:
    words, sig = line()
    for i in range(1, 100):
        sig.publish(i)
    assert words.wakes == 0
    assert sig.load() == 99
    assert sig.wait_seq(50, 0.0, None, never) == 99  # already there: returns at once


def test_a_sleeping_waiter_is_woken_and_deregisters() -> None:
    words, sig = line()
    seen = []

    def waiter() -> None:
        seen.append(sig.wait_seq(1, 0.0, time.monotonic() + 30, never))

    thread = threading.Thread(target=waiter)
    thread.start()
    while words.load_u64(16) == 0:  # wait until it sleeps
        time.sleep(0.001)
    sig.publish(1)
    thread.join(30)
    assert seen == [1]
    assert words.wakes >= 1
    assert words.load_u64(16) == 0, "waiter count back to zero"


def test_many_handoffs_between_threads_lose_no_wake_up() -> None:
    _, ping = line()
    _, pong = line()
    rounds = 2000

    def echo() -> None:
        for i in range(1, rounds + 1):
            ping.wait_seq(i, 0.0, time.monotonic() + 30, never)
            pong.publish(i)

    thread = threading.Thread(target=echo)
    thread.start()
    for i in range(1, rounds + 1):
        ping.publish(i)
        assert pong.wait_seq(i, 0.0, time.monotonic() + 30, never) >= i
    thread.join(30)


def test_wait_times_out_and_check_can_abort() -> None:
    _, sig = line()
    with pytest.raises(TransportTimeoutError):
        sig.wait_seq(1, 0.0, time.monotonic() + 0.1, never)

    def gone() -> None:
        raise RuntimeError("peer gone")

    with pytest.raises(RuntimeError, match="peer gone"):
        sig.wait_until(lambda: False, 0.0, None, gone)


def test_spin_budget_adapts_down_when_spinning_does_not_pay() -> None:
    _, sig = line()
    with pytest.raises(TransportTimeoutError):
        sig.wait_seq(1, 1e-3, time.monotonic() + 0.06, never)
    assert sig._adaptive == pytest.approx(0.5e-3)
    sig._countdown = 1  # next wait is a probe with the full budget
    assert sig._budget(1e-3) == 1e-3
    sig._adaptive = 0.0
    sig._missed(1e-3)  # a failed probe leaves spinning off
    assert sig._adaptive == 0.0
    sig._spun(10e-6, 1e-3)  # a probe that caught the peer after 10 us
    assert sig._adaptive == pytest.approx(20e-6)


def test_spin_budget_from_argument_or_environment(monkeypatch) -> None:
    assert spin_budget(20e-6) == 20e-6
    monkeypatch.setenv("MOSAIC_SHM_SPIN_US", "15")
    assert spin_budget(None) == pytest.approx(15e-6)
    monkeypatch.setenv("MOSAIC_SHM_SPIN_US", "fast")
    with pytest.raises(ValueError, match="MOSAIC_SHM_SPIN_US"):
        spin_budget(None)
    with pytest.raises(ValueError, match=">= 0"):
        spin_budget(-1.0)


def test_command_spin_budget_has_its_own_variable_and_default(monkeypatch) -> None:
    monkeypatch.delenv("MOSAIC_SHM_COMMAND_SPIN_US", raising=False)
    monkeypatch.setenv("MOSAIC_SHM_SPIN_US", "7")  # the step budget's variable: not this one
    assert command_spin_budget(None) == DEFAULT_COMMAND_SPIN
    assert command_spin_budget(0.0) == 0.0
    monkeypatch.setenv("MOSAIC_SHM_COMMAND_SPIN_US", "40")
    assert command_spin_budget(None) == pytest.approx(40e-6)
    assert spin_budget(None) == pytest.approx(7e-6)
    monkeypatch.setenv("MOSAIC_SHM_COMMAND_SPIN_US", "-3")
    with pytest.raises(ValueError, match="MOSAIC_SHM_COMMAND_SPIN_US must be >= 0"):
        command_spin_budget(None)


def test_a_twin_line_wakes_on_the_same_bell_and_adapts_on_its_own() -> None:
    words, sig = line()
    twin = sig.twin()
    flag = []
    done = []

    def waiter() -> None:  # sleeps on the twin (no spin) until the flag is set
        twin.wait_until(lambda: bool(flag), 0.0, time.monotonic() + 30, never)
        done.append(True)

    thread = threading.Thread(target=waiter)
    thread.start()
    while words.load_u64(16) == 0:  # wait until it sleeps
        time.sleep(0.001)
    flag.append(1)
    sig.ring()  # rung through the original line
    thread.join(30)
    assert done == [True] and words.wakes >= 1
    with pytest.raises(TransportTimeoutError):  # a spin that catches nothing...
        sig.wait_seq(1, 1e-3, time.monotonic() + 0.06, never)
    assert sig._adaptive == pytest.approx(0.5e-3)  # ...lowers that line's budget only
    assert twin._adaptive == float("inf")


def test_peer_watch_sees_exit_even_before_the_parent_reaps() -> None:
    proc = mp.get_context("fork").Process(target=os._exit, args=(0,))
    proc.start()
    watch = PeerWatch(proc.pid)
    deadline = time.monotonic() + 10
    while watch.alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not watch.alive(), "a zombie is not a live peer"
    watch.close()
    proc.join()
    assert PeerWatch(os.getpid()).alive()
