"""``mosaic_sdk.runner`` is split into sub-packages; every module keeps the import path it had
when the package was flat (``mosaic_sdk.runner.NAME``), as the same module object."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import mosaic_sdk
from mosaic_sdk.runner import MOVED

RUNNER = Path(mosaic_sdk.__file__).parent / "runner"

#: Every module of mosaic_sdk.runner before the split (all of them are imported somewhere:
#: the SDK, the plugins, the tests, the docs or the benchmarks).
FLAT_MODULES = (
    "batching config_input control_client control_keys control_relay control_socket export ids "
    "ingest launch lifecycle lines live metrics observers outcome paths preflight printable "
    "private process proctree recorder reporting resolve rows run_control schema session_launch "
    "session_lifecycle signals stdin store supervisor writer"
).split()


def test_every_flat_module_is_at_the_top_or_moved() -> None:
    top = {p.stem for p in RUNNER.glob("*.py")} - {"__init__"}
    assert sorted(top | set(MOVED)) == sorted(FLAT_MODULES)
    assert not top & set(MOVED)
    for name, home in MOVED.items():
        assert (RUNNER / home / f"{name}.py").is_file(), (name, home)


def test_the_top_keeps_only_the_front() -> None:
    """Issue 23: ``runner/`` keeps a few modules at its top; the rest live in sub-packages."""
    top = {p.stem for p in RUNNER.glob("*.py")} - {"__init__"}
    assert top == {"supervisor", "live", "reporting", "printable"}


@pytest.mark.parametrize("name", sorted(MOVED))
def test_an_old_path_is_the_module_at_its_new_home(name: str) -> None:
    old = importlib.import_module(f"mosaic_sdk.runner.{name}")
    new = importlib.import_module(f"mosaic_sdk.runner.{MOVED[name]}.{name}")
    assert old is new
    assert new.__spec__ is not None and new.__spec__.name == new.__name__  # its own spec


def test_old_paths_work_first_in_a_fresh_process_and_patches_reach_the_new_home() -> None:
    code = "\n".join(
        [
            "import importlib, sys",
            "from mosaic_sdk.runner import MOVED",
            "from mosaic_sdk.runner.store import RunStore",
            "from mosaic_sdk.runner import observers, writer as w",
            "import mosaic_sdk.runner.lifecycle as lc",
            "from mosaic_sdk.runner.storage.store import RunStore as R2",
            "assert RunStore is R2",
            "import mosaic_sdk.runner.recording.observers as o2",
            "assert observers is o2",
            "observers.DELIVERY_INTERVAL = 123.0",  # what a test's monkeypatch does
            "assert o2.DELIVERY_INTERVAL == 123.0",
            "assert lc is sys.modules['mosaic_sdk.runner.supervision.lifecycle']",
            "for name, home in MOVED.items():",
            "    old = importlib.import_module('mosaic_sdk.runner.' + name)",
            "    assert old is importlib.import_module(f'mosaic_sdk.runner.{home}.{name}')",
            "print('ok')",
        ]
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_name_that_never_was_a_module_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mosaic_sdk.runner.no_such_module")
