"""The algorithm registry and the reading of script arguments."""

from __future__ import annotations

import shutil
from pathlib import Path

import mosaic_worker_cleanrl
import pytest
from mosaic_worker_cleanrl.arguments import read_script_arguments
from mosaic_worker_cleanrl.registry import ALGORITHMS, AlgorithmNotFoundError, resolve

from worker_cleanrl.worker_runs import needs_upstream


def test_table_lists_every_algorithm_and_our_ppo_is_importable() -> None:
    rows = mosaic_worker_cleanrl.algorithm_table()
    assert [r["name"] for r in rows] == list(ALGORITHMS)
    ppo = rows[0]
    assert ppo["source"] == "mosaic" and ppo["importable"] and ppo["missing"] == []
    assert all(r["source"] == "cleanrl" for r in rows[1:])


def test_argparse_script_arguments_are_read_without_running_it(tmp_path: Path) -> None:
    script = tmp_path / "algo.py"
    script.write_text(
        "import argparse\nfrom distutils.util import strtobool\n"
        "raise SystemExit('must not run')\n"
        "def parse_args():\n"
        "    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--learning-rate', type=float, default=1e-3)\n"
        "    p.add_argument('--capture-video', type=lambda x: bool(strtobool(x)), default=False)\n"
        "    p.add_argument('--env-id', type=str, default='CartPole-v1')\n"
    )
    args = read_script_arguments(script)
    assert args.style == "argparse"
    assert {n: a.kind for n, a in args.arguments.items()} == {
        "learning_rate": "float", "capture_video": "bool", "env_id": "str"}  # fmt: skip


def test_our_ppo_arguments_come_from_its_tyro_dataclass() -> None:
    args = resolve("ppo").arguments()
    assert args.style == "tyro"
    assert args.arguments["num_envs"].kind == "int"
    assert args.arguments["target_kl"].kind == "float" and args.arguments["target_kl"].optional


@needs_upstream
def test_cleanrl_path_points_at_a_checkout(tmp_path: Path) -> None:
    installed = resolve("dqn")
    checkout = tmp_path / "cleanrl-checkout"
    (checkout / "cleanrl").mkdir(parents=True)
    shutil.copy(installed.path, checkout / "cleanrl" / "dqn.py")
    spec = resolve("dqn", checkout)
    assert spec.path == checkout / "cleanrl" / "dqn.py" and spec.import_root == checkout
    with pytest.raises(AlgorithmNotFoundError, match="not installed in the checkout"):
        resolve("c51", checkout)
    with pytest.raises(AlgorithmNotFoundError, match="not a CleanRL checkout"):
        resolve("dqn", tmp_path / "nothing-here")


def test_availability_names_what_is_missing_and_how_to_install_it(tmp_path: Path) -> None:
    from mosaic_worker_cleanrl.availability import check

    script = tmp_path / "algo.py"
    script.write_text("import gym\nimport jax.numpy as jnp\nimport numpy\nimport os\n")
    found = check(script)
    assert not found.runs and found.missing == ("jax",) and found.gym_layer
    assert found.why_not == "imports jax, not installed here (pip install jax)"
    off = check(script, gym_compat="off")
    assert off.missing == ("gym", "jax") and not off.gym_layer


def test_atari_scripts_need_ale_py(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from mosaic_worker_cleanrl import availability

    script = tmp_path / "algo.py"
    script.write_text("import gym\nfrom stable_baselines3.common.atari_wrappers import X\n")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        availability.importlib.util, "find_spec",
        lambda name, *a: None if name == "ale_py" else real_find_spec(name, *a),
    )  # fmt: skip
    found = availability.check(script, "BreakoutNoFrameskip-v4")
    assert found.atari and not found.runs
    assert "Atari envs need ale_py (pip install ale-py" in found.why_not


