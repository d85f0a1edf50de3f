"""What a run uses of the config and environment MOSAIC's platform sends, and what it ignores.

The platform's CleanRL form sends ``algo_params`` for a newer CleanRL than the one installed
here, and its dispatcher sets ``CLEANRL_*``, ``TRACK_*`` and ``WANDB_*`` variables. Nothing of
that makes a run fail: each key is honoured, or accepted and reported once with the reason in
:attr:`Resolution.ignored` (the names themselves: :mod:`mosaic_worker_cleanrl.algo_params`).
``TRACK_TENSORBOARD=0`` keeps the scripts' TensorBoard files off the disk (their scalars still
become series), except with W&B tracking, which reads the files.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mosaic_worker_cleanrl import availability
from mosaic_worker_cleanrl.algo_params import (
    COUNT_ARGUMENTS,
    NOT_FORWARDED,
    PLACEHOLDER,
    is_placeholder,
)
from mosaic_worker_cleanrl.arguments import ScriptArguments, normalise_name
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.registry import resolve as find_algorithm
from mosaic_worker_cleanrl.upstream_video import VIDEO_INSTALL, video_available

#: Config fields that are run metadata only: kept in the config (``run_started``,
#: ``analytics.json``), not used by the training.
METADATA_FIELDS = ("notes", "agent_id")

#: W&B fields of the config besides ``track_wandb``.
WANDB_FIELDS = (
    "wandb_project_name",
    "wandb_entity",
    "wandb_run_name",
    "wandb_api_key",
    "wandb_use_vpn_proxy",
    "wandb_http_proxy",
    "wandb_https_proxy",
)

#: The W&B fields forwarded as script arguments when tracking is on (when the script has them).
WANDB_ARGUMENTS = ("wandb_project_name", "wandb_entity")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass
class Resolution:
    """The config a run uses and what it did not use of what it was given."""

    config: CleanRLConfig
    #: key -> reason, for every key or variable given but not used (see :func:`summary`).
    ignored: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: the ignored keys grouped by reason (empty when nothing was ignored)."""
        return summary(self.ignored)


def summary(ignored: Mapping[str, str]) -> str:
    """``"ignored: a, b (reason); c (reason)"``, keys that share a reason together."""
    if not ignored:
        return ""
    by_reason: dict[str, list[str]] = {}
    for key, reason in ignored.items():
        by_reason.setdefault(reason, []).append(key)
    return "ignored: " + "; ".join(f"{', '.join(k)} ({r})" for r, k in by_reason.items())


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _positive_int(text: str) -> int | None:
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 1 else None


