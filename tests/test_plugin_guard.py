"""The guards of discovery, in-process and through the probe's child (issue 30): what a plugin
raises (BaseException included), a call that never returns, what it prints, a plugin that ends
the process that loads it. The CLI end to end, with an installed distribution:
tests/test_hostile_plugins.py."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from mosaic_sdk.plugins import discover_workers, load_unchecked
from mosaic_sdk.plugins.guard import (
    DEFAULT_TIMEOUT,
    PluginTimeout,
    plugin_output_to_stderr,
    plugin_timeout,
    run_guarded,
)
from mosaic_sdk.plugins.probe import ProbeItem, forget, module_fingerprint, probe

HOSTILE = Path(__file__).resolve().parent / "plugin_fixtures" / "hostile_plugins"


def _raise(exc: BaseException) -> None:
    raise exc


@pytest.mark.parametrize(
    "exc",
    [SystemExit(2), KeyboardInterrupt(), asyncio.CancelledError(), GeneratorExit(), ValueError()],
)
def test_whatever_a_guarded_call_raises_is_its_outcome(exc: BaseException) -> None:
    outcome = run_guarded("x", lambda: _raise(exc), 30)
    assert outcome.finished and outcome.error is exc


def test_a_guarded_call_that_never_returns_is_left_behind() -> None:
    never = threading.Event()
    outcome = run_guarded("stuck", never.wait, 0.2)
    assert not outcome.finished and isinstance(outcome.error, PluginTimeout)
    assert "within 0.2 s" in str(outcome.error)
    never.set()
    assert run_guarded("fine", lambda: 42, 30).value == 42


def test_the_time_bound_comes_from_the_environment() -> None:
    assert plugin_timeout({}) == DEFAULT_TIMEOUT
    assert plugin_timeout({"MOSAIC_PLUGIN_TIMEOUT": "2.5"}) == 2.5
    for bad in ("0", "-1", "soon", "nan", "inf"):
        assert plugin_timeout({"MOSAIC_PLUGIN_TIMEOUT": bad}) == DEFAULT_TIMEOUT


def test_what_other_threads_print_while_plugins_load_goes_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with plugin_output_to_stderr():
        print("from the command")
        thread = threading.Thread(target=lambda: print("from a plugin"))
        thread.start()
        thread.join()
        run_guarded("p", lambda: sys.stdout.write("from a loader\n"), 30)
    print("after")
    out, err = capsys.readouterr()
    assert out == "from the command\nafter\n"
    assert err == "from a plugin\nfrom a loader\n"


def test_binary_writes_of_a_loader_go_to_stderr_too(
    capfdbinary: pytest.CaptureFixture[bytes],
) -> None:
    with plugin_output_to_stderr():
        run_guarded("b", lambda: (sys.stdout.buffer.write(b"raw bytes\n"), sys.stdout.flush()), 30)
        sys.stdout.write("mine\n")
        sys.stdout.flush()
    out, err = capfdbinary.readouterr()
    assert out == b"mine\n" and err == b"raw bytes\n"


#: What the hanging factory waits for: set when its test ends, so no thread is left behind.
RELEASE = threading.Event()


def _factory(kind: str):
    def factory():
        if kind == "exit":
            sys.exit("bye")
        if kind == "cancel":
            raise asyncio.CancelledError
        if kind == "hang":
            RELEASE.wait()
        if kind == "print":
            print("PRINTED while describing")
        meta = SimpleNamespace(name=kind, version="1.0")
        return meta, SimpleNamespace(worker_type=kind)

    return factory


def test_discovery_in_process_survives_plugins_given_as_objects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # objects given in-process cannot be probed in a child: the guard alone stands
    try:
        registry = discover_workers(
            environ={"MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1", "MOSAIC_PLUGIN_TIMEOUT": "1"},
            extra={kind: _factory(kind) for kind in ("exit", "cancel", "hang", "print", "fine")},
        )
    finally:
        RELEASE.set()
    assert sorted(registry.workers) == ["fine", "print"]
    assert {n: e.error_type for n, e in registry.errors.items()} == {
        "exit": "SystemExit",
        "cancel": "CancelledError",
        "hang": "PluginTimeout",
    }
    assert "sys.exit('bye')" in registry.errors["exit"].message
    assert registry.pm.get_plugin("worker:hang") is None  # nothing half-registered
    out, err = capsys.readouterr()
    assert out == "" and "PRINTED while describing" in err


def test_the_probe_tells_each_outcome_apart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(HOSTILE))
    monkeypatch.setenv("MOSAIC_PLUGIN_CACHE", str(tmp_path / "probes.json"))
    items = [
        ProbeItem("worker", "osexit", "hostile_factories:calls_os_exit"),
        ProbeItem("worker", "argv", "hostile_factories:parses_argv"),
        ProbeItem("worker", "hangs_import", "hostile_hang_import:get_worker_metadata"),
        ProbeItem("worker", "printer", "hostile_factories:prints"),
        ProbeItem("worker", "osexit_import", "hostile_exit_import:get_worker_metadata"),
        ProbeItem("plugin", "stuck", "hostile_stuck_plugin"),
        ProbeItem("worker", "missing", "no_such_module_for_mosaic_tests:f"),
    ]
    verdicts = probe(items, 3)
    kinds = {items[i].name: (v.error_type if v else None) for i, v in verdicts.items()}
    assert kinds == {
        "osexit": "PluginEndedProcess",
        "argv": "SystemExit",
        "hangs_import": "PluginTimeout",
        "printer": None,
        "osexit_import": "PluginEndedProcess",
        "stuck": "PluginTimeout",
        "missing": "ModuleNotFoundError",
    }
    ended = verdicts[4]
    assert ended is not None and "exit code 3" in ended.message
    assert "HOSTILE-PRINT at import" in ended.traceback  # its output, kept for the record


def test_the_probe_remembers_what_loaded_until_it_is_forgotten(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(HOSTILE))
    monkeypatch.setenv("MOSAIC_PLUGIN_CACHE", str(tmp_path / "probes.json"))
    log = tmp_path / "imports.log"
    monkeypatch.setenv("HOSTILE_IMPORT_LOG", str(log))
    counted = ProbeItem("worker", "counted", "hostile_counted:get_worker_metadata")
    broken = ProbeItem("worker", "argv", "hostile_factories:parses_argv")
    assert probe([counted, broken], 10)[0] is None
    assert len(log.read_text().splitlines()) == 1  # imported once, in a child
    verdicts = probe([counted, broken], 10)
    assert verdicts[0] is None and verdicts[1] is not None  # a failure is probed again
    assert len(log.read_text().splitlines()) == 1  # the one that loaded was not
    forget([counted])
    assert probe([counted], 10) == {0: None}
    assert len(log.read_text().splitlines()) == 2


def test_a_module_is_found_for_its_fingerprint_without_running_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(HOSTILE))
    found = module_fingerprint("hostile_exit_import:get_worker_metadata")  # would os._exit
    assert found is not None and found[0] == str(HOSTILE / "hostile_exit_import.py")
    assert "hostile_exit_import" not in sys.modules
    assert module_fingerprint("mosaic_sdk.plugins.probe_child:main") is not None
    assert module_fingerprint("no_such_module_for_mosaic_tests") is None
    assert module_fingerprint("not a name") is None


def test_load_unchecked_skips_the_checks_but_not_the_guards(
    plugin_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the conformance suite loads a worker discovery refuses (a worker_type that differs from
    # its name) without the checks; the probe's child made the checks, so only what would
    # take the process down is taken from it
    monkeypatch.syspath_prepend(str(HOSTILE))
    environ = {
        "MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1",
        "MOSAIC_PLUGINS": "mismatch=fixture_workers:MismatchedWorker,"
        "osexit=hostile_factories:calls_os_exit,hangs=hostile_hang_import:get_worker_metadata",
        "MOSAIC_PLUGIN_TIMEOUT": "3",
    }
    assert "mismatch" in discover_workers(environ=environ).errors
    found = load_unchecked("mismatch", environ=environ)
    assert found.handle is not None and found.handle.capabilities.worker_type == "other"
    ended = load_unchecked("osexit", environ=environ)
    assert ended.handle is None and (ended.error or "").startswith("PluginEndedProcess: ")
    hung = load_unchecked("hangs", environ=environ)
    assert hung.handle is None and (hung.error or "").startswith("PluginTimeout: ")
