"""TensorBoard every reader reads (issue 43): a run exported (``mosaic runs export --what
metrics --format tensorboard``) or observed live (``mosaic run --tensorboard``) is read back
by TensorBoard's classic ``EventAccumulator(dir).Reload().Scalars(tag)``: its series as float32
``simple_value`` scalars (exact doubles on request), its finished episodes' returns and lengths,
the HParams plugin's session (config, status) and final metrics; a second export into the same
directory replaces the first instead of doubling every point."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.runner.recording.tensorboard import (
    ENV_DIR,
    ENV_DOUBLES,
    LENGTH_TAG,
    RETURN_TAG,
    TensorBoardObserver,
    export_tensorboard,
    run_dir,
)
from mosaic_sdk.runner.storage.records import EpisodeRow
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.telemetry import TelemetryEmitter
from tests.unfinished_runs import store_lines

pytest.importorskip("tensorboardX")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
plugin_data_pb2 = pytest.importorskip("tensorboard.plugins.hparams.plugin_data_pb2")
api_pb2 = pytest.importorskip("tensorboard.plugins.hparams.api_pb2")

CONFIG = {"env_id": "Pendulum-v1", "seed": 3, "ppo": {"lr": 0.0003, "clip": 0.2}, "tags": [1, 2]}
#: The series points: (step, losses/value) and (step, charts/lr).
LOSSES = [(10, 0.5), (20, 0.25), (30, 1 / 3)]


def _lines(run_id: str, agents: tuple[str | None, ...] = (None,)) -> list[str]:
    """A run of two finished episodes and one the budget cut off per agent, with a series
    and final metrics."""
    out = io.StringIO()
    em = TelemetryEmitter(run_id, out, flush_interval=0)
    em.run_started(worker_type="fixture", config=CONFIG)
    for step, loss in LOSSES:
        em.metrics({"losses/value": loss}, step=step)
    for agent in agents:
        for index, (ret, steps) in enumerate([(-1291.7, 200), (-1100.25, 200)]):
            em.episode(index, ret, steps, truncated=True, agent_id=agent)
        em.episode(2, -489.8, 77, unfinished=True, agent_id=agent)
    em.run_completed(
        episodes=2,
        total_reward=-2391.95,
        duration_seconds=1.0,
        final_metrics={"mean_return": -1195.975, "eval": {"best": -1100.25}, "note": "text"},
    )
    em.close()
    return out.getvalue().splitlines()


def _accumulator(directory: Path) -> event_accumulator.EventAccumulator:
    acc = event_accumulator.EventAccumulator(str(directory), size_guidance={"scalars": 0})
    return acc.Reload()


def _scalars(acc: event_accumulator.EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def _session_start(acc: event_accumulator.EventAccumulator) -> dict[str, object]:
    content = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    start = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    return {k: getattr(v, v.WhichOneof("kind")) for k, v in start.hparams.items()}


def _session_status(acc: event_accumulator.EventAccumulator) -> str:
    content = acc.PluginTagToContent("hparams")["_hparams_/session_end_info"]
    end = plugin_data_pb2.HParamsPluginData.FromString(content).session_end_info
    return str(api_pb2.Status.Name(end.status))


def _f32(value: float) -> float:
    return float(np.float32(value))


def test_an_export_is_read_by_event_accumulator_scalars_with_episodes_and_hparams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    store_lines(store, "TB", _lines("TB"), config=CONFIG)
    out = tmp_path / "tb"
    argv = ["runs", "export", "TB", "--what", "metrics", "--format", "tensorboard"]
    assert main([*argv, "-o", str(out), "--store", str(store)]) == 0
    # 3 series points, 2 finished episodes' return and length, 2 final metrics
    assert "wrote 9 points" in capsys.readouterr().out
    acc = _accumulator(run_dir(out, "TB", None))
    assert _scalars(acc, "losses/value") == [(s, _f32(v)) for s, v in LOSSES]
    # at the env steps by each episode's end; the cut episode (77 steps) is not one
    assert _scalars(acc, RETURN_TAG) == [(200, _f32(-1291.7)), (400, _f32(-1100.25))]
    assert _scalars(acc, LENGTH_TAG) == [(200, 200.0), (400, 200.0)]
    assert _scalars(acc, "final/mean_return") == [(477, _f32(-1195.975))]
    assert _scalars(acc, "final/eval/best") == [(477, _f32(-1100.25))]
    assert "final/note" not in acc.Tags()["scalars"]
    assert _session_start(acc) == {
        "env_id": "Pendulum-v1",
        "seed": 3.0,
        "ppo.lr": 0.0003,
        "ppo.clip": 0.2,
        "tags": "[1, 2]",
    }
    assert _session_status(acc) == "STATUS_SUCCESS"
    # a second export into the same directory replaces the first: no point twice
    assert main([*argv, "-o", str(out), "--store", str(store)]) == 0
    again = _accumulator(run_dir(out, "TB", None))
    assert _scalars(again, "losses/value") == [(s, _f32(v)) for s, v in LOSSES]
    assert len(list(run_dir(out, "TB", None).glob("events.out.tfevents.*"))) == 1
    assert [p.name for p in out.iterdir()] == ["TB"]  # the staging directory is gone


def test_doubles_on_request_come_back_exact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    store_lines(store, "TB", _lines("TB"), config=CONFIG)
    out = tmp_path / "tb"
    argv = ["runs", "export", "TB", "--what", "metrics", "--format", "tensorboard"]
    assert main([*argv, "--tensorboard-doubles", "-o", str(out), "--store", str(store)]) == 0
    acc = event_accumulator.EventAccumulator(
        str(run_dir(out, "TB", None)), size_guidance={"tensors": 0}
    ).Reload()
    tensor_util = pytest.importorskip("tensorboard.util.tensor_util")
    got = [
        (e.step, tensor_util.make_ndarray(e.tensor_proto).item())
        for e in acc.Tensors("losses/value")
    ]
    assert got == LOSSES  # 1/3 exactly, not its float32
    assert acc.Tags()["scalars"] == []
    # the flag is for --format tensorboard only
    assert main(["runs", "export", "TB", "--tensorboard-doubles", "--store", str(store)]) == 2
    assert "--tensorboard-doubles says how --format tensorboard writes" in capsys.readouterr().err


def test_each_agents_episodes_are_in_its_own_directory(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    store_lines(store, "MA", _lines("MA", agents=("red", "blue")), config=CONFIG)
    out = tmp_path / "tb"
    with RunStore(store, readonly=True) as runs:
        export_tensorboard(runs, "MA", out)
    for agent in ("red", "blue"):
        acc = _accumulator(run_dir(out, "MA", agent))
        assert [s for s, _ in _scalars(acc, RETURN_TAG)] == [200, 400]
    top = _accumulator(run_dir(out, "MA", None))
    assert RETURN_TAG not in top.Tags()["scalars"]  # no episode without an agent
    with RunStore(store, readonly=True) as runs:
        export_tensorboard(runs, "MA", out, agent="red")  # replaces the run's files
    assert not list(run_dir(out, "MA", "blue").glob("events.out.tfevents.*"))


def test_the_live_observer_writes_the_same_readable_scalars(tmp_path: Path) -> None:
    observer = TensorBoardObserver(tmp_path)
    observer.mosaic_telemetry_event(
        run_id="R", worker="w", event={"event": "run_started", "payload": {"config": CONFIG}}
    )
    rows = [
        EpisodeRow("R", 2, 2, 0, -1291.7, 200, 0, 1, 10**18, "{}", None, 0),
        EpisodeRow("R", 3, 3, 1, -1100.25, 200, 0, 1, 10**18 + 1, "{}", None, 0),
        EpisodeRow("R", 4, 4, 2, -489.8, 77, 0, 1, 10**18 + 2, "{}", None, 1),
    ]
    observer.mosaic_telemetry_episodes(run_id="R", episodes=rows)
    acc = _accumulator(run_dir(tmp_path, "R", None))  # readable before the run ends
    assert _scalars(acc, RETURN_TAG) == [(200, _f32(-1291.7)), (400, _f32(-1100.25))]
    assert _session_start(acc)["ppo.lr"] == 0.0003
    observer.mosaic_telemetry_event(
        run_id="R",
        worker="w",
        event={"event": "run_failed", "payload": {"final_metrics": {"sps": 1200}}},
    )
    observer.mosaic_run_cleanup(run_id="R")
    acc = _accumulator(run_dir(tmp_path, "R", None))
    assert _scalars(acc, "final/sps") == [(400, 1200.0)]
    assert _session_status(acc) == "STATUS_FAILURE"


def test_mosaic_run_tensorboard_doubles_sets_the_observer_s_precision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pluggy

    from mosaic_sdk.runner.recording.tensorboard import PLUGIN_NAME, register_from_env

    monkeypatch.delenv(ENV_DOUBLES, raising=False)
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    pm = pluggy.PluginManager("mosaic")
    assert register_from_env(pm) and pm.get_plugin(PLUGIN_NAME).doubles is False
    monkeypatch.setenv(ENV_DOUBLES, "1")
    assert register_from_env(pm) and pm.get_plugin(PLUGIN_NAME).doubles is True
    assert main(["run", "example", "--tensorboard-doubles"]) == 2
    assert "give both" in capsys.readouterr().err


def test_tensorboard_s_hparams_backend_lists_each_run_as_a_session_group(tmp_path: Path) -> None:
    """What the HParams tab asks TensorBoard's backend for: every exported run a session group
    with its config as hyperparameters and the last value of each scalar as its metrics (no
    experiment summary is written: the backend builds it from all the runs of the directory)."""
    pem = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_multiplexer")
    from tensorboard import context as tb_context
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.hparams import backend_context, list_session_groups

    store = tmp_path / "runs.sqlite"
    store_lines(store, "A", _lines("A"), config=CONFIG)
    store_lines(store, "B", _lines("B"), config={**CONFIG, "seed": 4})
    out = tmp_path / "tb"
    with RunStore(store, readonly=True) as runs:
        export_tensorboard(runs, "A", out)
        export_tensorboard(runs, "B", out)
    mux = pem.EventMultiplexer()
    mux.AddRunsFromDirectory(str(out))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(out))
    tb = base_plugin.TBContext(logdir=str(out), multiplexer=mux, data_provider=provider)
    backend = backend_context.Context(tb)
    request = api_pb2.ListSessionGroupsRequest(
        experiment_name="",
        allowed_statuses=[api_pb2.STATUS_SUCCESS, api_pb2.STATUS_FAILURE],
        start_index=0,
        slice_size=10,
    )
    ctx = tb_context.RequestContext()
    groups = list_session_groups.Handler(ctx, backend, "", request).run().session_groups
    seeds = {g.name: g.hparams["seed"].number_value for g in groups}
    assert seeds == {"A": 3.0, "B": 4.0}
    metrics = {m.name.tag: m.value for m in groups[0].metric_values}
    assert metrics["final/mean_return"] == _f32(-1195.975)
    assert metrics[RETURN_TAG] == _f32(-1100.25)  # the last finished episode's, not -489.8


def test_a_real_runs_observer_files_hold_its_episodes_and_hparams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mosaic run --tensorboard``: the runner's hooks give the observer the run's episodes
    and its run_started and run_completed lines."""
    from mosaic_sdk.runner.supervisor import run_worker

    out = tmp_path / "live"
    monkeypatch.setenv(ENV_DIR, str(out))
    monkeypatch.delenv(ENV_DOUBLES, raising=False)
    config = {"episodes": 2, "seed": 5, "max_steps_per_episode": 30}
    result = run_worker("example", config, store=tmp_path / "runs.sqlite")
    assert result.status == "completed", result.error
    acc = _accumulator(run_dir(out, result.run_id, None))
    returns = _scalars(acc, RETURN_TAG)
    lengths = _scalars(acc, LENGTH_TAG)
    assert len(returns) == 2 and [s for s, _ in lengths] == [s for s, _ in returns]
    assert returns[-1][0] == sum(v for _, v in lengths) == result.counts["env_steps"]
    assert _session_start(acc)["seed"] == 5.0
    assert _session_status(acc) == "STATUS_SUCCESS"
