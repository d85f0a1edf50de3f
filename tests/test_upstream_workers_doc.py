"""Every snippet of docs/guides/upstream-workers.md runs here.

Each fenced block of the page is preceded by ``<!-- snippet: NAME -->``; the page must have
exactly the snippets this module tests (a new snippet without a test fails)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from guide_install import (  # noqa: F401 - fixtures
    GUIDE_PACKAGE,
    guide_site,
    installed,
    on_path,
    pip_install,
    rows,
    run_interrupted,
)

from mosaic_sdk.contract import unwrap_job_descriptor
from mosaic_sdk.plugins import discover_workers
from mosaic_sdk.plugins.gym_gui_stand_in import uninstall_gym_gui_stand_in
from mosaic_sdk.runner import run_worker
from mosaic_sdk.telemetry import classify_line, validate_line

tomllib = pytest.importorskip("tomllib")

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "upstream-workers.md"
MARK = re.compile(r"^\s*<!-- snippet: ([\w-]+) -->\s*$")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def snippets() -> dict[str, tuple[str, str]]:
    """name -> (language, code) for every marked block; unmarked blocks are an error."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    found: dict[str, tuple[str, str]] = {}
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        mark = MARK.match(lines[i - 1]) if i else None
        assert mark, f"the block at line {i + 1} of {PAGE.name} has no snippet marker"
        indent, language = fence.groups()
        end = i + 1
        while lines[end].strip() != "```":
            end += 1
        code = textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n"
        assert mark.group(1) not in found, f"snippet {mark.group(1)} appears twice"
        found[mark.group(1)] = (language, code)
        i = end + 1
    return found


SNIPPETS = snippets()
TESTED = {
    "guide-entry-point",
    "job-descriptor",
    "flat-config",
    "read-either-form",
    "stand-in-emitter",
    "launcher",
    "conformance-table",
    "fixed-runtime",
    "fixed-cli",
    "sdk-config",
    "sdk-runtime",
    "sdk-cli",
    "sdk-plugin",
    "sdk-entry-point",
}


def code(name: str) -> str:
    return SNIPPETS[name][1]


def test_every_snippet_is_tested() -> None:
    assert set(SNIPPETS) == TESTED


def test_the_guide_entry_point_is_the_fixtures() -> None:
    shown = tomllib.loads(code("guide-entry-point"))
    fixture = tomllib.loads((GUIDE_PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))
    assert shown["project"]["entry-points"] == fixture["project"]["entry-points"]


# --- the config file ---------------------------------------------------------------------


@pytest.mark.usefixtures("installed")
def test_the_worker_receives_the_flat_form(tmp_path: Path) -> None:
    flat = json.loads(code("flat-config"))
    given = {k: v for k, v in flat.items() if k not in ("run_id", "seed")}
    result = run_worker("myworker", given, run_id=flat["run_id"], store=tmp_path / "s.sqlite")
    assert result.status == "completed", result.error
    assert json.loads((result.run_dir / "config.json").read_text()) == flat

    descriptor = json.loads(code("job-descriptor"))
    result = run_worker("myworker", descriptor, store=tmp_path / "s.sqlite")
    assert result.status == "completed", result.error
    received = json.loads((result.run_dir / "config.json").read_text())
    assert received == {**flat, "run_id": descriptor["run_id"]}


def test_reading_either_form_without_the_sdk_agrees_with_the_sdk() -> None:
    namespace: dict[str, Any] = {}
    exec(code("read-either-form"), namespace)
    worker_config = namespace["worker_config"]
    nested = {"algorithm": "ppo"}
    for data in (
        json.loads(code("flat-config")),
        json.loads(code("job-descriptor")),
        {"metadata": {"run_id": "m", "worker": {"config": nested}}},
        {"run_id": "top", "metadata": {"worker": {"config": {**nested, "run_id": "in"}}}},
        {"metadata": "not a table", "algorithm": "ppo"},
        {"metadata": {"worker": {"config": "not a table"}}, "run_id": "x"},
    ):
        assert worker_config(data) == unwrap_job_descriptor(data), data


# --- the stand-in ------------------------------------------------------------------------


@pytest.mark.usefixtures("installed")
def test_the_stand_in_emitter_snippet_writes_lifecycle_lines(tmp_path: Path) -> None:
    (tmp_path / "emitter_snippet.py").write_text(code("stand-in-emitter"))
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.plugins.gym_gui_stand_in", "emitter_snippet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["run_started", "run_completed"]
    for line in lines:
        assert classify_line(line).kind == "lifecycle"
        assert validate_line(json.loads(line)) == []


