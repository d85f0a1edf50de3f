"""The algorithm registry: names to modules, where to find them, whether they run here.

``ppo`` is our own PPO (:mod:`mosaic_worker_cleanrl.algorithms.ppo`); every other name is the
upstream script ``cleanrl.<name>`` from the user's CleanRL install, or from a CleanRL checkout
named by the config's ``cleanrl_path``. Nothing here imports an algorithm: scripts are found
with the import system's finders and read with :mod:`ast`; whether each runs here is
:mod:`mosaic_worker_cleanrl.availability`'s check.
"""

from __future__ import annotations

import difflib
import importlib.machinery
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from mosaic_worker_cleanrl import param_schema
from mosaic_worker_cleanrl.arguments import ScriptArguments, read_script_arguments
from mosaic_worker_cleanrl.availability import check, missing_modules, save_model_support

OWN_PPO_MODULE = "mosaic_worker_cleanrl.algorithms.ppo"

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


def default_env(spec: AlgorithmSpec) -> str | None:
    """The script's ``--env-id`` default, when it has a readable one."""
    arg = spec.arguments().arguments.get("env_id")
    return arg.default if arg is not None and isinstance(arg.default, str) else None


def algorithm_table(
    cleanrl_path: str | Path | None = None, gym_compat: str = "auto"
) -> list[dict[str, Any]]:
    """One row per algorithm: ``name``, ``family``, ``description``, ``module``, ``source``
    (``mosaic`` or ``cleanrl``), ``runs`` (the script is found and every check of
    :func:`mosaic_worker_cleanrl.availability.check` passes), ``why_not`` (the reasons when it does
    not), ``importable`` (every module it imports is found here), ``missing`` (those that are
    not), ``gym_layer`` (it imports ``gym`` and runs through the worker's gym layer),
    ``params`` (number of ``algo_params`` it accepts), ``save_model`` (what
    ``algo_params.save_model`` gives here, see
    :class:`mosaic_worker_cleanrl.availability.SaveModel`; our PPO always checkpoints) and
    ``path``."""
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
            where = f"cleanrl/{name}.py is not in " + (
                f"the checkout {cleanrl_path}" if cleanrl_path else _installed_cleanrl()
            )
            row.update(runs=False, why_not=where, importable=False, missing=["cleanrl"],
                       gym_layer=False, params=0, save_model="cannot save",
                       path=None)  # fmt: skip
        else:
            found = check(spec.path, default_env(spec), gym_compat=gym_compat)
            schema = algo_params_schema(spec)
            saving = (
                save_model_support(
                    spec.path, "save_model" in spec.arguments().arguments, spec.import_root
                ).summary
                if spec.upstream
                else "always (checkpoints/ppo_<step>.pt)"
            )
            row.update(runs=found.runs, why_not=found.why_not, importable=not found.missing,
                       missing=list(found.missing), gym_layer=found.gym_layer,
                       params=len(schema["properties"]), save_model=saving,
                       path=str(spec.path))  # fmt: skip
        rows.append(row)
    return rows


def _installed_cleanrl() -> str:

    try:
        return f"the installed cleanrl {metadata.version('cleanrl')}"
    except metadata.PackageNotFoundError:
        return "this Python (cleanrl is not installed)"


def algo_params_schema(spec: AlgorithmSpec) -> dict[str, Any]:
    """The JSON Schema of ``algo_params`` for a resolved algorithm (see
    :mod:`mosaic_worker_cleanrl.param_schema`)."""
    return param_schema.algo_params_schema(spec.name, spec.arguments(), spec.module)


def algo_params_schemas(cleanrl_path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """``{algo: JSON Schema of its algo_params}`` for every algorithm whose script is found."""
    schemas = {}
    for name in ALGORITHMS:
        try:
            spec = resolve(name, cleanrl_path)
        except AlgorithmNotFoundError:
            continue
        schemas[name] = algo_params_schema(spec)
    return schemas


__all__ = [
    "ALGORITHMS",
    "OWN_PPO_MODULE",
    "AlgorithmNotFoundError",
    "AlgorithmSpec",
    "algo_params_schema",
    "algo_params_schemas",
    "algorithm_table",
    "checkout_root",
    "default_env",
    "missing_modules",
    "resolve",
]
