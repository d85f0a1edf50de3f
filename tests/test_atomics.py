"""The shared atomics helper: both implementations, bounds, alignment and cross-process wake."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import threading
import time

import pytest

from mosaic_sdk.shm import atomics
from mosaic_sdk.shm.atomics import PythonSharedWords


def implementations():
    impls = [PythonSharedWords]
    if atomics.IMPLEMENTATION == "native":
        impls.append(atomics._IMPL)
    return impls


@pytest.mark.parametrize("impl", implementations(), ids=lambda c: c.__module__)
def test_loads_stores_and_rmw(impl) -> None:
    buf = bytearray(64)
    w = impl(buf)
    w.store_u64(8, 2**63 + 5)
    assert w.load_u64(8) == 2**63 + 5
    assert int.from_bytes(buf[8:16], "little") == 2**63 + 5  # little-endian, in place
    w.store_u32(4, 7)
    assert w.fetch_or_u32(4, 8) == 7 and w.load_u32(4) == 15
    assert w.fetch_and_u32(4, 3) == 15 and w.load_u32(4) == 3
    assert w.fetch_add_u64(16, 3) == 0 and w.load_u64(16) == 3
    assert w.cas_u64(16, 3, 9) and not w.cas_u64(16, 3, 10) and w.load_u64(16) == 9
    assert w.cas_u32(0, 0, 1) and w.load_u32(0) == 1
    w.store_f64(24, 1.25)
    assert w.load_f64(24) == 1.25
    with pytest.raises(ValueError, match="aligned"):
        w.load_u64(4)
    with pytest.raises(IndexError, match="outside"):
        w.store_u32(64, 1)
    w.release()
    with pytest.raises(ValueError, match="released"):
        w.load_u32(0)


def test_release_lets_an_mmap_close() -> None:
    m = mmap.mmap(-1, 4096)
    w = atomics.SharedWords(m)
    w.store_u64(0, 1)
    w.release()
    m.close()  # would raise BufferError if the buffer were still exported


@pytest.mark.skipif(not atomics.HAVE_FUTEX, reason="futex needs the native helper on Linux")
def test_futex_wakes_a_waiter_in_another_process() -> None:
    m = mmap.mmap(-1, 4096)  # anonymous shared mapping, inherited across fork
    w = atomics.SharedWords(m)
    pid = os.fork()
    if pid == 0:  # child: wait for the word to change, then acknowledge
        try:
            woke = w.futex_wait(0, 0, 10.0)
            w.store_u32(4, 1 if woke and w.load_u32(0) == 1 else 2)
        finally:
            os._exit(0)
    time.sleep(0.1)
    w.store_u32(0, 1)
    w.futex_wake(0, 1)
    os.waitpid(pid, 0)
    assert w.load_u32(4) == 1
    assert w.futex_wait(0, 5, 0.01) is True  # value differs: returns at once
    assert w.futex_wait(0, 1, 0.05) is False  # times out: not woken
    w.release()
    m.close()


def test_python_fallback_wait_sees_a_store_from_another_thread() -> None:
    buf = bytearray(8)
    w = PythonSharedWords(buf)
    threading.Timer(0.05, lambda: w.store_u32(0, 1)).start()
    assert w.futex_wait(0, 0, 5.0) is True


def test_fallback_can_be_forced_and_bad_values_are_refused() -> None:
    code = "from mosaic_sdk.shm import atomics; print(atomics.IMPLEMENTATION)"
    env = {**os.environ, "MOSAIC_ATOMICS": "python"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "python"
    env["MOSAIC_ATOMICS"] = "magic"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "MOSAIC_ATOMICS='magic' is not understood" in out.stderr


def test_fallback_refuses_cpus_that_reorder_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomics, "IMPLEMENTATION", "python")
    monkeypatch.setattr(atomics.platform, "machine", lambda: "aarch64")
    with pytest.raises(atomics.AtomicsUnavailableError, match="aarch64"):
        atomics.SharedWords(bytearray(8))
