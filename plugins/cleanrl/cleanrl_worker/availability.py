"""Whether an algorithm's script runs on this machine, and if not, why.

Checked for real, without importing the script or anything heavy:

- every module the script imports at module level is found by the import system (``gym`` is
  provided by the worker's gym layer, :mod:`cleanrl_worker.legacy_gym`, unless ``gym_compat``
  is ``off``);
- Atari scripts (those using Stable-Baselines3's Atari wrappers or an Atari default env) need
  ``ale_py``, their default env registered with gymnasium, and its ROM present.

:func:`check` returns an :class:`Availability`; :func:`~cleanrl_worker.registry.algorithm_table`
puts it in ``mosaic workers show cleanrl``.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

#: How to install a module a script imports, when it is not ``pip install <module>``.
INSTALL_HINTS = {
    "cv2": "opencv-python",
    "ale_py": "ale-py",
    "jax": "jax",
    "flax": "flax",
    "optax": "optax",
    "envpool": "envpool",
    "procgen": "procgen",
    "pettingzoo": "pettingzoo",
    "supersuit": "supersuit",
    "stable_baselines3": "stable-baselines3",
    "torch": "torch",
    "tensorboard": "tensorboard",
    "wandb": "wandb",
}

ATARI_WRAPPERS = "stable_baselines3.common.atari_wrappers"


@dataclass(frozen=True)
class Availability:
    """Whether a script runs here: ``runs``; ``missing`` modules; ``reasons`` (why not)."""

    runs: bool
    missing: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    #: The script imports ``gym`` and runs through the worker's gym layer.
    gym_layer: bool = False
    atari: bool = False

    @property
    def why_not(self) -> str:
        return "; ".join(self.reasons)


def module_imports(path: Path) -> set[str]:
    """Dotted names of the modules ``path`` imports at module level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wanted: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            wanted.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            wanted.add(node.module)
    return wanted


def _found(top: str) -> bool:
    if top in sys.stdlib_module_names and top != "distutils":
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(path: Path, *, gym_layer: bool = True) -> list[str]:
    """Top-level modules ``path`` imports that cannot be found here (``gym`` counts as found
    when ``gym_layer``: the worker provides it)."""
    tops = {name.split(".")[0] for name in module_imports(path)}
    return sorted(top for top in tops if not (top == "gym" and gym_layer) and not _found(top))


def _atari_checks(default_env: str | None) -> list[str]:
    if not _found("ale_py"):
        return ["Atari envs need ale_py (pip install ale-py; 0.9 and later ship the ROMs)"]
    if not default_env:
        return []
    import gymnasium

    from cleanrl_worker.gym_compat import register_ale_envs

    register_ale_envs()
    try:
        spec = gymnasium.spec(default_env)
    except gymnasium.error.Error:
        return [f"its default env {default_env} is not registered by ale_py"]
    game = (spec.kwargs or {}).get("game")
    if game is None:
        return []
    try:
        from ale_py import roms
    except ImportError:
        return []
    get_rom_path = getattr(roms, "get_rom_path", None)
    if get_rom_path is not None and get_rom_path(game) is None:
        return [f"the Atari ROM {game!r} is not installed (AutoROM --accept-license)"]
    return []


def _evaluate_records_video(module: str) -> bool:
    """Whether ``module``'s ``evaluate`` records video unless told otherwise."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:
        return False
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "evaluate":
            args = node.args.args[-len(node.args.defaults) :] if node.args.defaults else []
            for arg, default in zip(args, node.args.defaults, strict=True):
                if arg.arg == "capture_video":
                    return isinstance(default, ast.Constant) and default.value is True
    return False


def save_model_problems(path: Path) -> list[str]:
    """Why ``--save-model`` would fail here: after saving, CleanRL's scripts evaluate the
    model with ``cleanrl_utils.evals.<name>.evaluate``, which records video by default."""
    evals = sorted(
        node.module
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("cleanrl_utils.evals.")
    )
    problems = []
    for module in evals:
        if not _found("cleanrl_utils"):
            problems.append(f"save_model runs {module}, and cleanrl_utils is not installed")
        elif _evaluate_records_video(module) and not _found("moviepy"):
            problems.append(
                f"save_model makes the script evaluate the saved model with {module}, which "
                "records video: it needs moviepy (pip install moviepy)"
            )
    return problems


def check(path: Path, default_env: str | None = None, *, gym_compat: str = "auto") -> Availability:
    """Whether the script at ``path`` runs here (``default_env``: its ``--env-id`` default)."""
    imports = module_imports(path)
    tops = {name.split(".")[0] for name in imports}
    gym_layer = "gym" in tops and gym_compat != "off"
    missing = missing_modules(path, gym_layer=gym_compat != "off")
    reasons = []
    if missing:
        hints = " ".join(INSTALL_HINTS.get(m, m) for m in missing)
        reasons.append(f"imports {', '.join(missing)}, not installed here (pip install {hints})")
    atari = ATARI_WRAPPERS in imports or bool(
        default_env and ("NoFrameskip" in default_env or default_env.startswith("ALE/"))
    )
    if atari and "envpool" not in tops:
        reasons += _atari_checks(default_env)
    return Availability(
        runs=not reasons,
        missing=tuple(missing),
        reasons=tuple(reasons),
        gym_layer=gym_layer,
        atari=atari,
    )


__all__ = ["ATARI_WRAPPERS", "INSTALL_HINTS", "Availability", "check", "missing_modules",
           "module_imports", "save_model_problems"]  # fmt: skip
