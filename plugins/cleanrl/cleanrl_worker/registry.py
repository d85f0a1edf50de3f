"""The algorithm registry: names to modules, where to find them, whether they run here.

``ppo`` is our own PPO (:mod:`cleanrl_worker.algorithms.ppo`); every other name is the
upstream script ``cleanrl.<name>`` from the user's CleanRL install, or from a CleanRL checkout
named by the config's ``cleanrl_path``. Nothing here imports an algorithm: scripts are found
with the import system's finders and read with :mod:`ast`.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from cleanrl_worker.arguments import ScriptArguments, read_script_arguments

OWN_PPO_MODULE = "cleanrl_worker.algorithms.ppo"

#: Algorithm name -> (family, one-line description). Every name but ``ppo`` is upstream.
ALGORITHMS: dict[str, tuple[str, str]] = {
    "ppo": ("ppo", "PPO for discrete actions (this worker's own, gymnasium 1.x native)"),
    "ppo_continuous_action": ("ppo", "PPO for continuous actions (MuJoCo, classic control)"),
    "ppo_atari": ("ppo", "PPO on Atari with the Nature CNN"),
    "ppo_atari_lstm": ("ppo", "PPO on Atari with an LSTM"),
    "ppo_atari_envpool": ("ppo", "PPO on Atari through EnvPool"),
    "ppo_atari_multigpu": ("ppo", "PPO on Atari across several GPUs"),
    "ppo_atari_envpool_xla_jax": ("ppo", "PPO on Atari, EnvPool + JAX"),
    "ppo_atari_envpool_xla_jax_scan": ("ppo", "PPO on Atari, EnvPool + JAX scan"),
    "ppo_procgen": ("ppo", "PPO on Procgen"),
    "ppo_rnd_envpool": ("ppo", "PPO with random network distillation"),
    "ppo_pettingzoo_ma_atari": ("ppo", "PPO on PettingZoo Atari (self-play)"),
    "ppg_procgen": ("policy_variants", "Phasic Policy Gradient on Procgen"),
    "rpo_continuous_action": ("policy_variants", "Robust Policy Optimization"),
    "dqn": ("q_learning", "Deep Q-Network"),
    "dqn_atari": ("q_learning", "DQN on Atari"),
    "dqn_jax": ("q_learning", "DQN in JAX"),
    "dqn_atari_jax": ("q_learning", "DQN on Atari in JAX"),
    "qdagger_dqn_atari_impalacnn": ("q_learning", "QDagger DQN on Atari"),
    "qdagger_dqn_atari_jax_impalacnn": ("q_learning", "QDagger DQN on Atari in JAX"),
    "pqn": ("q_learning", "Parallel Q-Network"),
    "pqn_atari_envpool": ("q_learning", "Parallel Q-Network on Atari through EnvPool"),
    "rainbow_atari": ("q_learning", "Rainbow on Atari"),
    "c51": ("distributional", "Categorical DQN"),
    "c51_atari": ("distributional", "Categorical DQN on Atari"),
    "c51_jax": ("distributional", "Categorical DQN in JAX"),
    "c51_atari_jax": ("distributional", "Categorical DQN on Atari in JAX"),
    "sac_continuous_action": ("continuous_control", "Soft Actor-Critic"),
    "sac_atari": ("continuous_control", "Soft Actor-Critic for discrete Atari actions"),
    "td3_continuous_action": ("continuous_control", "Twin Delayed DDPG"),
    "td3_continuous_action_jax": ("continuous_control", "TD3 in JAX"),
    "ddpg_continuous_action": ("continuous_control", "Deep Deterministic Policy Gradient"),
    "ddpg_continuous_action_jax": ("continuous_control", "DDPG in JAX"),
}


class AlgorithmNotFoundError(ValueError):
    """The algorithm's name is unknown, or its script cannot be found."""


@dataclass(frozen=True)
class AlgorithmSpec:
    """A resolved algorithm: the module to run and the file it lives in."""

    name: str
    module: str
    path: Path
    upstream: bool
    #: A directory to put on ``sys.path`` before running (a CleanRL checkout), or None.
    import_root: Path | None = None

    def arguments(self) -> ScriptArguments:
        return _arguments_of(self.path, self.path.stat().st_mtime_ns)


