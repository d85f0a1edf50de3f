"""Each ``gym_gui`` module the stand-in serves, checked against the platform's formats and APIs.

The expected shapes below are written from the platform's behaviour as recorded in
UPSTREAM.md and read from its code (lifecycle lines, the analytics.json layout, the worker
CLI's flags, the config nesting, the log-constant fields, FastLane's version-1 layout and
variable names); nothing here imports platform code.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.plugins.gym_gui_stand_in import (
    SERVED,
    install_gym_gui_stand_in,
    is_stand_in,
    uninstall_gym_gui_stand_in,
)
from mosaic_sdk.telemetry import validate_line
from tests.fastlane.v1_reader import V1Reader

#: The platform's lifecycle line: these four fields, compact, keys sorted (UPSTREAM.md).
PLATFORM_FIELDS = ("event", "payload", "run_id", "timestamp")
#: What the SDK's emitter adds to each lifecycle line.
SDK_FIELDS = ("schema_version", "seq", "ts_unix_ns", "type")


def _forget_gym_gui() -> None:
    for name in [n for n in sys.modules if n == "gym_gui" or n.startswith("gym_gui.")]:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def stand_in() -> Iterator[None]:
    import importlib.util

    uninstall_gym_gui_stand_in()
    _forget_gym_gui()
    if importlib.util.find_spec("gym_gui") is not None:
        pytest.skip("a real gym_gui is installed in this environment")
    install_gym_gui_stand_in()
    yield
    uninstall_gym_gui_stand_in()
    _forget_gym_gui()


def gg(name: str) -> Any:
    """Import ``gym_gui.<name>`` (through the stand-in)."""
    return import_module(f"gym_gui.{name}")


def _run(code: str, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# --- the finder ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SERVED))
def test_every_served_name_resolves_to_a_stand_in_module(name: str) -> None:
    if name.startswith("gym_gui.services.trainer.proto."):  # the trainer's gRPC messages
        pytest.importorskip("google.protobuf")
        pytest.importorskip("grpc")
    module = import_module(name)
    assert is_stand_in(module) and module.__name__ == name
    assert module.__spec__ is not None and module.__spec__.name == name
    for attr in getattr(module, "__all__", []):
        assert getattr(module, attr) is not None, attr


@pytest.mark.parametrize(
    "name",
    [
        "gym_gui.ui.presenters.workers.xuance_worker_presenter",
        "gym_gui.validations.validation_xuance_worker_form",
        "gym_gui.services.actor",
        "gym_gui.services.trainer.dispatcher",
        "gym_gui.core.enums",
        "gym_gui.core.wrappers.time_limits",
        "gym_gui.constants.constants_tensorboard",
        "gym_gui.fastlane.reader_widget",
        "gym_gui.core.worker.protocol",
    ],
)
def test_gui_modules_stay_unresolvable(name: str) -> None:
    gg("core.worker")
    gg("fastlane")
    with pytest.raises(ModuleNotFoundError):
        import_module(name)


def test_one_class_however_it_is_reached() -> None:
    from mosaic_sdk.plugins.gym_gui_stand_in import core_worker, fastlane_buffer

    assert gg("core.worker").WorkerMetadata is core_worker.WorkerMetadata
    assert gg("fastlane").FastLaneWriter is gg("fastlane.buffer").FastLaneWriter
    assert gg("fastlane.buffer").FastLaneWriter is fastlane_buffer.FastLaneWriter
    sub = gg("logging_config.log_constants")
    assert gg("logging_config").log_constants is sub  # a submodule is its parent's attribute


def test_importing_the_light_modules_costs_no_heavy_import() -> None:
    seen = _run(
        """
        import json, sys
        from mosaic_sdk.plugins.gym_gui_stand_in import install_gym_gui_stand_in
        install_gym_gui_stand_in()
        import gym_gui.core.worker, gym_gui.logging_config.log_constants
        import gym_gui.logging_config.helpers, gym_gui.config.paths, gym_gui.telemetry.semconv
        from gym_gui.core.worker import TelemetryEmitter, WorkerCLI, WorkerAnalyticsManifest
        heavy = ("numpy", "pydantic", "pluggy", "gymnasium", "mosaic_sdk.telemetry")
        print(json.dumps([m for m in heavy if m in sys.modules]))
        """
    )
    assert seen == []


# --- gym_gui.core.worker: TelemetryEmitter -------------------------------------------------

EVENTS = [
    ("run_started", {"worker_type": "cleanrl", "algo": "ppo", "env_id": "CartPole-v1"}),
    ("heartbeat", {"episode": 3, "step": 40, "memory_mb": 12.5, "cpu_percent": 3.0}),
    ("checkpoint_saved", {"checkpoint_path": "c/1.pt", "episode": 3, "step": 40}),
    ("checkpoint_loaded", {"checkpoint_path": "c/1.pt", "episode": 3, "step": 40}),
    ("run_cancelled", {"reason": "user_request", "completed_episodes": 3}),
    ("run_failed", {"error": "boom", "error_type": "RuntimeError", "traceback": "tb"}),
    ("run_completed", {"episodes": 3, "total_reward": 9.5, "duration_seconds": 1.0}),
]


def test_emitter_lines_carry_the_platforms_fields_exactly() -> None:
    worker = gg("core.worker")
    sink = io.StringIO()
    emitter = worker.TelemetryEmitter("01ARZ3NDEK", sink=sink)
    before = time.time()
    for event, payload in EVENTS:
        getattr(emitter, event)(payload)
    after = time.time()
    lines = sink.getvalue().splitlines()
    assert len(lines) == len(EVENTS)
    for text, (event, payload) in zip(lines, EVENTS, strict=True):
        obj = json.loads(text)
        assert set(obj) == set(PLATFORM_FIELDS) | set(SDK_FIELDS)
        # field by field, as the platform's emitter writes them
        assert obj["event"] == event and isinstance(obj["event"], str)
        assert obj["payload"] == payload
        assert obj["run_id"] == "01ARZ3NDEK"
        assert isinstance(obj["timestamp"], float) and before <= obj["timestamp"] <= after
        # the platform's own serialisation of those four fields is a sub-sequence of the line
        platform = {k: obj[k] for k in PLATFORM_FIELDS}
        asdict = dataclasses.asdict(worker.LifecycleEvent(**platform))
        expected = json.dumps(asdict, separators=(",", ":"), sort_keys=True)
        ours = json.dumps(
            {k: v for k, v in obj.items() if k in PLATFORM_FIELDS},
            separators=(",", ":"),
            sort_keys=True,
        )
        assert ours == expected
        assert text == json.dumps(obj, separators=(",", ":"), sort_keys=True)  # compact, sorted
        assert event in {e.value for e in worker.LifecycleEventType}
        assert validate_line(obj) == []  # and valid SDK telemetry
    assert [json.loads(t)["seq"] for t in lines] == list(range(1, len(EVENTS) + 1))


def test_emitter_heartbeat_without_payload_and_numpy_values() -> None:
    np = pytest.importorskip("numpy")
    sink = io.StringIO()
    emitter = gg("core.worker").TelemetryEmitter("r", sink=sink)
    emitter.heartbeat()
    emitter.run_completed({"total_reward": np.float32(1.5), "returns": np.arange(3)})
    first, second = (json.loads(line) for line in sink.getvalue().splitlines())
    assert first["payload"] == {}
    assert second["payload"] == {"total_reward": 1.5, "returns": [0, 1, 2]}


def test_emitter_logs_an_event_given_a_constant(caplog: pytest.LogCaptureFixture) -> None:
    worker = gg("core.worker")
    constants = gg("logging_config.log_constants")
    logger = logging.getLogger("test.standin.emitter")
    emitter = worker.TelemetryEmitter("run-7", sink=io.StringIO(), logger=logger)
    error = RuntimeError("boom")
    with caplog.at_level(logging.DEBUG, logger="test.standin.emitter"):
        emitter.run_started({"algo": "ppo"})  # no constant: nothing logged
        emitter.run_failed(
            {"error": "boom", "name": "clash"},
            constant=constants.LOG_WORKER_DEMO_RUNTIME_FAILED,
            exc_info=error,
        )
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "LOG_WORKER_DEMO_RUNTIME_FAILED runtime failed"
    assert record.run_id == "run-7" and record.error == "boom"  # type: ignore[attr-defined]
    assert record.log_code == "LOG_WORKER_DEMO_RUNTIME_FAILED"  # type: ignore[attr-defined]
    assert record.name == "test.standin.emitter"  # a reserved key in extra is dropped
    assert record.exc_info is not None and record.exc_info[1] is error


# --- gym_gui.core.worker: analytics --------------------------------------------------------


def test_analytics_manifest_writes_the_platforms_file(tmp_path: Path) -> None:
    w = gg("core.worker")
    manifest = w.WorkerAnalyticsManifest(
        run_id="01ARZ",
        worker_type="cleanrl",
        artifacts=w.ArtifactsMetadata(
            tensorboard=w.TensorBoardMetadata(log_dir="tensorboard", enabled=True),
            wandb=w.WandBMetadata(
                project="p", entity=None, run_id="w1", run_name="n", url="u", enabled=False
            ),
            checkpoints=w.CheckpointMetadata(
                directory="checkpoints", format="pytorch", files=["a.pt"], final_checkpoint="a.pt"
            ),
            logs_dir="logs",
        ),
        metadata={"algo": "ppo", "final_reward": 195.0},
    )
    path = tmp_path / "var" / "trainer" / "runs" / "01ARZ" / "analytics.json"
    manifest.save(path)
    expected = {
        "run_id": "01ARZ",
        "worker_type": "cleanrl",
        "artifacts": {
            "tensorboard": {"log_dir": "tensorboard", "enabled": True, "port": None, "url": None},
            "wandb": {
                "project": "p",
                "entity": None,
                "run_id": "w1",
                "run_name": "n",
                "url": "u",
                "enabled": False,
            },
            "checkpoints": {
                "directory": "checkpoints",
                "format": "pytorch",
                "files": ["a.pt"],
                "best_checkpoint": None,
                "final_checkpoint": "a.pt",
            },
            "logs_dir": "logs",
        },
        "metadata": {"algo": "ppo", "final_reward": 195.0},
    }
    text = path.read_text()
    assert json.loads(text) == expected
    assert text == json.dumps(expected, indent=2)  # the platform's key order and indentation
    assert w.WorkerAnalyticsManifest.load(path) == manifest
    assert [p.name for p in path.parent.iterdir()] == ["analytics.json"]  # no temp file left


def test_analytics_manifest_leaves_out_unset_artifacts() -> None:
    w = gg("core.worker")
    bare = w.WorkerAnalyticsManifest("r", "ray", w.ArtifactsMetadata(logs_dir="", videos_dir="v"))
    assert bare.to_dict() == {
        "run_id": "r",
        "worker_type": "ray",
        "artifacts": {"videos_dir": "v"},
        "metadata": {},
    }
    assert w.WorkerAnalyticsManifest.from_dict(bare.to_dict()).artifacts.videos_dir == "v"


# --- gym_gui.core.worker: CLI and config loading -------------------------------------------


def test_worker_cli_parses_the_platforms_flags() -> None:
    parser = gg("core.worker").WorkerCLI.create_base_parser("w", "a worker")
    args = parser.parse_args(["--config", "c.json"])
    assert args.config == Path("c.json")
    assert (args.verbose, args.dry_run, args.worker_id, args.grpc) == (False, False, None, False)
    assert args.grpc_target == "127.0.0.1:50055"
    args = parser.parse_args(
        ["--config", "c.json", "-v", "--dry-run", "--worker-id", "w1", "--grpc"]
        + ["--grpc-target", "h:1"]
    )
    assert (args.verbose, args.dry_run, args.worker_id, args.grpc) == (True, True, "w1", True)
    assert args.grpc_target == "h:1"
    parser.add_argument("--algo")  # a worker adds its own
    assert parser.parse_args(["--config", "c", "--algo", "dqn"]).algo == "dqn"
    with pytest.raises(SystemExit) as exc:
        parser.parse_args([])  # --config is required
    assert exc.value.code == 2


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    run_id: str
    seed: int | None = None
    algo: str = "ppo"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DemoConfig:
        return cls(**data)


@pytest.mark.parametrize(
    "payload",
    [
        {"run_id": "r1", "seed": 3, "algo": "dqn"},
        {"metadata": {"worker": {"config": {"run_id": "r1", "seed": 3, "algo": "dqn"}}}},
        {"run_id": "r1", "metadata": {"worker": {"config": {"seed": 3, "algo": "dqn"}}}},
    ],
    ids=["flat", "nested", "nested-run-id-outside"],
)
def test_configs_load_flat_and_nested(tmp_path: Path, payload: dict[str, Any]) -> None:
    w = gg("core.worker")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(payload))
    want = DemoConfig("r1", 3, "dqn")
    assert w.load_worker_config_from_file(path, DemoConfig) == want
    assert w.WorkerCLI.load_and_validate_config(path, DemoConfig) == want
    assert isinstance(want, w.WorkerConfig)  # the protocol: run_id, seed, to_dict, from_dict


def test_config_loading_errors_say_what_is_wrong(tmp_path: Path) -> None:
    cli = gg("core.worker").WorkerCLI
    with pytest.raises(FileNotFoundError, match="nope.json"):
        cli.load_and_validate_config(tmp_path / "nope.json", DemoConfig)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        cli.load_and_validate_config(bad, DemoConfig)
    bad.write_text(json.dumps({"run_id": "r", "unknown": 1}))
    with pytest.raises(ValueError, match="unknown"):
        cli.load_and_validate_config(bad, DemoConfig)
    with pytest.raises(TypeError, match="from_dict"):
        cli.load_and_validate_config(bad, dict)
    with pytest.raises(TypeError, match="JSON object"):
        gg("core.worker").extract_worker_config([1, 2])


def test_setup_logging_writes_to_stderr_not_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    before = list(root.handlers), root.level
    try:
        gg("core.worker").WorkerCLI.setup_logging(verbose=True)
        logging.getLogger("test.standin.cli").debug("hello from the worker")
        out, err = capfd.readouterr()
        assert "hello from the worker" in err and out == ""
    finally:
        gg("logging_config").configure_logging(stream=False, log_to_file=False, force=True)
        root.handlers[:] = before[0]
        root.setLevel(before[1])


# --- gym_gui.core.worker: discovery --------------------------------------------------------

FACTORIES = """
from gym_gui.core.worker import WorkerCapabilities, WorkerMetadata

