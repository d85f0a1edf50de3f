"""The local Ray instance's end, without Ray: processes that name an instance's temp dir (and
their descendants) are ended by pid, nothing else; the watchdog does it when its driver dies."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import alive

from mosaic_sdk.sweeps.ray_instance import end_instance, instance_pids

#: A stand-in for an instance process: names DIR on its command line, starts a child that
#: does not (as raylet starts Ray's workers), prints the child's pid, sleeps.
PARENT = (
    "import subprocess, sys, time; "
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
    "print(c.pid, flush=True); time.sleep(120)"
)


@pytest.fixture
def temp_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mosaic-ray-"))
    yield path
    if path.exists():
        shutil.rmtree(path)


def _start(text: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT, f"--temp-dir={text}"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def test_end_instance_ends_its_processes_and_their_children_and_nothing_else(
    temp_dir: Path,
) -> None:
    ours, child = _start(f"{temp_dir}/session_latest")
    other, other_child = _start(f"{temp_dir}-other/x")  # a name that merely starts the same
    try:
        assert set(instance_pids(temp_dir)) == {ours.pid, child}
        assert end_instance(temp_dir, wait=1.0) == 2
        ours.wait(5)
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
        assert other.poll() is None and alive(other_child)
    finally:
        for proc, pid in ((ours, child), (other, other_child)):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


#: Like Ray's agents: a child that renames itself (its command line does not name DIR) and
#: outlives a SIGTERM, under a parent that names DIR and dies of one.
STUBBORN_CHILD = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(120)"
)
STUBBORN_PARENT = (
    "import subprocess, sys, time; "
    f"c = subprocess.Popen([sys.executable, '-c', {STUBBORN_CHILD!r}], stdout=subprocess.PIPE); "
    "c.stdout.readline(); print(c.pid, flush=True); time.sleep(120)"
)


def test_end_instance_ends_a_child_that_outlives_sigterm_after_its_parent_died(
    temp_dir: Path,
) -> None:
    """The hostile pass of issue 24: after a SIGKILL of the driver, Ray's DashboardAgent and
    RuntimeEnvAgent lived 62 s more. The raylet died of the SIGTERM, the agents did not; they
    were no longer its descendants when the SIGKILL round looked, so it missed them."""
    parent = subprocess.Popen(
        [sys.executable, "-c", STUBBORN_PARENT, f"--temp-dir={temp_dir}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert set(instance_pids(temp_dir)) == {parent.pid, child}
        assert end_instance(temp_dir, wait=0.5) == 2
        parent.wait(5)
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if alive(child):
            os.kill(child, signal.SIGKILL)


def test_the_watchdog_ends_the_instance_and_removes_its_dir_when_the_driver_dies(
    temp_dir: Path,
) -> None:
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    instance, child = _start(str(temp_dir))
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.sweeps.ray_instance", str(driver.pid)]
        + [str(temp_dir), "--remove"],
        start_new_session=True,
    )
    try:
        time.sleep(1.0)  # the watchdog waits while the driver lives
        assert watchdog.poll() is None and temp_dir.exists() and instance.poll() is None
        driver.kill()
        driver.wait()
        assert watchdog.wait(30) == 0
        instance.wait(5)
        assert not alive(child) and not temp_dir.exists()
    finally:
        for proc in (driver, instance, watchdog):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


#: Like a raylet: names DIR, starts a stubborn renamed child (see STUBBORN_CHILD), and dies
#: before anyone looks again (a raylet dies with its driver, at once).
DYING_PARENT = (
    "import subprocess, sys, time; "
    f"c = subprocess.Popen([sys.executable, '-c', {STUBBORN_CHILD!r}], stdout=subprocess.PIPE); "
    "c.stdout.readline(); print(c.pid, flush=True); time.sleep(1.5)"
)


def test_the_watchdog_ends_what_the_instance_was_even_after_its_named_processes_died(
    temp_dir: Path,
) -> None:
    """The hostile pass of issue 24 against a real instance: the raylet dies with the driver,
    so when the watchdog looks, Ray's agents (renamed, SIGTERM-proof) are orphans nothing ties
    to the temp dir; they lived a minute more. The watchdog now notes the instance's processes
    by pid while the driver lives."""
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.sweeps.ray_instance", str(driver.pid)]
        + [str(temp_dir), "--remove"],
        start_new_session=True,
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", DYING_PARENT, f"--temp-dir={temp_dir}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert parent.wait(10) == 0  # the named process is gone; its child lives on, renamed
        assert watchdog.poll() is None and alive(child)
        assert instance_pids(temp_dir) == [watchdog.pid]  # it names the dir: nothing else does
        driver.kill()
        driver.wait()
        assert watchdog.wait(30) == 0
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child), "the renamed child outlived the driver"
        assert not temp_dir.exists()
    finally:
        for proc in (driver, parent, watchdog):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if alive(child):
            os.kill(child, signal.SIGKILL)