@needs_upstream
def test_table_says_which_upstream_scripts_run_here_and_why_not() -> None:
    rows = {r["name"]: r for r in mosaic_worker_cleanrl.algorithm_table()}
    for name in ("c51", "sac_continuous_action", "td3_continuous_action"):
        assert rows[name]["runs"] and rows[name]["gym_layer"] and rows[name]["why_not"] == ""
    assert rows["dqn"]["runs"] and not rows["dqn"]["gym_layer"]
    assert not rows["pqn"]["runs"] and "is not in the installed cleanrl" in rows["pqn"]["why_not"]
    import importlib.util

    if importlib.util.find_spec("jax") is None:
        assert not rows["dqn_jax"]["runs"] and "jax" in rows["dqn_jax"]["missing"]
    off = {r["name"]: r for r in mosaic_worker_cleanrl.algorithm_table(gym_compat="off")}
    assert not off["c51"]["runs"] and off["c51"]["missing"] == ["gym"]


@needs_upstream
@pytest.mark.parametrize("moviepy", [True, False])
def test_table_says_what_save_model_gives_each_algorithm(
    monkeypatch: pytest.MonkeyPatch, moviepy: bool
) -> None:
    import sys

    if not moviepy:
        monkeypatch.setitem(sys.modules, "moviepy", None)
    elif not _has("moviepy"):
        pytest.skip("needs moviepy (the video extra)")
    rows = {r["name"]: r["save_model"] for r in mosaic_worker_cleanrl.algorithm_table()}
    videos = (
        "checkpoint + eval videos"
        if moviepy
        else "checkpoint; eval videos need moviepy (the video extra)"
    )
    assert rows["dqn"] == rows["c51"] == rows["dqn_atari"] == rows["c51_atari"] == videos
    for name in ("sac_continuous_action", "td3_continuous_action", "ppo_continuous_action",
                 "ddpg_continuous_action", "pqn"):  # fmt: skip
        assert rows[name] == "cannot save"
    assert rows["ppo"] == "always (checkpoints/ppo_<step>.pt)"
    if not _has("jax"):
        assert rows["dqn_jax"].startswith("fails: save_model runs cleanrl_utils.evals.dqn_jax_eval")
        assert "jax" in rows["dqn_jax"]


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_save_model_support_reads_the_evaluation_the_script_imports(tmp_path: Path) -> None:
    from mosaic_worker_cleanrl.availability import save_model_problems, save_model_support

    root = tmp_path / "checkout"
    (root / "cleanrl_utils" / "evals").mkdir(parents=True)
    for part in ("cleanrl_utils", "cleanrl_utils/evals"):
        (root / part / "__init__.py").write_text("")
    script = tmp_path / "algo.py"
    script.write_text(
        "import os\n"
        "if __name__ == '__main__':\n"
        "    from cleanrl_utils.evals.probe_eval import evaluate\n"
    )
    assert not save_model_support(script, False, root).supported
    assert save_model_support(script, False, root).summary == "cannot save"
    # Not in the checkout (nor installed): refused, saying why.
    problems = save_model_problems(script, root)
    assert problems and "cleanrl_utils.evals.probe_eval, and cleanrl_utils is not" in problems[0]
    assert save_model_support(script, True, root).summary.startswith("fails: save_model runs")
    # In the checkout, recording by default, importing something missing here.
    (root / "cleanrl_utils" / "evals" / "probe_eval.py").write_text(
        "import surely_not_installed_here\n"
        "def evaluate(model_path, make_env, capture_video=True):\n    return []\n"
    )
    saving = save_model_support(script, True, root)
    assert saving.eval_records_video and saving.problems == (
        "save_model runs cleanrl_utils.evals.probe_eval, which imports "
        "surely_not_installed_here, not installed here (pip install surely_not_installed_here)",
    )
    (root / "cleanrl_utils" / "evals" / "probe_eval.py").write_text(
        "def evaluate(model_path, make_env, capture_video=False):\n    return []\n"
    )
    quiet = save_model_support(script, True, root)
    assert quiet.problems == () and quiet.summary == "checkpoint"