def resolve(
    config: CleanRLConfig,
    script: ScriptArguments,
    environ: Mapping[str, str],
    *,
    have_wandb: bool | None = None,
    have_video: bool | None = None,
    save_model_problems: list[str] | None = None,
) -> Resolution:
    """The config a run uses: the dispatcher's variables applied where the config is silent,
    ``algo_params`` reduced to what the script is given, W&B off without wandb.

    ``have_wandb`` / ``have_video`` default to whether wandb / moviepy are importable;
    ``save_model_problems`` are the reasons ``save_model`` cannot work for this script.
    """
    if have_wandb is None:
        have_wandb = importlib.util.find_spec("wandb") is not None
    if have_video is None:
        have_video = video_available()
    ignored: dict[str, str] = {}
    update: dict[str, Any] = {}
    takes_num_envs = "num_envs" in script

    # -- the dispatcher's variables -------------------------------------------------------
    raw = environ.get("CLEANRL_NUM_ENVS")
    if raw is not None:
        value = _positive_int(raw)
        if value is None:
            ignored["CLEANRL_NUM_ENVS"] = f"{raw!r} is not a positive integer"
        elif config.num_envs is not None:
            if value != config.num_envs:
                ignored["CLEANRL_NUM_ENVS"] = f"the config's num_envs ({config.num_envs}) wins"
        elif takes_num_envs:
            update["num_envs"] = value
        elif value != 1:
            ignored["CLEANRL_NUM_ENVS"] = f"{config.algo} here runs one env (no --num-envs)"
    raw = environ.get("CLEANRL_SEED")
    if raw is not None:
        try:
            seed = int(raw.strip())
        except ValueError:
            ignored["CLEANRL_SEED"] = f"{raw!r} is not an integer"
        else:
            if config.seed is None:
                update["seed"] = seed
            elif seed != config.seed:
                ignored["CLEANRL_SEED"] = f"the config's seed ({config.seed}) wins"
    raw = environ.get("CLEANRL_RUN_ID")
    if raw and raw != config.run_id:
        ignored["CLEANRL_RUN_ID"] = f"the config's run_id ({config.run_id}) names the run"
    raw = environ.get("CLEANRL_AGENT_ID")
    if raw and config.agent_id is None:
        update["agent_id"] = raw
    track_wandb = config.track_wandb or environ.get("TRACK_WANDB", "").lower() in _TRUE
    tensorboard_off = environ.get("TRACK_TENSORBOARD", "").lower() in _FALSE
    if config.track_tensorboard is None:
        update["track_tensorboard"] = not tensorboard_off
    elif tensorboard_off and config.track_tensorboard:
        ignored["TRACK_TENSORBOARD"] = "the config's track_tensorboard (true) wins"
    if environ.get("CLEANRL_PROCEDURAL_GENERATION", "").lower() in _FALSE:
        ignored["CLEANRL_PROCEDURAL_GENERATION"] = NOT_FORWARDED["procedural_generation"][1]

    # -- algo_params ------------------------------------------------------------------------
    num_envs = update.get("num_envs", config.num_envs)
    if num_envs is not None and not takes_num_envs:
        update["num_envs"] = None
        if num_envs != 1:
            ignored["num_envs"] = f"{config.algo} here runs one env (no --num-envs)"
    kept: dict[str, Any] = {}
    for key, value in config.algo_params.items():
        name = normalise_name(key)
        spec = script.arguments.get(name)
        if name in COUNT_ARGUMENTS:  # only a placeholder is left here (fold_algo_params)
            ignored[f"algo_params.{key}"] = PLACEHOLDER
        elif name in NOT_FORWARDED:
            ignored[f"algo_params.{key}"] = NOT_FORWARDED[name][1]
        elif spec is None:
            ignored[f"algo_params.{key}"] = f"the installed {config.algo} has no {_flag(name)}"
        elif name == "capture_video" and value is True and not have_video:
            ignored[f"algo_params.{key}"] = f"recording needs moviepy: {VIDEO_INSTALL}"
        elif name == "save_model" and value is True and save_model_problems:
            ignored[f"algo_params.{key}"] = "; ".join(save_model_problems)
        elif (
            spec.optional
            and spec.default is None
            and spec.default_source is None
            and is_placeholder(value)
        ):
            ignored[f"algo_params.{key}"] = PLACEHOLDER
        elif name in WANDB_ARGUMENTS and not track_wandb:
            ignored[f"algo_params.{key}"] = "W&B tracking is off"
        else:
            kept[key] = value
    update["algo_params"] = kept

    # -- W&B and run metadata -------------------------------------------------------------
    wandb_given = [f for f in WANDB_FIELDS if getattr(config, f) not in (None, False)]
    tensorboard = update.get("track_tensorboard", config.track_tensorboard)
    if not tensorboard and track_wandb and have_wandb:
        update["track_tensorboard"] = True  # wandb's sync_tensorboard reads the files
        name = "TRACK_TENSORBOARD" if config.track_tensorboard is None else "track_tensorboard"
        ignored[name] = "W&B tracking reads the TensorBoard files: they are written"
    if track_wandb and not have_wandb:
        update["track_wandb"] = False
        for name in ["track_wandb", *wandb_given]:
            ignored[name] = "wandb is not installed (pip install wandb)"
    else:
        update["track_wandb"] = track_wandb
        for name in wandb_given:
            if not track_wandb:
                ignored[name] = "W&B tracking is off"
            elif name == "wandb_run_name":
                ignored[name] = "CleanRL scripts name their W&B run themselves"
            elif name in WANDB_ARGUMENTS and name not in script:
                ignored[name] = f"the installed {config.algo} has no {_flag(name)}"
    for name in METADATA_FIELDS:
        if getattr(config, name) is not None or name in update:
            ignored[name] = "kept as run metadata (run_started, analytics.json extra); not used"
    resolved = config.model_copy(update=update)
    return Resolution(resolved, ignored)


def resolve_run(config: CleanRLConfig, environ: Mapping[str, str]) -> Resolution:
    """:func:`resolve` for a run of ``config``: its algorithm's script arguments, and what
    ``save_model`` needs for an upstream script. A ``policy_eval`` run uses no script: its
    config is kept as it is."""
    if config.mode == "policy_eval":
        return Resolution(config)
    algo = find_algorithm(config.algo, config.cleanrl_path)
    problems: list[str] = []
    if algo.upstream:
        problems = availability.save_model_problems(algo.path, algo.import_root)
    return resolve(config, algo.arguments(), environ, save_model_problems=problems)


def wandb_environment(config: CleanRLConfig) -> dict[str, str]:
    """Variables wandb reads, from the config's W&B fields (for a run with tracking on; the
    dispatcher's own variables, already in the environment, win)."""
    env: dict[str, str] = {}
    if config.wandb_api_key is not None:
        env["WANDB_API_KEY"] = config.wandb_api_key.get_secret_value()
    if config.wandb_use_vpn_proxy or config.wandb_http_proxy or config.wandb_https_proxy:
        if config.wandb_http_proxy:
            env.update(WANDB_HTTP_PROXY=config.wandb_http_proxy, HTTP_PROXY=config.wandb_http_proxy)
        if config.wandb_https_proxy:
            env.update(
                WANDB_HTTPS_PROXY=config.wandb_https_proxy, HTTPS_PROXY=config.wandb_https_proxy
            )
    env.setdefault("WANDB_DISABLE_GYM", "true")
    return env


__all__ = [
    "METADATA_FIELDS",
    "WANDB_ARGUMENTS",
    "WANDB_FIELDS",
    "Resolution",
    "resolve",
    "resolve_run",
    "summary",
    "wandb_environment",
]