@pytest.mark.usefixtures("installed")  # sets PYTHONPATH for the child
def test_the_launcher_command_runs_the_guide_worker(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(code("flat-config"))
    [command] = [ln for ln in code("launcher").splitlines() if ln.startswith("$ ")]
    argv = shlex.split(command[2:])
    assert argv[0] == "python"
    done = subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(ln).get("event") for ln in done.stdout.splitlines()]
    assert events[0] == "run_started" and events[-1] == "run_completed"


# --- the conformance config --------------------------------------------------------------


@pytest.mark.usefixtures("installed")
def test_the_conformance_table_is_a_working_config_of_the_guide_worker(tmp_path: Path) -> None:
    table = tomllib.loads(code("conformance-table"))["tool"]["mosaic"]["conformance"]
    from my_worker.config import MyWorkerConfig  # the installed guide package

    assert "run_id" not in table
    fixture = tomllib.loads((GUIDE_PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))
    assert fixture["tool"]["mosaic"]["conformance"] == table  # the fixture follows the page
    assert set(table) <= set(MyWorkerConfig.__dataclass_fields__)  # the worker's own keys
    result = run_worker("myworker", table, store=tmp_path / "s.sqlite")
    assert result.status == "completed", result.error
    assert result.counts["steps"] == 10


def test_the_conformance_table_is_what_the_suite_reads(tmp_path: Path) -> None:
    source = pytest.importorskip(
        "mosaic_sdk.conformance.config_source",
        reason="the [tool.mosaic.conformance] reader is on another branch",
    )
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(code("conformance-table"))
    table = tomllib.loads(code("conformance-table"))["tool"]["mosaic"]["conformance"]
    assert source.read_pyproject(pyproject) == table


# --- fixing the guide's defects ----------------------------------------------------------


@pytest.fixture
def fixed_guide_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The guide's package with the page's runtime.py, from source through MOSAIC_PLUGINS."""
    uninstall_gym_gui_stand_in()
    root = tmp_path / "fixed"
    (root / "my_worker").mkdir(parents=True)
    for name in ("__init__.py", "config.py"):
        source = GUIDE_PACKAGE / "my_worker" / name
        (root / "my_worker" / name).write_text(source.read_text(encoding="utf-8"))
    (root / "my_worker" / "runtime.py").write_text(code("fixed-runtime"))
    (root / "my_worker" / "cli.py").write_text(code("fixed-cli"))
    on_path(root, monkeypatch)
    monkeypatch.setenv("MOSAIC_PLUGINS", "myworker=my_worker:get_worker_metadata")
    monkeypatch.setenv("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "1")
    return root


def _raw_lines(store: Path, run_id: str) -> list[dict[str, Any]]:
    found = rows(
        store,
        "SELECT line_no, raw FROM steps WHERE run_id = ? UNION ALL "
        "SELECT line_no, raw FROM episodes WHERE run_id = ? UNION ALL "
        "SELECT line_no, raw FROM events WHERE run_id = ? AND NOT synthesised "
        "ORDER BY line_no",
        run_id,
        run_id,
        run_id,
    )
    return [json.loads(raw) for _, raw in found]


@pytest.mark.usefixtures("fixed_guide_worker")
def test_the_fixed_runtime_writes_lines_the_proxy_forwards(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = run_worker("myworker", {"total_steps": 250}, run_id="fixed-1", store=store)
    assert result.status == "completed", result.error
    lines = _raw_lines(store, "fixed-1")
    assert lines[0]["event"] == "run_started" and lines[-1]["event"] == "run_completed"
    typed = [line for line in lines if "event" not in line]
    assert [line["type"] for line in typed] == ["step"] * 4 + ["episode"]
    assert [line["step_index"] for line in typed[:-1]] == [0, 100, 200, 249]
    assert all("episode_index" in line for line in typed)
    assert result.counts["log_lines"] == 0


@pytest.fixture(scope="module")
def fixed_guide_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install` of the guide's package with the page's runtime.py and cli.py: installed,
    so the suite reads its [tool.mosaic.conformance] table (the page's: 1,000 steps)."""
    work = tmp_path_factory.mktemp("fixed-guide")
    source = work / "src"
    shutil.copytree(GUIDE_PACKAGE, source)  # the build writes into its source tree
    (source / "my_worker" / "runtime.py").write_text(code("fixed-runtime"))
    (source / "my_worker" / "cli.py").write_text(code("fixed-cli"))
    target = work / "site"
    pip_install(source, target)
    return target