def good():
    return (
        WorkerMetadata("Good", "1.0", "d", "a", "h", None, None, "MIT"),
        WorkerCapabilities("good", ("sequential",), ("gymnasium",), ("discrete",), ("box",), 1),
    )

def renamed():
    meta, caps = good()
    return meta, WorkerCapabilities("other", ("turn_based",), ("pettingzoo",), (), (), 2)

def wrong_type():
    return ({"name": "x"}, {"worker_type": "wrong"})

def broken():
    raise RuntimeError("cannot load")

def second_good():
    return good()
"""


@pytest.fixture
def entry_points_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    dist = site / "standin_demo-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: standin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[mosaic.workers]\n"
        "good = standin_factories:good\n"
        "multi = standin_factories:renamed\n"
        "wrong = standin_factories:wrong_type\n"
        "broken = standin_factories:broken\n"
    )
    dup = site / "standin_demo_dup-1.0.dist-info"
    dup.mkdir()
    (dup / "METADATA").write_text("Metadata-Version: 2.1\nName: standin-demo-dup\nVersion: 1.0\n")
    (dup / "entry_points.txt").write_text(
        "[mosaic.workers]\ngood = standin_factories:second_good\n"
    )
    (site / "standin_factories.py").write_text(FACTORIES)
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("standin_factories", None)


@pytest.mark.usefixtures("entry_points_on_path")
def test_discovery_keeps_good_workers_and_reports_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = gg("core.worker")
    assert w.WORKER_ENTRY_POINT_GROUP == "mosaic.workers"
    discovery = w.WorkerDiscovery()
    with caplog.at_level(logging.WARNING, logger="gym_gui.core.worker.discovery"):
        found = [x for x in discovery.discover_all() if x.worker_id in {"good", "multi"}]
    assert [x.worker_id for x in found] == ["good", "multi"]
    good = discovery.get_worker("good")
    assert isinstance(good, w.DiscoveredWorker)
    assert good.metadata.name == "Good" and good.entry_point_name == "good"
    assert good.module_path == "standin_factories:good"  # the first of the two 'good' kept
    assert discovery.has_worker("multi") and not discovery.has_worker("wrong")
    assert discovery.get_capabilities("multi").max_agents == 2
    turn_based = [x.worker_id for x in discovery.filter_by_paradigm("turn_based")]
    assert [w for w in turn_based if w in {"good", "multi"}] == ["multi"]
    assert "good" in [x.worker_id for x in discovery.filter_by_env_family("gymnasium")]
    text = caplog.text
    assert "'wrong'" in text and "gym_gui.core.worker.WorkerMetadata" in text
    assert "'broken'" in text and "cannot load" in text
    assert "two entry points are named 'good'" in text
    assert "worker_type 'other'" in text
    assert "good" in [x.worker_id for x in w.discover_workers()]


# --- gym_gui.logging_config -----------------------------------------------------------------


def test_log_constants_are_made_once_with_the_platforms_fields() -> None:
    lc = gg("logging_config.log_constants")
    from gym_gui.logging_config.log_constants import (  # type: ignore[import-not-found]
        LOG_MOSAIC_WORKER_LLM_ACTION_DEFAULTED,
        LOG_WORKER_XUANCE_RUNTIME_STARTED,
    )

    assert lc.LOG_WORKER_XUANCE_RUNTIME_STARTED is LOG_WORKER_XUANCE_RUNTIME_STARTED
    assert isinstance(LOG_WORKER_XUANCE_RUNTIME_STARTED, lc.LogConstant)
    assert [f.name for f in dataclasses.fields(lc.LogConstant)] == [
        "code",
        "level",
        "message",
        "component",
        "subcomponent",
        "tags",
    ]
    assert dataclasses.astuple(LOG_WORKER_XUANCE_RUNTIME_STARTED) == (
        "LOG_WORKER_XUANCE_RUNTIME_STARTED",
        "INFO",
        "runtime started",
        "Worker",
        "Xuance",
        ("worker", "xuance", "runtime", "started"),
    )
    assert LOG_MOSAIC_WORKER_LLM_ACTION_DEFAULTED.level == "WARNING"
    assert LOG_MOSAIC_WORKER_LLM_ACTION_DEFAULTED.subcomponent == "Llm"
    assert lc.LOG_WORKER_BALROG_LLM_ERROR.level == "ERROR"
    assert lc.LOG_WORKER_XUANCE_DEBUG.level == "DEBUG"
    assert lc.LOG_OPERATOR_VIEW_SIZE_CONFIGURED.component == "Operator"
    with pytest.raises(dataclasses.FrozenInstanceError):
        lc.LOG_WORKER_XUANCE_DEBUG.level = "INFO"
    with pytest.raises(ImportError):
        exec("from gym_gui.logging_config.log_constants import get_constant_by_code", {})
    with pytest.raises(AttributeError):
        lc.LOG_lowercase  # noqa: B018 - not a constant name


def test_log_constant_helper(caplog: pytest.LogCaptureFixture) -> None:
    lc = gg("logging_config.log_constants")
    helpers = gg("logging_config.helpers")
    logger = logging.getLogger("test.standin.helpers")
    custom = lc.LogConstant("LOG999", logging.WARNING, "custom thing", "Tool", "Sub", ("a", "b"))
    with caplog.at_level(logging.DEBUG, logger="test.standin.helpers"):
        helpers.log_constant(logger, custom, message="detail", extra={"k": 1, "msg": "x"})
        helpers.log_constant(logger, lc.LOG_WORKER_XUANCE_DEBUG)
    first, second = caplog.records
    assert first.levelno == logging.WARNING
    assert first.getMessage() == "LOG999 custom thing | detail"
    assert (first.log_code, first.component, first.subcomponent, first.tags, first.k) == (  # type: ignore[attr-defined]
        "LOG999",
        "Tool",
        "Sub",
        "a,b",
        1,
    )
    assert second.levelno == logging.DEBUG

    class Thing(helpers.LogConstantMixin):
        _logger = logger

    with caplog.at_level(logging.INFO, logger="test.standin.helpers"):
        Thing().log_constant(lc.LOG_WORKER_RAY_HEARTBEAT)
    assert caplog.records[-1].getMessage() == "LOG_WORKER_RAY_HEARTBEAT heartbeat"


def test_configure_logging_replaces_only_its_own_handlers(tmp_path: Path) -> None:
    seen = _run(
        """
        import json, logging, sys
        from mosaic_sdk.plugins.gym_gui_stand_in import install_gym_gui_stand_in
        install_gym_gui_stand_in()
        from gym_gui.logging_config import configure_logging
        from gym_gui.config.paths import VAR_LOGS_DIR
        mine = logging.NullHandler()
        logging.getLogger().addHandler(mine)
        configure_logging(logging.DEBUG)
        configure_logging(logging.INFO)  # same choice: level only
        n = len(logging.getLogger().handlers)
        logging.getLogger("w").info("to the file")
        configure_logging(logging.INFO, log_to_file=False)
        handlers = logging.getLogger().handlers
        print(json.dumps({
            "n": n, "after": len(handlers), "mine": mine in handlers,
            "file": (VAR_LOGS_DIR / "gym_gui.log").read_text(),
            "stream": [getattr(h, "stream", None) is sys.stderr for h in handlers],
        }))
        """,
        MOSAIC_HOME=str(tmp_path),
    )
    assert seen["n"] == 3 and seen["after"] == 2 and seen["mine"]
    assert "INFO w: to the file" in seen["file"]
    assert seen["stream"] == [False, True]  # NullHandler, then ours on stderr


# --- gym_gui.config.paths --------------------------------------------------------------------


def test_paths_live_under_mosaic_home_and_are_made_on_request(tmp_path: Path) -> None:
    seen = _run(
        """
        import json
        from mosaic_sdk.plugins.gym_gui_stand_in import install_gym_gui_stand_in
        install_gym_gui_stand_in()
        from gym_gui.config import paths
        from gym_gui.config.paths import VAR_TRAINER_DIR, ensure_var_directories
        before = paths.VAR_ROOT.exists()
        ensure_var_directories()
        print(json.dumps({
            "root": str(paths.VAR_ROOT), "trainer": str(VAR_TRAINER_DIR),
            "tb": str(paths.VAR_TENSORBOARD_DIR), "wandb": str(paths.VAR_WANDB_DIR),
            "ops": str(paths.VAR_OPERATORS_TELEMETRY_DIR), "before": before,
            "made": all(p.is_dir() for p in paths.VAR_DIRECTORIES),
        }))
        """,
        MOSAIC_HOME=str(tmp_path / "home"),
    )
    root = tmp_path / "home" / "var"
    assert seen["root"] == str(root) and not seen["before"] and seen["made"]
    assert seen["trainer"] == str(root / "trainer")
    assert seen["tb"] == seen["wandb"] == str(root / "trainer" / "runs")
    assert seen["ops"] == str(root / "operators" / "telemetry")


def test_paths_default_to_the_users_data_directory(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MOSAIC_HOME"}
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "xdg"))
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from mosaic_sdk.plugins.gym_gui_stand_in import install_gym_gui_stand_in as i; i()\n"
            "from gym_gui.config.paths import VAR_ROOT; print(VAR_ROOT)",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    if sys.platform.startswith("linux"):
        assert done.stdout.strip() == str(tmp_path / "xdg" / "mosaic" / "var"), done.stderr


# --- gym_gui.fastlane and gym_gui.telemetry.semconv ----------------------------------------


@pytest.fixture
def run_id() -> Iterator[str]:
    from mosaic_sdk.fastlane.layout import segment_name
    from mosaic_sdk.shm.segment import shm_unlink

    rid = f"standin/{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        yield rid
    finally:
        shm_unlink(segment_name(rid))


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs POSIX shared memory")
def test_fastlane_names_write_a_version_1_segment(run_id: str) -> None:
    np = pytest.importorskip("numpy")
    fl = gg("fastlane")
    from gym_gui.fastlane.buffer import create_fastlane_name  # type: ignore[import-not-found]

    assert create_fastlane_name(run_id) == "mosaic.fastlane." + run_id.replace("/", "_")
    config = fl.FastLaneConfig(width=4, height=2, channels=3, pixel_format="RGB")
    writer = fl.FastLaneWriter.create(run_id, config, capacity=8)
    reader = V1Reader(run_id)
    try:
        frame = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
        metrics = fl.FastLaneMetrics(last_reward=1.0, rolling_return=2.5, step_rate_hz=30.0)
        assert writer.publish(frame.tobytes(), metrics=metrics) == 1  # bytes, as workers do
        header = reader.header()
        assert (header["magic"], header["version"], header["capacity"]) == (b"FLAN", 1, 8)
        assert (header["width"], header["height"], header["channels"]) == (4, 2, 3)
        got = reader.latest_frame()
        assert got is not None and got["data"] == frame.tobytes() and got["fmt_ok"]
        assert got["metrics"] == (1.0, 2.5, 30.0)
        base = gg("fastlane.buffer").FastLaneBase
        from multiprocessing import shared_memory

        shm = shared_memory.SharedMemory(name=create_fastlane_name(run_id), create=False)
        try:
            view = base(shm)
            assert not view.is_invalidated and view.head == 1 and view.width == 4
            view.invalidate()
            assert view.is_invalidated and reader.header()["flags"] & 1
            view._mv.release()  # what the platform's worker does before closing
            view._buffer.release()
        finally:
            shm.close()
    finally:
        reader.close()
        writer.close()
        writer.unlink()


def test_tile_frames_and_fastlane_environment() -> None:
    np = pytest.importorskip("numpy")
    from gym_gui.fastlane.tiling import tile_frames  # type: ignore[import-not-found]
    from gym_gui.fastlane.worker_helpers import (  # type: ignore[import-not-found]
        apply_fastlane_environment,
    )
    from gym_gui.telemetry.semconv import (  # type: ignore[import-not-found]
        TelemetryEnv,
        VideoModes,
    )

    frames = [np.full((2, 3, 3), i + 1, np.uint8) for i in range(3)]
    tiled = tile_frames(frames)
    assert tiled.shape == (4, 6, 3)  # rows = ceil(sqrt(3)) = 2, cols = ceil(3/2) = 2
    assert tiled[0, 0, 0] == 1 and tiled[0, 3, 0] == 2 and tiled[2, 0, 0] == 3
    assert not tiled[2:, 3:].any()  # zero padding
    assert (VideoModes.SINGLE, VideoModes.GRID, VideoModes.OFF) == ("single", "grid", "off")
    env: dict[str, str] = {}
    out = apply_fastlane_environment(
        env, fastlane_only=True, fastlane_slot=2, video_mode=VideoModes.GRID, grid_limit=6
    )
    assert out is env
    assert env[TelemetryEnv.FASTLANE_ONLY] == env["GYM_GUI_FASTLANE_ONLY"] == "1"
    assert env[TelemetryEnv.FASTLANE_SLOT] == "2"
    assert env[TelemetryEnv.FASTLANE_VIDEO_MODE] == "grid"
    assert env[TelemetryEnv.FASTLANE_GRID_LIMIT] == "6"
    from mosaic_sdk.fastlane import read_fastlane_environment

    settings = read_fastlane_environment(
        {
            TelemetryEnv.FASTLANE_ONLY: "1",
            TelemetryEnv.FASTLANE_SLOT: "3",
            TelemetryEnv.FASTLANE_VIDEO_MODE: VideoModes.GRID,
            TelemetryEnv.FASTLANE_GRID_LIMIT: "9",
            TelemetryEnv.CLEANRL_INTERVAL_MS: "50",
            TelemetryEnv.CLEANRL_MAX_DIM: "128",
        }
    )
    assert settings.fastlane_only and settings.slot == 3 and settings.video_mode == "grid"
    assert settings.grid_limit == 9 and settings.interval_ms == 50 and settings.max_dim == 128


# --- gym_gui.services.trainer.proto: the RegisterWorker call ---------------------------------


def _varint_field(number: int, value: int) -> bytes:
    return bytes([number << 3, value])  # wire type 0; small numbers and values fit one byte


def _string_field(number: int, text: str) -> bytes:
    data = text.encode()
    return bytes([(number << 3) | 2, len(data)]) + data  # wire type 2, short strings


def test_register_worker_messages_have_the_trainers_field_numbers() -> None:
    pytest.importorskip("google.protobuf")
    pytest.importorskip("grpc")
    from gym_gui.services.trainer.proto import trainer_pb2  # type: ignore[import-not-found]

    request = trainer_pb2.RegisterWorkerRequest(
        run_id="r1",
        worker_id="w",
        worker_kind="cleanrl",
        proto_version="MOSAIC/1.0",
        schema_id="cleanrl.ppo",
        schema_version=1,
        supports_pause=True,
        supports_checkpoint=True,
    )
    expected = b"".join(
        [
            _string_field(1, "r1"),
            _string_field(2, "w"),
            _string_field(3, "cleanrl"),
            _string_field(4, "MOSAIC/1.0"),
            _string_field(5, "cleanrl.ppo"),
            _varint_field(6, 1),
            _varint_field(7, 1),
            _varint_field(8, 1),
        ]
    )
    assert request.SerializeToString() == expected
    response = trainer_pb2.RegisterWorkerResponse.FromString(
        _string_field(1, "MOSAIC/1.0") + _string_field(2, "tok")
    )
    assert (response.accepted_version, response.session_token) == ("MOSAIC/1.0", "tok")
    assert request.DESCRIPTOR.full_name == "gymgui.trainer.RegisterWorkerRequest"


def test_register_worker_round_trip_through_grpc() -> None:
    grpc = pytest.importorskip("grpc")
    from concurrent import futures

    from gym_gui.services.trainer.proto import (  # type: ignore[import-not-found]
        trainer_pb2,
        trainer_pb2_grpc,
    )

    seen: list[Any] = []

    class Trainer(trainer_pb2_grpc.TrainerServiceServicer):
        def RegisterWorker(self, request: Any, context: Any) -> Any:  # noqa: N802
            seen.append(request)
            return trainer_pb2.RegisterWorkerResponse(
                accepted_version=request.proto_version, session_token=f"tok-{request.run_id}"
            )

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    trainer_pb2_grpc.add_TrainerServiceServicer_to_server(Trainer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = trainer_pb2_grpc.TrainerServiceStub(channel)
            request = trainer_pb2.RegisterWorkerRequest(
                run_id="r9", worker_kind="cleanrl", proto_version="MOSAIC/1.0"
            )
            response = stub.RegisterWorker(request, timeout=30)
    finally:
        server.stop(grace=None)
    assert response.session_token == "tok-r9" and response.accepted_version == "MOSAIC/1.0"
    assert seen[0].worker_kind == "cleanrl"
    assert trainer_pb2_grpc.REGISTER_WORKER == "/gymgui.trainer.TrainerService/RegisterWorker"
