"""One installed plugin must not take the `mosaic` commands down (issue 30): a distribution whose
entry points exit (argparse parsing sys.argv, sys.exit(), os._exit()), raise what is not an
Exception (asyncio.CancelledError, KeyboardInterrupt), never return (at import or in the
factory) or print, pip-installed beside the example and CleanRL workers. Every command runs
in a `mosaic` child: each broken plugin is an error row, the others stay usable, `--json`
stays parseable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from guide_install import pip_install, site_env

HOSTILE = Path(__file__).resolve().parent / "plugin_fixtures" / "hostile_plugins"
#: Seconds each plugin has (MOSAIC_PLUGIN_TIMEOUT): the hanging ones cost this much a command.
TIMEOUT = "5"
EXPECTED_ERRORS = {
    "argv": "SystemExit",
    "exits": "SystemExit",
    "cancelled": "CancelledError",
    "interrupted": "KeyboardInterrupt",
    "hangs": "PluginTimeout",
    "hangs_import": "PluginTimeout",
    "osexit": "PluginEndedProcess",
    "osexit_import": "PluginEndedProcess",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("hostile")
    source = work / "src"
    shutil.copytree(HOSTILE, source)  # the build writes into its source tree
    target = work / "site"
    pip_install(source, target)
    assert list(target.glob("mosaic_hostile_plugins-0.1.0.dist-info"))
    return target


@pytest.fixture
def env(site: Path, tmp_path: Path) -> dict[str, str]:
    # the session's probe cache (tests/conftest.py): the working plugins are probed once
    return site_env(
        site,
        MOSAIC_PLUGIN_TIMEOUT=TIMEOUT,
        HOSTILE_IMPORT_LOG=str(tmp_path / "imports.log"),
    )


def mosaic(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


def test_workers_list_json_has_a_row_for_each_and_stays_json(env: dict[str, str]) -> None:
    done = mosaic(env, "workers", "list", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["name"]: row for row in json.loads(done.stdout)}  # the prints went elsewhere
    for name in ("example", "example_ma", "cleanrl", "printer", "counted"):
        assert rows[name]["ok"] is True, rows[name]
    errors = {
        n: r["error"]["error_type"]
        for n, r in rows.items()
        if not r["ok"] and r["distribution"] == "mosaic-hostile-plugins"
    }
    assert errors == EXPECTED_ERRORS
    assert "sys.exit(2)" in rows["argv"]["error"]["message"]
    assert "argparse" in rows["argv"]["error"]["message"]
    assert f"within {TIMEOUT} s" in rows["hangs"]["error"]["message"]
    assert "MOSAIC_PLUGIN_TIMEOUT" in rows["hangs_import"]["error"]["message"]
    assert "exit code 0" in rows["osexit"]["error"]["message"]
    assert "exit code 3" in rows["osexit_import"]["error"]["message"]
    assert "HOSTILE-PRINT from a factory" in done.stderr
    assert "HOSTILE-WRITE" in done.stderr and "HOSTILE" not in done.stdout


def test_workers_list_as_a_table_says_each_error(env: dict[str, str]) -> None:
    done = mosaic(env, "workers", "list")
    assert done.returncode == 0, done.stderr[-3000:]
    text = " ".join(done.stdout.split())
    assert "worker(s) failed to load; they are skipped" in text
    for error_type in set(EXPECTED_ERRORS.values()):
        assert error_type in text


def test_plugins_list_reports_the_observer_that_never_loads(env: dict[str, str]) -> None:
    done = mosaic(env, "plugins", "list", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["stuck"]["ok"] is False
    assert rows["stuck"]["error"]["error_type"] == "PluginTimeout"


def test_mosaic_run_of_another_worker_completes(env: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    done = mosaic(
        env,
        "run",
        "example",
        "--set",
        "episodes=1",
        "--set",
        "max_steps_per_episode=10",
        "--store",
        str(store),
        "--json",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["status"] == "completed"
    broken = mosaic(env, "run", "osexit", "--store", str(store))
    assert broken.returncode == 2
    assert "worker 'osexit' (from mosaic-hostile-plugins) is unavailable" in broken.stderr
    assert "PluginEndedProcess" in broken.stderr


def test_mosaic_sweep_of_another_worker_completes(env: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    done = mosaic(env, "sweep", "example", "--seeds", "1-2", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and len(result["trials"]) == 2


def test_a_plugin_that_loaded_once_is_not_probed_again_until_it_changes(
    env: dict[str, str], site: Path, tmp_path: Path
) -> None:
    log = Path(env["HOSTILE_IMPORT_LOG"])
    env = {
        **env,
        "MOSAIC_DISABLE_WORKERS": ",".join(EXPECTED_ERRORS),
        "MOSAIC_DISABLE_PLUGINS": "stuck",
        "MOSAIC_PLUGIN_CACHE": str(tmp_path / "probes.json"),  # its own: empty at first
    }

    def imports() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    done = mosaic(env, "workers", "show", "counted", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    first = imports()
    # once in the probe's child, once in the command's process, with the command's argv
    assert len(first) == 2 and len({line.split()[0] for line in first}) == 2
    assert all(line.endswith("workers show") for line in first)
    cache = json.loads(Path(env["MOSAIC_PLUGIN_CACHE"]).read_text())["loaded"]
    assert any('"counted"' in key for key in cache)
    assert not any('"osexit"' in key for key in cache)  # disabled: not even probed
    done = mosaic(env, "workers", "show", "counted", "--json")
    assert done.returncode == 0
    assert len(imports()) == 3  # the cache said it loads: no child this time
    module = site / "hostile_counted.py"
    stat = module.stat()
    try:
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        done = mosaic(env, "workers", "show", "counted", "--json")
        assert done.returncode == 0
        assert len(imports()) == 5  # a changed module is probed again
    finally:
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_disabled_plugins_are_not_loaded_or_probed(env: dict[str, str]) -> None:
    env = {
        **env,
        "MOSAIC_DISABLE_WORKERS": ",".join(EXPECTED_ERRORS),
        "MOSAIC_DISABLE_PLUGINS": "stuck",
    }
    done = mosaic(env, "workers", "list", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["name"]: row["ok"] for row in json.loads(done.stdout)}
    assert rows["example"] and rows["printer"] and rows["counted"]
    assert not set(EXPECTED_ERRORS) & set(rows)
    assert "stuck" not in mosaic(env, "plugins", "list").stdout
