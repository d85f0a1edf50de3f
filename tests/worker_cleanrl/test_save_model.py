"""``algo_params.save_model`` of upstream scripts: the checkpoint in the run directory's
``checkpoints/``, the script's own evaluation after saving, its videos when moviepy is there
and a one-line warning (not a refusal) when it is not (slow: each run trains a little)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from worker_cleanrl.worker_runs import WorkerResult, needs_upstream, run_worker, unique_run_id

pytestmark = [needs_upstream, pytest.mark.slow]

needs_moviepy = pytest.mark.skipif(
    importlib.util.find_spec("moviepy") is None,
    reason="videos need moviepy: pip install 'mosaic-worker-cleanrl[video]' (scripts/test does)",
)
SAVING = ["dqn", "c51"]  # the upstream scripts of CleanRL 1.2.0 that save and run here
WARNING = "warning: videos were not recorded"


def _save_run(runs: Path, algo: str, *, hide: tuple[str, ...] = ()) -> WorkerResult:
    config = {"run_id": unique_run_id(f"save-{algo}"), "algo": algo, "seed": 1,
              "total_timesteps": 400,
              "algo_params": {"save_model": True, "learning_starts": 100, "batch_size": 32,
                              "train_frequency": 10}}  # fmt: skip
    return run_worker(runs, config, timeout=300, hide_modules=hide)


def _check_checkpoint(result: WorkerResult, algo: str) -> None:
    """Saved in checkpoints/, reported, loadable, and evaluated by the script itself."""
    import torch

    assert result.returncode == 0, result.why()
    assert result.terminal() == "run_completed"
    checkpoint = result.run_dir / "checkpoints" / f"{algo}.cleanrl_model"
    assert checkpoint.is_file(), sorted(str(p) for p in result.run_dir.rglob("*"))
    assert not list(result.run_dir.glob("runs/**/*.cleanrl_model")), "nothing left under runs/"
    saved = [e["payload"]["checkpoint_path"] for e in result.events("checkpoint_saved")]
    assert saved == [str(checkpoint)]
    data: Any = torch.load(checkpoint, map_location="cpu")
    weights = data["model_weights"] if algo == "c51" else data
    assert any(torch.is_tensor(v) and v.numel() > 0 for v in weights.values())
    if algo == "c51":
        assert data["args"]["save_model"] is True and data["args"]["total_timesteps"] == 400
    # The script's evaluation after saving ran its 10 episodes (it prints them to its log).
    assert "eval_episode=9," in result.log()
    completed = result.events("run_completed")[0]["payload"]
    # the unfinished rule: an episode the run's end cut off is in no count of episodes
    finished = [e for e in result.episodes() if not (e.get("metadata") or {}).get("unfinished")]
    assert completed["episodes"] == len(finished) >= 10
    assert result.analytics()["checkpoints"][0]["path"] == str(checkpoint)


@pytest.mark.parametrize("algo", SAVING)
def test_save_model_without_moviepy_saves_evaluates_and_warns_once(runs: Path, algo: str) -> None:
    result = _save_run(runs, algo, hide=("moviepy",))
    _check_checkpoint(result, algo)
    warnings = [line for line in result.stderr.splitlines() if WARNING in line]
    assert len(warnings) == 1, result.stderr[-3000:]
    assert f"videos/CartPole-v1__{algo}__1__" in warnings[0] and "-eval" in warnings[0]
    assert "pip install 'mosaic-worker-cleanrl[video]'" in warnings[0]
    assert not (result.run_dir / "videos").exists()


@needs_moviepy
@pytest.mark.parametrize("algo", SAVING)
def test_save_model_with_moviepy_records_the_evaluation_in_the_run_directory(
    runs: Path, algo: str
) -> None:
    result = _save_run(runs, algo)
    _check_checkpoint(result, algo)
    assert WARNING not in result.stderr
    videos = list((result.run_dir / "videos").glob(f"CartPole-v1__{algo}__1__*-eval/*.mp4"))
    assert videos and all(v.stat().st_size > 0 for v in videos), result.why()


def test_capture_video_without_moviepy_is_reported_once_and_the_run_completes(runs: Path) -> None:
    """The platform's form sends capture_video; without moviepy the run still trains and says
    once why there is no video (it used to be refused before launch)."""
    config = {"run_id": unique_run_id("capture"), "algo": "dqn", "total_timesteps": 100,
              "algo_params": {"capture_video": True}}  # fmt: skip
    result = run_worker(runs, config, timeout=120, hide_modules=("moviepy",))
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    ignored = result.events("run_started")[0]["payload"]["ignored"]
    assert "moviepy" in ignored["algo_params.capture_video"]
    assert "mosaic-worker-cleanrl[video]" in ignored["algo_params.capture_video"]
    assert result.stderr.count("algo_params.capture_video (recording needs moviepy") == 1
    assert "--capture-video=True" not in result.events("run_started")[0]["payload"]["argv"]


def test_save_model_without_cleanrl_utils_is_reported_once_and_the_run_completes(
    runs: Path,
) -> None:
    config = {"run_id": unique_run_id("noutils"), "algo": "c51", "total_timesteps": 100,
              "algo_params": {"save_model": True}}  # fmt: skip
    result = run_worker(runs, config, timeout=120, hide_modules=("cleanrl_utils",))
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    reason = result.events("run_started")[0]["payload"]["ignored"]["algo_params.save_model"]
    assert "cleanrl_utils.evals.c51_eval, and cleanrl_utils is not installed" in reason
    assert result.stderr.count("algo_params.save_model (") == 1