def test_the_fixed_cli_runs_as_the_platforms_dispatcher_launches_it(
    fixed_guide_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mosaic_sdk.conformance import check_worker

    uninstall_gym_gui_stand_in()
    on_path(fixed_guide_site, monkeypatch)
    monkeypatch.delenv("MOSAIC_PLUGINS", raising=False)
    # the one check, on the conformance table's short run (not the 100k-step default)
    (result,) = check_worker(
        "myworker", on_fail=None, level="platform", checks=["cli.dispatcher_launch"]
    )
    assert result.verdict == "passed", result.reason
    assert result.reason == "exit 0, 12 step/episode lines for the platform's proxy"


@pytest.mark.usefixtures("fixed_guide_worker")
def test_the_fixed_runtime_honours_sigterm(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = run_interrupted(store, "fixed-2", 2, lambda sup, _: sup.cancel("test"))
    assert result.status == "cancelled" and result.exit_code == 0
    assert result.synthesised == []  # the worker wrote its own terminal event
    assert _raw_lines(store, "fixed-2")[-1]["event"] == "run_cancelled"


# --- moving to the SDK -------------------------------------------------------------------


@pytest.fixture
def sdk_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The page's SDK version of the worker, from source, named by the page's entry point."""
    root = tmp_path / "moved"
    package = root / "my_worker"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for module in ("config", "runtime", "cli", "plugin"):
        (package / f"{module}.py").write_text(code(f"sdk-{module}"))
    on_path(root, monkeypatch)
    points = tomllib.loads(code("sdk-entry-point"))["project"]["entry-points"]["mosaic.workers"]
    monkeypatch.setenv("MOSAIC_PLUGINS", ",".join(f"{k}={v}" for k, v in points.items()))
    monkeypatch.setenv("MOSAIC_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("MOSAIC_HEARTBEAT_INTERVAL", "0.1")
    return root


@pytest.mark.usefixtures("sdk_worker")
def test_the_moved_worker_is_an_sdk_plugin_and_runs(tmp_path: Path) -> None:
    handle = discover_workers().get("myworker")
    assert handle.style == "plugin"
    assert handle.plugin is sys.modules["my_worker.plugin"]  # the module the factory carries
    meta, caps = handle.describe()
    assert meta.upstream_library is None and caps.supports_checkpointing
    # the conformance config moved from the table into the hook, unchanged
    table = tomllib.loads(code("conformance-table"))["tool"]["mosaic"]["conformance"]
    assert handle.conformance_config() == table
    with pytest.raises(ValueError, match="total_steps"):
        handle.config_model().from_dict({"run_id": "r", "total_steps": 0})
    store = tmp_path / "s.sqlite"
    result = run_worker("myworker", {**table, "total_steps": 300}, run_id="sdk-1", store=store)
    assert result.status == "completed", result.error
    assert result.counts["steps"] == 300 and result.counts["episodes"] == 1
    events = [line["event"] for line in _raw_lines(store, "sdk-1") if "event" in line]
    assert events[0] == "run_started" and events[-1] == "run_completed"
    assert "heartbeat" in events
    for line in _raw_lines(store, "sdk-1"):
        assert validate_line(line) == [], line


@pytest.mark.usefixtures("sdk_worker")
def test_the_moved_worker_is_cancelled_cleanly(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = run_interrupted(store, "sdk-2", 5, lambda sup, _: sup.cancel("test"))
    assert result.status == "cancelled" and result.exit_code == 128 + signal.SIGTERM
    assert result.synthesised == []
    assert _raw_lines(store, "sdk-2")[-1]["event"] == "run_cancelled"


@pytest.mark.usefixtures("sdk_worker", "plugin_fixtures")
def test_the_platform_discovers_the_moved_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's entry point, loaded as the platform loads it, against platform-shaped
    ``gym_gui.core.worker`` classes (tests/plugin_fixtures/platform_shaped.py)."""
    from importlib.metadata import EntryPoint

    import platform_shaped

    monkeypatch.syspath_prepend(str(platform_shaped.write_gym_gui(tmp_path / "gui")))
    points = tomllib.loads(code("sdk-entry-point"))["project"]["entry-points"]["mosaic.workers"]
    forget = [n for n in sys.modules if n == "gym_gui" or n.startswith("gym_gui.")]
    for name in forget:
        monkeypatch.delitem(sys.modules, name)
    try:
        found, skipped = platform_shaped.platform_discover(
            [EntryPoint(k, v, "mosaic.workers") for k, v in points.items()]
        )
    finally:
        for name in [n for n in sys.modules if n == "gym_gui" or n.startswith("gym_gui.")]:
            del sys.modules[name]
    assert skipped == {}
    meta, caps = found["myworker"]
    assert type(caps) is platform_shaped.PlatformCapabilities and caps.worker_type == "myworker"
    assert meta.upstream_library is None
