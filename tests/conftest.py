"""Shared test set-up: every test gets its own MOSAIC_HOME, so nothing touches the real home."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

TESTS_DIR = Path(__file__).resolve().parent

#: Tests that need the heavy part of the test environment (torch, Ray, a browser, fresh
#: virtual environments with pip installs): marked ``heavy``, so ``./scripts/test --quick``
#: (``-m "not heavy"``) leaves them out. The full run (``./scripts/test``, CI) runs them.
HEAVY: dict[str, str] = {
    "worker_cleanrl/": "torch and CleanRL's algorithms",
    "instrument/test_guide_torch.py": "torch (the guide's torch SummaryWriter and CleanRL file)",
    "shm/test_shm_gpu_cuda.py": "torch (CUDA IPC observations; the round trip needs a GPU)",
    "sweeps/test_ray.py": "Ray Tune: starts Ray instances",
    "sweeps/test_ray_search.py": "Ray Tune: a local Ray instance",
    "watch/test_browser.py": "a headless Chromium",
    "watch/test_charts_browser.py": "a headless Chromium",
    "watch/test_sweep_browser.py": "a headless Chromium and a real sweep",
    "scaffold/test_end_to_end.py": "fresh virtual environments and pip installs",
}


def _by_prefix(path: Path, table: dict[str, str]) -> str | None:
    """The value of ``table`` whose key (a path under ``tests/``, a folder ending in ``/``)
    begins ``path``'s, or None (also for a file outside ``tests/``, such as the conformance
    suite collected with ``--pyargs mosaic_sdk.conformance``)."""
    resolved = path.resolve()
    if not resolved.is_relative_to(TESTS_DIR):
        return None
    relative = resolved.relative_to(TESTS_DIR).as_posix() + ("/" if resolved.is_dir() else "")
    return next((value for prefix, value in table.items() if relative.startswith(prefix)), None)


def heavy_reason(path: Path) -> str | None:
    """Why the test file (or folder) at ``path`` is heavy, or None."""
    return _by_prefix(path, HEAVY)


def deselects_heavy(markexpr: str) -> bool:
    """Whether ``-m markexpr`` leaves out every test marked heavy: ``not heavy`` alone or
    and-ed with other terms (``./scripts/test --quick`` gives ``-m "not heavy"``)."""
    if re.search(r"\bor\b|[()]", markexpr):
        return False
    return any(term.split() == ["not", "heavy"] for term in re.split(r"\band\b", markexpr))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A run that leaves out the heavy tests does not even import their files: quick mode
    installs no torch, Ray or CleanRL, and a heavy file that imports one of them at module
    level (tests/worker_cleanrl) would stop the collection with an error. A run without
    ``-m "not heavy"`` (the full run, CI) collects every file, so a broken install of a
    heavy package still fails there."""
    if heavy_reason(collection_path) is not None and deselects_heavy(
        config.getoption("markexpr") or ""
    ):
        return True
    return None


#: Tests that must not share the machine with each other: each group runs its tests one after
#: another in one xdist process (``--dist loadgroup``, scripts/test), while the other processes
#: go on with the rest. A Ray instance takes both cores while it starts, and a browser test
#: waits on frames arriving in time; two of either at once made each other time out.
SERIAL_GROUPS: dict[str, str] = {
    "sweeps/test_ray": "ray",
    "watch/test_browser.py": "browser",
    "watch/test_charts_browser.py": "browser",
    "watch/test_sweep_browser.py": "browser",
}


def serial_group(path: Path) -> str | None:
    """The xdist group of the test file at ``path``, or None (it may run beside anything)."""
    return _by_prefix(path, SERIAL_GROUPS)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the items
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if heavy_reason(item.path) is not None or item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.heavy)
        group = "ray" if item.get_closest_marker("ray") else serial_group(item.path)
        # The scaffold's end-to-end tests share one baked project and fresh venv per variant
        # (a module-scoped fixture): all of a variant's tests in one process build it once.
        params = getattr(getattr(item, "callspec", None), "params", {})
        if group is None and "baked" in params:
            group = f"scaffold-{params['baked']}"
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # Longest first: xdist hands out the groups (largest first), then single tests in this
    # order, a few at a time to whichever process is free; the heavy files (minutes each:
    # CleanRL's learning runs, fresh venvs) start early instead of making the run's tail.
    items.sort(key=lambda item: heavy_reason(item.path) is None)


class XdistGroupNames:
    """xdist (3.8) groups a test by appending ``@group`` to its node id through
    ``item._nodeid``, which pytest 9.2 no longer reads (its node id is ``item._id``): every
    group was silently spread over the processes. Where xdist's renaming did not take, this
    renames the way pytest 9.2 reads it; on a pytest where it took, it does nothing."""

    @pytest.hookimpl(trylast=True)  # after xdist's own renaming
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not getattr(config.option, "loadgroup", False):  # set in xdist's workers
            return
        from _pytest.nodeid import NodeId  # pytest >= 9.2, where the renaming needs it

        for item in items:
            groups = sorted({str(m.args[0]) for m in item.iter_markers("xdist_group") if m.args})
            if groups and "@" not in item.nodeid:
                item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistGroupNames(), "mosaic-xdist-group-names")


@pytest.fixture(autouse=True, scope="session")
def shared_plugin_probe_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache of plugin probe verdicts for the whole session (MOSAIC_PLUGIN_CACHE, children
    included): every test has a MOSAIC_HOME of its own, and the default cache under it would
    start a probe child in every test that discovers workers. Tests of the cache set their
    own."""
    path = tmp_path_factory.mktemp("plugin-probes") / "plugin-probes.json"
    old = os.environ.get("MOSAIC_PLUGIN_CACHE")
    os.environ["MOSAIC_PLUGIN_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("MOSAIC_PLUGIN_CACHE", None)
    else:
        os.environ["MOSAIC_PLUGIN_CACHE"] = old


@pytest.fixture(autouse=True)
def isolated_mosaic_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("mosaic-home")
    monkeypatch.setenv("MOSAIC_HOME", str(home))
    return home


@pytest.fixture
def plugin_fixtures(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put tests/plugin_fixtures on sys.path and PYTHONPATH (for launched children too)."""
    path = TESTS_DIR / "plugin_fixtures"
    monkeypatch.syspath_prepend(str(path))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(path) + (os.pathsep + old if old else ""))
    return path


# -- a hang guard ----------------------------------------------------------------------------
_T = TypeVar("_T")

#: Seconds a guarded call may take before the test calls it hung: a timeout, not a measure
#: (how fast a call returns belongs in benchmarks/), far above any normal run so that a loaded
#: machine never trips it.
HANG_LIMIT = 120.0


def returns(call: Callable[[], _T], limit: float = HANG_LIMIT) -> _T:
    """``call()``'s value (or its exception, raised here); AssertionError when it has not
    returned within ``limit`` seconds (it is left running in a daemon thread)."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - raised in the test's thread below
            out["error"] = exc

    thread = threading.Thread(target=run, name="hang-guard", daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        raise AssertionError(f"{call!r} did not return within {limit:g} s: it hangs")
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out["value"]  # type: ignore[return-value]