@lru_cache(maxsize=64)
def _arguments_of(path: Path, mtime_ns: int) -> ScriptArguments:
    return read_script_arguments(path)


def checkout_root(cleanrl_path: str | Path) -> Path:
    """The directory holding the ``cleanrl`` package of a checkout (accepts either level)."""
    p = Path(cleanrl_path).expanduser().resolve()
    if (p / "cleanrl").is_dir():
        return p
    if p.name == "cleanrl" and p.is_dir():
        return p.parent
    raise AlgorithmNotFoundError(
        f"cleanrl_path {str(cleanrl_path)!r} is not a CleanRL checkout: it holds no 'cleanrl' "
        "directory; point it at the repository root"
    )


def _upstream_dirs(cleanrl_path: str | Path | None) -> tuple[list[Path], Path | None]:
    if cleanrl_path is not None:
        root = checkout_root(cleanrl_path)
        return [root / "cleanrl"], root
    spec = importlib.machinery.PathFinder.find_spec("cleanrl")
    if spec is None or not spec.submodule_search_locations:
        return [], None
    return [Path(p) for p in spec.submodule_search_locations], None


def resolve(name: str, cleanrl_path: str | Path | None = None) -> AlgorithmSpec:
    """Find the script of ``name``; raises :class:`AlgorithmNotFoundError` saying what to do."""
    if name not in ALGORITHMS:
        import difflib

        close = difflib.get_close_matches(name, list(ALGORITHMS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise AlgorithmNotFoundError(
            f"unknown algo {name!r}{hint} (see `mosaic workers show cleanrl` for the list)"
        )
    if name == "ppo":
        spec = importlib.util.find_spec(OWN_PPO_MODULE)
        assert spec is not None and spec.origin is not None
        return AlgorithmSpec(name, OWN_PPO_MODULE, Path(spec.origin), upstream=False)
    dirs, root = _upstream_dirs(cleanrl_path)
    for d in dirs:
        candidate = d / f"{name}.py"
        if candidate.is_file():
            return AlgorithmSpec(name, f"cleanrl.{name}", candidate, True, root)
    where = f"in the checkout {cleanrl_path}" if cleanrl_path else "on this Python"
    raise AlgorithmNotFoundError(
        f"algo {name!r} is upstream CleanRL's cleanrl/{name}.py, which is not installed {where}; "
        "install it with `pip install --no-deps --ignore-requires-python cleanrl==1.2.0 "
        "stable-baselines3 tensorboard` or set cleanrl_path to a CleanRL checkout"
    )


def missing_modules(path: Path) -> list[str]:
    """Top-level modules the script imports at module level that cannot be found here."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wanted: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            wanted.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            wanted.add(node.module.split(".")[0])
    missing = []
    for top in sorted(wanted):
        if top in sys.stdlib_module_names and top != "distutils":
            continue
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(top)
    return missing


def algorithm_table(cleanrl_path: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per algorithm: ``name``, ``family``, ``description``, ``module``, ``source``
    (``mosaic`` or ``cleanrl``), ``importable`` (script found and every module it imports at
    top level is installed), ``missing`` (what is not) and ``path``."""
    rows = []
    for name, (family, description) in ALGORITHMS.items():
        row: dict[str, Any] = {
            "name": name,
            "family": family,
            "description": description,
            "module": OWN_PPO_MODULE if name == "ppo" else f"cleanrl.{name}",
            "source": "mosaic" if name == "ppo" else "cleanrl",
        }
        try:
            spec = resolve(name, cleanrl_path)
        except AlgorithmNotFoundError:
            row.update(importable=False, missing=["cleanrl"], path=None)
        else:
            missing = missing_modules(spec.path)
            row.update(importable=not missing, missing=missing, path=str(spec.path))
        rows.append(row)
    return rows


__all__ = [
    "ALGORITHMS",
    "OWN_PPO_MODULE",
    "AlgorithmNotFoundError",
    "AlgorithmSpec",
    "algorithm_table",
    "checkout_root",
    "missing_modules",
    "resolve",
]
