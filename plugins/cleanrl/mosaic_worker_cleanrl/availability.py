"""Whether an algorithm's script runs on this machine, and if not, why.

Checked for real, without importing the script or anything heavy:

- every module the script imports at module level is found by the import system (``gym`` is
  provided by the worker's gym layer, :mod:`mosaic_worker_cleanrl.legacy_gym`, unless ``gym_compat``
  is ``off``);
- Atari scripts (those using Stable-Baselines3's Atari wrappers or an Atari default env) need
  ``ale_py``, their default env registered with gymnasium, and its ROM present.

:func:`check` returns an :class:`Availability`;
:func:`~mosaic_worker_cleanrl.registry.algorithm_table` puts it in ``mosaic workers show
cleanrl``, beside :func:`save_model_support`: what
``--save-model`` gives (the script has the argument; the ``cleanrl_utils.evals`` module it
evaluates the saved model with is importable here, with everything that imports; whether that
evaluation records videos, and whether moviepy is there to write them).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from mosaic_worker_cleanrl import source_parse

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
    "moviepy": "'mosaic-worker-cleanrl[video]'",
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
    tree = source_parse.parse(path.read_text(encoding="utf-8"))
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
    import gymnasium  # gymnasium and ALE only when a default env is checked (start-up time)

    from mosaic_worker_cleanrl.gym_compat import register_ale_envs

    register_ale_envs()
    try:
        spec = gymnasium.spec(default_env)
    except gymnasium.error.Error:
        return [f"its default env {default_env} is not registered by ale_py"]
    game = (spec.kwargs or {}).get("game")
    if game is None:
        return []
    try:
        from ale_py import roms  # optional dependency
    except ImportError:
        return []
    get_rom_path = getattr(roms, "get_rom_path", None)
    if get_rom_path is not None and get_rom_path(game) is None:
        return [f"the Atari ROM {game!r} is not installed (AutoROM --accept-license)"]
    return []


def _source_of(module: str, import_root: Path | None) -> Path | None:
    """The file of ``module`` (in the checkout ``import_root`` first, when given)."""
    if import_root is not None:
        candidate = import_root.joinpath(*module.split(".")).with_suffix(".py")
        if candidate.is_file():
            return candidate
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin)


def _evaluate_records_video(source: Path) -> bool:
    """Whether the ``evaluate`` in ``source`` records video unless told otherwise."""
    tree = source_parse.parse(source.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "evaluate":
            args = node.args.args[-len(node.args.defaults) :] if node.args.defaults else []
            for arg, default in zip(args, node.args.defaults, strict=True):
                if arg.arg == "capture_video":
                    return isinstance(default, ast.Constant) and default.value is True
    return False


def _eval_modules(path: Path) -> list[str]:
    """The ``cleanrl_utils.evals.*`` modules the script imports (anywhere: after saving)."""
    return sorted(
        node.module
        for node in ast.walk(source_parse.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("cleanrl_utils.evals.")
    )


@dataclass(frozen=True)
class SaveModel:
    """What ``--save-model`` does for a script here."""

    #: The script has a ``save_model`` argument.
    supported: bool
    #: Why the run would fail after saving (its evaluation cannot be imported here).
    problems: tuple[str, ...] = ()
    #: The evaluation after saving records videos unless told otherwise.
    eval_records_video: bool = False
    #: moviepy is installed, so those videos are written (else skipped with a warning).
    videos: bool = False

    @property
    def summary(self) -> str:
        """One phrase for ``mosaic workers show cleanrl``."""
        if not self.supported:
            return "cannot save"
        if self.problems:
            return "fails: " + "; ".join(self.problems)
        if not self.eval_records_video:
            return "checkpoint"
        if self.videos:
            return "checkpoint + eval videos"
        return "checkpoint; eval videos need moviepy (the video extra)"


def save_model_problems(path: Path, import_root: Path | None = None) -> list[str]:
    """Why ``--save-model`` would fail here: after saving, CleanRL's scripts evaluate the
    model with ``cleanrl_utils.evals.<name>.evaluate``, which must be importable (from the
    checkout ``import_root`` when the script comes from one) with everything it imports.
    Videos that ``RecordVideo`` cannot write without moviepy are no reason: the worker skips
    them then (:mod:`mosaic_worker_cleanrl.upstream_video`)."""
    problems = []
    for module in _eval_modules(path):
        source = _source_of(module, import_root)
        if source is None:
            problems.append(
                f"save_model runs {module}, and cleanrl_utils is not installed (it comes with "
                "cleanrl: pip install --no-deps --ignore-requires-python cleanrl==1.2.0)"
            )
            continue
        missing = [m for m in missing_modules(source) if m != "cleanrl_utils"]
        if missing:
            hints = " ".join(INSTALL_HINTS.get(m, m) for m in missing)
            problems.append(
                f"save_model runs {module}, which imports {', '.join(missing)}, not installed "
                f"here (pip install {hints})"
            )
    return problems


def save_model_support(
    path: Path, has_save_model: bool, import_root: Path | None = None
) -> SaveModel:
    """What ``--save-model`` does for the script at ``path`` here (``has_save_model``: the
    script has that argument)."""
    if not has_save_model:
        return SaveModel(supported=False)
    # gymnasium only when asked (start-up time)
    from mosaic_worker_cleanrl.upstream_video import video_available

    problems = save_model_problems(path, import_root)
    sources = [_source_of(m, import_root) for m in _eval_modules(path)]
    records = any(s is not None and _evaluate_records_video(s) for s in sources)
    return SaveModel(True, tuple(problems), records, video_available())


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


__all__ = ["ATARI_WRAPPERS", "INSTALL_HINTS", "Availability", "SaveModel", "check",
           "missing_modules", "module_imports", "save_model_problems",
           "save_model_support"]  # fmt: skip
