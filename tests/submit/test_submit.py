"""``mosaic submit`` against a server shaped like the MOSAIC trainer daemon (daemon_double.py):
the messages on the wire, the run config the daemon validates, the launch its dispatcher makes,
the status sequence, a refusal, a failed run, a fault, no daemon."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import jsonschema
import pytest

pytest.importorskip("grpc")

from mosaic_sdk.plugins import discover_workers  # noqa: E402
from mosaic_sdk.submit import dispatch, protocol  # noqa: E402
from mosaic_sdk.submit.client import describe_failure  # noqa: E402
from tests.conftest import returns  # noqa: E402
from tests.submit.daemon_double import DaemonDouble  # noqa: E402

SMALL = ["--set", "episodes=3", "--set", "max_steps_per_episode=5"]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonDouble]:
    double = DaemonDouble(tmp_path)
    double.start()
    yield double
    double.stop()


def submit(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "submit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )


# -- the messages ------------------------------------------------------------------------------
def test_messages_carry_the_platforms_field_numbers_on_the_wire() -> None:
    request = protocol.message("SubmitRunRequest")(run_id="r", config_json="{}")
    # field 1 (string: tag 0x0a), field 2 (string: tag 0x12)
    assert request.SerializeToString() == b"\x0a\x01r\x12\x02{}"
    record = protocol.message("RunRecord")(run_id="r", status=7, failure_reason="x", seq_id=3)
    # 1 run_id, 2 status (varint 7), 8 failure_reason (tag 0x42), 10 seq_id (tag 0x50)
    assert record.SerializeToString() == b"\x0a\x01r\x10\x07\x42\x01x\x50\x03"
    empty = protocol.message("RunRecord")(run_id="r", status=7)
    assert not empty.HasField("failure_reason")  # proto3 optional: absent, not ""
    episode = protocol.message("RunEpisode").FromString(b"\x10\x02\x20\x05\x5a\x01w")
    assert (episode.episode_index, episode.steps, episode.worker_id) == (2, 5, "w")
    assert protocol.method_path("SubmitRun") == "/gymgui.trainer.TrainerService/SubmitRun"
    assert [protocol.status_name(n) for n in range(8)] == [
        "UNSPECIFIED", "INIT", "HSHK", "RDY", "EXEC", "PAUSE", "FAULT", "TERM",
    ]  # fmt: skip


# -- the run config the daemon validates -------------------------------------------------------
def _example_payload(**changes: object) -> dict[str, object]:
    handle = discover_workers().get("example")
    run_id = "01JDAAAAAAAAAAAAAAAAAAAAAA"
    config = handle.config_model().from_dict({"run_id": run_id})
    payload = dispatch.train_run_config(
        worker="example",
        launch=dispatch.module_launch(handle, config),
        config={"run_id": run_id, "episodes": 2},
        run_id=run_id,
        worker_id="w1",
        run_name="example-run",
    )
    payload.update(changes)
    return payload


def test_the_submission_is_a_train_run_config_the_daemon_accepts() -> None:
    payload = _example_payload()
    jsonschema.validate(payload, dispatch.TRAIN_RUN_SCHEMA)
    worker = payload["metadata"]["worker"]  # type: ignore[index]
    assert worker["module"] == "mosaic_worker_example"
    assert worker["worker_id"] == "w1" and worker["use_grpc"] is True
    assert worker["config"] == {
        "run_id": "01JDAAAAAAAAAAAAAAAAAAAAAA",
        "episodes": 2,
        "worker_id": "w1",
    }


@pytest.mark.parametrize(
    "changes",
    [{"run_name": "x" * 121}, {"resources": {"cpus": 0}}, {"extra": 1}, {"arguments": [1]}],
)
def test_the_schema_refuses_what_the_daemon_refuses(changes: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_example_payload(**changes), dispatch.TRAIN_RUN_SCHEMA)


def test_module_launch_reads_python_dash_m_from_the_launch_command() -> None:
    registry = discover_workers()
    for name, module in [("example", "mosaic_worker_example")] + (
        [("example_multiagent", "mosaic_worker_example.multiagent")]
        if "example_multiagent" in registry.workers
        else []
    ):
        handle = registry.get(name)
        config = handle.config_model().from_dict({"run_id": "r"})
        assert dispatch.module_launch(handle, config).module == module


# -- end to end --------------------------------------------------------------------------------
def test_submit_wait_runs_the_example_to_term_with_its_episodes_stored(
    daemon: DaemonDouble,
) -> None:
    done = submit("example", "--daemon", daemon.address, "--wait", "--json", *SMALL)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "TERM" and result["failure_reason"] is None
    assert result["episodes"] == [0, 1, 2] and result["steps"] == [5, 5, 5]
    assert result["statuses"][-1] == "TERM"
    run = daemon.runs[result["run_id"]]
    assert run.statuses == ["INIT", "HSHK", "RDY", "EXEC", "TERM"]
    assert dispatch.is_ulid(run.run_id)
    # launched the way the dispatcher launches
    assert run.launch is not None
    argv = run.launch.argv
    assert argv[1:3] == ["-m", "mosaic_worker_example"]
    assert argv[3] == "--config" and argv[5:] == [
        "--grpc", "--grpc-target", daemon.address, "--worker-id", "example_worker",
    ]  # fmt: skip
    assert run.launch.config_file["worker_id"] == "example_worker"
    assert run.launch.config_file["run_id"] == run.run_id
    assert run.launch.env["CUDA_VISIBLE_DEVICES"] == ""
    assert "PYTHONUNBUFFERED" not in run.launch.env
    assert run.launch.env["MOSAIC_RUN_ID"] == run.run_id
    assert {e["worker_id"] for e in run.episodes} == {"example_worker"}


def test_the_platforms_form_keys_run_too(daemon: DaemonDouble) -> None:
    """What the GUI's forms add (a worker id, a schema) reaches the worker and is accepted."""
    done = submit(
        "example",
        "--daemon", daemon.address,
        "--wait",
        "--worker-id", "example-gpu-01",
        "--set", "schema_id=telemetry.step.default",
        "--set", 'schema_definition={"fields": []}',
        "--run-name", "my run",
        *SMALL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "TERM" in done.stdout and "indices 0, 1, 2" in done.stdout
    (run,) = daemon.runs.values()
    assert run.launch is not None and run.launch.config_file["schema_id"]
    assert run.config["run_name"] == "my run"
    assert "ignored: schema_id, schema_definition" in run.stderr


def test_the_multi_agent_example_stores_each_agents_episodes(daemon: DaemonDouble) -> None:
    pytest.importorskip("pettingzoo")
    done = submit(
        "example_ma", "--daemon", daemon.address, "--wait", "--set", "episodes=2",
        "--set", "max_cycles=5",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = daemon.runs.values()
    assert run.launch is not None and run.launch.argv[2] == "mosaic_worker_example.multiagent"
    agents = sorted({e["agent_id"] for e in run.episodes})
    assert len(agents) == 2
    assert f"{agents[0]}: 0, 1; {agents[1]}: 0, 1" in done.stdout


def test_a_config_the_daemon_refuses_is_a_clear_error(tmp_path: Path) -> None:
    strict = DaemonDouble(tmp_path, run_name_max_length=20)  # a daemon of shorter run names
    strict.start()
    try:
        done = submit("example", "--daemon", strict.address, "--run-name", "x" * 40)
    finally:
        strict.stop()
    assert done.returncode == 2
    assert "refused the run" in done.stderr and "Invalid TrainRunConfig" in done.stderr
    assert not strict.runs


@pytest.mark.parametrize(
    "name", ["", "x" * 121, "two\nlines", "../../etc", "a/b", "a\\b", "..", "\x1b[2Jtitle"]
)
def test_a_run_name_the_daemon_cannot_take_is_refused_before_sending(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    from mosaic_sdk.cli import main

    assert main(["submit", "example", "--daemon", daemon.address, "--run-name", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mosaic: error: --run-name ") and "1-120 characters" in err, err
    assert "\x1b" not in err and err.count("\n") == 1  # the name shown escaped, on one line
    assert not daemon.submissions


def test_a_run_name_of_120_characters_with_spaces_is_sent(
    daemon: DaemonDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.cli import main

    name = "a b." * 30
    assert main(["submit", "example", "--daemon", daemon.address, "--run-name", name]) == 0
    [sent] = daemon.submissions
    assert sent["run_name"] == name and sent["artifacts"]["output_prefix"] == f"runs/{name}"


def test_wait_without_timeout_gives_up_on_a_silent_daemon_after_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.cli import main
    from mosaic_sdk.cli import submit as submit_cli

    default = getattr(submit_cli, "WAIT_TIMEOUT", None)
    monkeypatch.setattr(submit_cli, "WAIT_TIMEOUT", 3.0, raising=False)
    silent = DaemonDouble(tmp_path, silent=True)
    silent.start()
    try:
        code = returns(
            lambda: main(["submit", "example", "--daemon", silent.address, "--wait"]), 60
        )
    finally:
        silent.stop()
    err = capsys.readouterr().err
    assert code == 1
    assert "is still INIT after 3 s (no status came after INIT); it goes on" in err, err
    assert "--timeout S follows it longer" in err
    assert default == 3600  # as docs/guides/platform.md says


class _Shouting(DaemonDouble):
    """A daemon whose failure reasons carry terminal escapes."""

    def _set(self, run: Any, status: str, reason: str | None = None) -> None:
        super()._set(run, status, reason and f"{reason}\x1b]0;owned\x07\x1b[2J")


def test_the_daemons_words_are_shown_escaped_not_obeyed(tmp_path: Path) -> None:
    shouting = _Shouting(tmp_path)
    shouting.start()
    try:
        done = submit(
            "example", "--daemon", shouting.address, "--wait", "--set", "env_id=NoSuchEnv-v9"
        )
    finally:
        shouting.stop()
    assert done.returncode == 1
    assert "ended TERM (exit_code_2\\x1b]0;owned\\x07\\x1b[2J)" in done.stderr, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr


def _garbage_server() -> tuple[socket.socket, str]:
    """A TCP server that answers every connection with bytes that are not HTTP/2."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the test ended
                return
            with conn:
                try:
                    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n" * 4)
                    conn.recv(4096)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return server, f"127.0.0.1:{server.getsockname()[1]}"


def test_something_that_answers_but_not_as_the_daemon_is_named_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import grpc

    from mosaic_sdk.cli import main

    server, address = _garbage_server()
    try:
        assert returns(lambda: main(["submit", "example", "--daemon", address])) == 1
    finally:
        server.close()
    err = capsys.readouterr().err
    assert f"something answers at {address}, but not in the MOSAIC trainer daemon's" in err, err
    # a gRPC server of another service: it answers UNIMPLEMENTED, in words of its own
    other = grpc.server(futures.ThreadPoolExecutor(max_workers=2))

    def refuse(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "no such method\x1b[2J here")
        raise AssertionError("abort raises")

    handler = grpc.unary_unary_rpc_method_handler(refuse)
    other.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(protocol.SERVICE, {"GetHealth": handler}),)
    )
    port = other.add_insecure_port("127.0.0.1:0")
    other.start()
    try:
        assert main(["submit", "example", "--daemon", f"127.0.0.1:{port}"]) == 1
    finally:
        other.stop(grace=None)
    err = capsys.readouterr().err
    assert "but not in the MOSAIC trainer daemon's protocol" in err, err
    assert "UNIMPLEMENTED: no such method\\x1b[2J here" in err and "\x1b" not in err


def test_a_run_that_fails_reports_the_daemons_reason(daemon: DaemonDouble) -> None:
    done = submit("example", "--daemon", daemon.address, "--wait", "--set", "env_id=NoSuchEnv-v9")
    assert done.returncode == 1
    assert "ended TERM (exit_code_2)" in done.stderr, done.stderr  # its config check
    assert "0 episode(s)" in done.stderr


def test_a_worker_killed_by_a_signal_is_reported_by_the_signals_name(
    daemon: DaemonDouble,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "submit", "example", "--daemon",
         daemon.address, "--wait", "--set", "step_delay_ms=200", "--set", "episodes=50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:

        def executing() -> None:
            while not any(run.status == "EXEC" for run in list(daemon.runs.values())):
                time.sleep(0.05)

        returns(executing, 120)
        daemon.signal_workers(signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1
    assert "ended TERM (exit_code_-9: killed by signal SIGKILL (-9))" in err, err


def test_the_daemons_exit_reasons_are_put_in_words() -> None:
    assert describe_failure("exit_code_-11") == "exit_code_-11: killed by signal SIGSEGV (-11)"
    # through the platform's telemetry proxy: sys.exit(-11) is exit status 245
    proxied = describe_failure("exit_code_245")
    assert proxied.startswith(
        "exit_code_245: probably the worker was killed by signal SIGSEGV (-11)"
    )
    assert describe_failure("exit_code_2") == "exit_code_2"
    assert describe_failure("worker_timeout") == "worker_timeout"
    assert describe_failure(None) == "no reason given"


def test_a_run_that_faults_says_so(tmp_path: Path) -> None:
    double = DaemonDouble(tmp_path, heartbeat_timeout=1.5)
    double.start()
    try:
        done = submit(
            "example",
            "--daemon", double.address,
            "--wait",
            "--set", "step_delay_ms=8000",
            "--set", "episodes=1",
        )  # fmt: skip
    finally:
        double.stop()
    assert done.returncode == 1
    assert "ended FAULT (worker_timeout)" in done.stderr, done.stderr


def test_no_daemon_is_a_clear_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = submit("example", "--daemon", f"127.0.0.1:{port}", "--wait")
    assert done.returncode == 1
    assert f"no MOSAIC trainer daemon answers at 127.0.0.1:{port}" in done.stderr


def test_an_unknown_worker_and_a_bad_config_are_usage_errors(daemon: DaemonDouble) -> None:
    done = submit("no_such_worker", "--daemon", daemon.address)
    assert done.returncode == 2 and "no_such_worker" in done.stderr
    done = submit("example", "--daemon", daemon.address, "--set", "episodes=0")
    assert done.returncode == 2 and "episodes" in done.stderr
    done = submit("example", "--daemon", daemon.address, "--worker-id", "../etc")
    assert done.returncode == 2 and "worker id '../etc'" in done.stderr
    assert not daemon.runs


def test_without_grpcio_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mosaic_sdk.cli import main

    monkeypatch.setitem(sys.modules, "grpc", None)
    assert main(["submit", "example", "--daemon", "127.0.0.1:9"]) == 2
    assert "pip install 'mosaic-worker-sdk[submit]'" in capsys.readouterr().err


def test_long_runs_of_episode_indices_are_shown_as_ranges() -> None:
    from mosaic_sdk.cli.submit import _ranges

    assert _ranges([0, 1, 2]) == "0, 1, 2"
    assert _ranges(list(range(53))) == "0-52"
    assert _ranges([0, 1, 2, 3, 5, 7, 8, 9, 10]) == "0-3, 5, 7-10"


# -- FastLane, as the platform's GUI reads a submitted run's metadata -------------------------
def _gui_opens_fastlane_tab(metadata: dict[str, Any]) -> bool:
    """The decision of the platform's GUI (``FastLaneTabHandler.metadata_supports_fastlane``,
    gym_gui/ui/handlers/features/fastlane_tab_handler.py), restated from reading it: an
    explicit ``ui.fastlane_only`` decides; else a CleanRL, Ray or XuanCe worker id or module
    claims FastLane; else ``worker.config.extras.fastlane_only`` / ``fastlane_enabled``."""

    def truthy(value: object) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            return value != 0
        return isinstance(value, str) and value.strip().lower() in {"1", "true", "yes", "on"}

    ui = metadata.get("ui")
    if isinstance(ui, dict) and ui.get("fastlane_only") is not None:
        return truthy(ui["fastlane_only"])
    worker = metadata.get("worker")
    if not isinstance(worker, dict):
        return False
    module = str(worker.get("module") or "").lower()
    ident = str(worker.get("worker_id") or "").lower()
    for family in ("cleanrl", "ray", "xuance"):
        if f"{family}_worker" in module or ident == f"{family}_worker":
            return True
    extras = (worker.get("config") or {}).get("extras")
    return isinstance(extras, dict) and (
        truthy(extras.get("fastlane_only")) or truthy(extras.get("fastlane_enabled"))
    )


@pytest.mark.parametrize(
    ("args", "claimed"),
    [
        (["--set", "fastlane=true"], True),
        ([], False),
        # the worker id the GUI takes for CleanRL's: it must not guess a tab for a run that
        # publishes nothing
        (["--worker-id", "cleanrl_worker"], False),
        (["--worker-id", "cleanrl_worker", "--set", "fastlane=true"], True),
    ],
)
def test_the_gui_opens_a_fastlane_tab_exactly_when_the_worker_publishes_frames(
    daemon: DaemonDouble, args: list[str], claimed: bool
) -> None:
    done = submit("example", "--daemon", daemon.address, "--wait", "--json", *args, *SMALL)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fastlane"] is claimed
    (run,) = daemon.runs.values()
    assert _gui_opens_fastlane_tab(run.config["metadata"]) is claimed
    # the worker got the platform's extras in its config file, accepted them and ran
    assert run.launch is not None
    extras = run.launch.config_file.get("extras", {})
    assert extras == ({"fastlane_enabled": True} if claimed else {})
    assert run.statuses[-1] == "TERM"


def test_a_worker_that_cannot_publish_frames_is_never_advertised() -> None:
    from mosaic_sdk.contract import WorkerCapabilities

    def caps(fastlane: bool) -> WorkerCapabilities:
        return WorkerCapabilities(worker_type="w", supports_fastlane=fastlane)

    class Config:
        fastlane = True

    on = {"MOSAIC_FASTLANE": "1"}
    assert dispatch.publishes_frames(caps(True), Config(), {})
    assert not dispatch.publishes_frames(caps(False), Config(), on)
    # no switch in the config: the launch environment decides; video mode off wins
    assert dispatch.publishes_frames(caps(True), object(), on)
    assert not dispatch.publishes_frames(caps(True), object(), {})
    off = {**on, "MOSAIC_FASTLANE_VIDEO_MODE": "off"}
    assert not dispatch.publishes_frames(caps(True), object(), off)


def test_every_worker_config_keeps_the_platforms_extras() -> None:
    handle = discover_workers().get("example")
    form = {"run_id": "r1", "extras": {"fastlane_enabled": True, "note": "from the form"}}
    config = handle.config_model().from_dict({"metadata": {"worker": {"config": form}}})
    assert config.extras == form["extras"]
    assert config.to_dict()["extras"] == form["extras"]
    assert "extras" not in handle.config_model().from_dict({"run_id": "r1"}).to_dict()
