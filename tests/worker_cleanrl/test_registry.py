"""The algorithm registry and the reading of script arguments."""

from __future__ import annotations

import shutil
from pathlib import Path

import cleanrl_worker
import pytest
from cleanrl_worker.arguments import read_script_arguments
from cleanrl_worker.registry import ALGORITHMS, AlgorithmNotFoundError, resolve

from worker_cleanrl.worker_runs import needs_upstream


def test_table_lists_every_algorithm_and_our_ppo_is_importable() -> None:
    rows = cleanrl_worker.algorithm_table()
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
