"""The configs and environments the platform's CleanRL train form and dispatcher send.

Written from facts about the platform (MOSAIC's ``gym_gui`` at commit 8dc806e), not from its
code: the per-algorithm fields of its form schema (``metadata/cleanrl/0.1.0/schemas.json``:
name, type, default; fields marked runtime-only left out), the three fallback parameter lists
the form uses when an algorithm has no schema, and what its widgets make of a default:

- the form shows a schema field only when its type is bool, int, float or str and its name is
  not one the form sets itself (:data:`FORM_EXCLUDED`);
- an int field whose default is not an int shows 0, a float field without a number 0.0, and
  floats are kept to 6 decimals; a str field without a default is the empty string;
- ``env_id`` follows the environment selector; ``save_model`` is the form's own checkbox
  (checked by default);
- the seed (1 unless the schema says otherwise) and total_timesteps come from the schema's
  defaults; the GPU box is checked, FastLane-only is on, the video mode follows num_envs (grid
  over min(num_envs, 16) envs above one env, else single).

The dispatcher writes ``metadata.worker.config`` to a file with the trainer's run id and
``worker_id`` (default ``cleanrl_worker``), and sets the environment of
:func:`dispatcher_environment`.
"""

from __future__ import annotations

import copy
from typing import Any

#: Schema fields the form never shows (it sets them itself or not at all).
FORM_EXCLUDED = frozenset(
    {
        "exp_name", "track", "seed", "total_timesteps", "cuda", "wandb_project_name",
        "wandb_project", "wandb_entity", "wandb_entity_name", "wandb_api_key", "wandb_email",
        "wandb_mode", "wandb_run_name", "batch_size", "minibatch_size", "num_iterations",
    }
)  # fmt: skip

#: The form's own parameter lists, used for an algorithm without a schema (name, type, default).
FALLBACK_FIELDS: dict[str, tuple[tuple[str, str, Any], ...]] = {
    "ppo": (
        ("learning_rate", "float", 2.5e-4),
        ("num_envs", "int", 16),
        ("num_steps", "int", 2048),
        ("capture_video", "bool", False),
    ),
    "ppo_atari": (
        ("learning_rate", "float", 2.5e-4),
        ("total_frames", "int", 10_000_000),
        ("capture_video", "bool", False),
    ),
    "dqn": (
        ("learning_rate", "float", 1e-4),
        ("batch_size", "int", 128),
        ("buffer_size", "int", 100_000),
        ("capture_video", "bool", False),
    ),
}

#: Algorithms of the schema whose scripts are not in CleanRL 1.2.0 (the one installable here).
NOT_IN_CLEANRL_1_2 = frozenset(
    {
        "pqn", "pqn_atari_envpool", "pqn_atari_envpool_lstm", "qdagger_dqn_atari_impalacnn",
        "qdagger_dqn_atari_jax_impalacnn", "rainbow_atari",
    }
)  # fmt: skip

#: The form schema's fields per algorithm (name, type, default), runtime-only ones left out.
SCHEMA_FIELDS: dict[str, tuple[tuple[str, str, Any], ...]] = {
    "c51": (
        ("exp_name", "str", "c51"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "CartPole-v1"),
        ("total_timesteps", "int", 500000),
        ("learning_rate", "float", 0.00025),
        ("num_envs", "int", 1),
        ("n_atoms", "int", 101),
        ("v_min", "float", -100),
        ("v_max", "float", 100),
        ("buffer_size", "int", 10000),
        ("gamma", "float", 0.99),
        ("target_network_frequency", "int", 500),
        ("start_e", "float", 1),
        ("end_e", "float", 0.05),
        ("exploration_fraction", "float", 0.5),
        ("learning_starts", "int", 10000),
        ("train_frequency", "int", 10),
    ),
    "c51_atari": (
        ("exp_name", "str", "c51_atari"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "BreakoutNoFrameskip-v4"),
        ("total_timesteps", "int", 10000000),
        ("learning_rate", "float", 0.00025),
        ("num_envs", "int", 1),
        ("n_atoms", "int", 51),
        ("v_min", "float", -10),
        ("v_max", "float", 10),
        ("buffer_size", "int", 1000000),
        ("gamma", "float", 0.99),
        ("target_network_frequency", "int", 10000),
        ("start_e", "float", 1),
        ("end_e", "float", 0.01),
        ("exploration_fraction", "float", 0.1),
        ("learning_starts", "int", 80000),
        ("train_frequency", "int", 4),
    ),
    "c51_atari_jax": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "c51_jax": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "ddpg_continuous_action": (
        ("exp_name", "str", "ddpg_continuous_action"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "Hopper-v4"),
        ("total_timesteps", "int", 1000000),
        ("learning_rate", "float", 0.0003),
        ("buffer_size", "int", 1000000),
        ("gamma", "float", 0.99),
        ("tau", "float", 0.005),
        ("exploration_noise", "float", 0.1),
        ("learning_starts", "int", 25000.0),
        ("policy_frequency", "int", 2),
    ),
    "ddpg_continuous_action_jax": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "dqn": (
        ("exp_name", "str", "dqn"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "CartPole-v1"),
        ("total_timesteps", "int", 500000),
        ("learning_rate", "float", 0.00025),
        ("num_envs", "int", 1),
        ("buffer_size", "int", 10000),
        ("gamma", "float", 0.99),
        ("tau", "float", 1.0),
        ("target_network_frequency", "int", 500),
        ("start_e", "float", 1),
        ("end_e", "float", 0.05),
        ("exploration_fraction", "float", 0.5),
        ("learning_starts", "int", 10000),
        ("train_frequency", "int", 10),
    ),
    "dqn_atari": (
        ("exp_name", "str", "dqn_atari"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "BreakoutNoFrameskip-v4"),
        ("total_timesteps", "int", 10000000),
        ("learning_rate", "float", 0.0001),
        ("num_envs", "int", 1),
        ("buffer_size", "int", 1000000),
        ("gamma", "float", 0.99),
        ("tau", "float", 1.0),
        ("target_network_frequency", "int", 1000),
        ("start_e", "float", 1),
        ("end_e", "float", 0.01),
        ("exploration_fraction", "float", 0.1),
        ("learning_starts", "int", 80000),
        ("train_frequency", "int", 4),
    ),
    "dqn_atari_jax": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "dqn_jax": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "ppg_procgen": (("capture_video", "bool", False),),
    "ppo": (
        ("exp_name", "str", "ppo"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "CartPole-v1"),
        ("total_timesteps", "int", 500000),
        ("learning_rate", "float", 0.00025),
        ("num_envs", "int", 4),
        ("num_steps", "int", 128),
        ("anneal_lr", "bool", True),
        ("gamma", "float", 0.99),
        ("gae_lambda", "float", 0.95),
        ("num_minibatches", "int", 4),
        ("update_epochs", "int", 4),
        ("norm_adv", "bool", True),
        ("clip_coef", "float", 0.2),
        ("clip_vloss", "bool", True),
        ("ent_coef", "float", 0.01),
        ("vf_coef", "float", 0.5),
        ("max_grad_norm", "float", 0.5),
        ("target_kl", "float", None),
    ),
    "ppo_atari": (
        ("exp_name", "str", "ppo_atari"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("env_id", "str", "BreakoutNoFrameskip-v4"),
        ("total_timesteps", "int", 10000000),
        ("learning_rate", "float", 0.00025),
        ("num_envs", "int", 8),
        ("num_steps", "int", 128),
        ("anneal_lr", "bool", True),
        ("gamma", "float", 0.99),
        ("gae_lambda", "float", 0.95),
        ("num_minibatches", "int", 4),
        ("update_epochs", "int", 4),
        ("norm_adv", "bool", True),
        ("clip_coef", "float", 0.1),
        ("clip_vloss", "bool", True),
        ("ent_coef", "float", 0.01),
        ("vf_coef", "float", 0.5),
        ("max_grad_norm", "float", 0.5),
        ("target_kl", "float", None),
    ),
    "ppo_atari_envpool": (("capture_video", "bool", False),),
    "ppo_atari_envpool_xla_jax": (("capture_video", "bool", False),),
    "ppo_atari_envpool_xla_jax_scan": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "ppo_atari_lstm": (
        ("exp_name", "str", "ppo_atari_lstm"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("env_id", "str", "BreakoutNoFrameskip-v4"),
        ("total_timesteps", "int", 10000000),
        ("learning_rate", "float", 0.00025),
        ("num_envs", "int", 8),
        ("num_steps", "int", 128),
        ("anneal_lr", "bool", True),
        ("gamma", "float", 0.99),
        ("gae_lambda", "float", 0.95),
        ("num_minibatches", "int", 4),
        ("update_epochs", "int", 4),
        ("norm_adv", "bool", True),
        ("clip_coef", "float", 0.1),
        ("clip_vloss", "bool", True),
        ("ent_coef", "float", 0.01),
        ("vf_coef", "float", 0.5),
        ("max_grad_norm", "float", 0.5),
        ("target_kl", "float", None),
    ),
    "ppo_atari_multigpu": (
        ("exp_name", "str", "ppo_atari_multigpu"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("env_id", "str", "BreakoutNoFrameskip-v4"),
        ("total_timesteps", "int", 10000000),
        ("learning_rate", "float", 0.00025),
        ("local_num_envs", "int", 8),
        ("num_steps", "int", 128),
        ("anneal_lr", "bool", True),
        ("gamma", "float", 0.99),
        ("gae_lambda", "float", 0.95),
        ("num_minibatches", "int", 4),
        ("update_epochs", "int", 4),
        ("norm_adv", "bool", True),
        ("clip_coef", "float", 0.1),
        ("clip_vloss", "bool", True),
        ("ent_coef", "float", 0.01),
        ("vf_coef", "float", 0.5),
        ("max_grad_norm", "float", 0.5),
        ("target_kl", "float", None),
        ("local_batch_size", "int", 0),
        ("local_minibatch_size", "int", 0),
        ("num_envs", "int", 0),
        ("world_size", "int", 0),
    ),
    "ppo_continuous_action": (
        ("exp_name", "str", "ppo_continuous_action"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "HalfCheetah-v4"),
        ("total_timesteps", "int", 1000000),
        ("learning_rate", "float", 0.0003),
        ("num_envs", "int", 1),
        ("num_steps", "int", 2048),
        ("anneal_lr", "bool", True),
        ("gamma", "float", 0.99),
        ("gae_lambda", "float", 0.95),
        ("num_minibatches", "int", 32),
        ("update_epochs", "int", 10),
        ("norm_adv", "bool", True),
        ("clip_coef", "float", 0.2),
        ("clip_vloss", "bool", True),
        ("ent_coef", "float", 0.0),
        ("vf_coef", "float", 0.5),
        ("max_grad_norm", "float", 0.5),
        ("target_kl", "float", None),
    ),
    "ppo_pettingzoo_ma_atari": (("capture_video", "bool", False),),
    "ppo_procgen": (("capture_video", "bool", False),),
    "ppo_rnd_envpool": (("capture_video", "bool", False),),
    "pqn": (
        ("exp_name", "str", "pqn"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("env_id", "str", "CartPole-v1"),
        ("total_timesteps", "int", 500000),
        ("learning_rate", "float", 0.00025),
        ("num_envs", "int", 4),
        ("num_steps", "int", 128),
        ("num_minibatches", "int", 4),
        ("update_epochs", "int", 4),
        ("anneal_lr", "bool", True),
        ("gamma", "float", 0.99),
        ("start_e", "float", 1),
        ("end_e", "float", 0.05),
        ("exploration_fraction", "float", 0.5),
        ("max_grad_norm", "float", 10.0),
        ("q_lambda", "float", 0.65),
    ),
    "pqn_atari_envpool": (("capture_video", "bool", False),),
    "pqn_atari_envpool_lstm": (("capture_video", "bool", False),),
    "qdagger_dqn_atari_impalacnn": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "qdagger_dqn_atari_jax_impalacnn": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
    "rainbow_atari": (
        ("exp_name", "str", "rainbow_atari"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "BreakoutNoFrameskip-v4"),
        ("total_timesteps", "int", 10000000),
        ("learning_rate", "float", 6.25e-05),
        ("num_envs", "int", 1),
        ("buffer_size", "int", 1000000),
        ("gamma", "float", 0.99),
        ("tau", "float", 1.0),
        ("target_network_frequency", "int", 8000),
        ("start_e", "float", 1),
        ("end_e", "float", 0.01),
        ("exploration_fraction", "float", 0.1),
        ("learning_starts", "int", 80000),
        ("train_frequency", "int", 4),
        ("n_step", "int", 3),
        ("prioritized_replay_alpha", "float", 0.5),
        ("prioritized_replay_beta", "float", 0.4),
        ("prioritized_replay_eps", "float", 1e-06),
        ("n_atoms", "int", 51),
        ("v_min", "float", -10),
        ("v_max", "float", 10),
    ),
    "rpo_continuous_action": (
        ("exp_name", "str", "rpo_continuous_action"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("env_id", "str", "HalfCheetah-v4"),
        ("total_timesteps", "int", 8000000),
        ("learning_rate", "float", 0.0003),
        ("num_envs", "int", 1),
        ("num_steps", "int", 2048),
        ("anneal_lr", "bool", True),
        ("gamma", "float", 0.99),
        ("gae_lambda", "float", 0.95),
        ("num_minibatches", "int", 32),
        ("update_epochs", "int", 10),
        ("norm_adv", "bool", True),
        ("clip_coef", "float", 0.2),
        ("clip_vloss", "bool", True),
        ("ent_coef", "float", 0.0),
        ("vf_coef", "float", 0.5),
        ("max_grad_norm", "float", 0.5),
        ("target_kl", "float", None),
        ("rpo_alpha", "float", 0.5),
    ),
    "sac_atari": (
        ("exp_name", "str", "sac_atari"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("env_id", "str", "BeamRiderNoFrameskip-v4"),
        ("total_timesteps", "int", 5000000),
        ("buffer_size", "int", 1000000),
        ("gamma", "float", 0.99),
        ("tau", "float", 1.0),
        ("learning_starts", "int", 20000.0),
        ("policy_lr", "float", 0.0003),
        ("q_lr", "float", 0.0003),
        ("update_frequency", "int", 4),
        ("target_network_frequency", "int", 8000),
        ("alpha", "float", 0.2),
        ("autotune", "bool", True),
        ("target_entropy_scale", "float", 0.89),
    ),
    "sac_continuous_action": (
        ("exp_name", "str", "sac_continuous_action"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("env_id", "str", "Hopper-v4"),
        ("total_timesteps", "int", 1000000),
        ("num_envs", "int", 1),
        ("buffer_size", "int", 1000000),
        ("gamma", "float", 0.99),
        ("tau", "float", 0.005),
        ("learning_starts", "int", 5000.0),
        ("policy_lr", "float", 0.0003),
        ("q_lr", "float", 0.001),
        ("policy_frequency", "int", 2),
        ("target_network_frequency", "int", 1),
        ("alpha", "float", 0.2),
        ("autotune", "bool", True),
    ),
    "td3_continuous_action": (
        ("exp_name", "str", "td3_continuous_action"),
        ("seed", "int", 1),
        ("torch_deterministic", "bool", True),
        ("cuda", "bool", True),
        ("track", "bool", False),
        ("wandb_project_name", "str", "cleanRL"),
        ("wandb_entity", "str", None),
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
        ("env_id", "str", "Hopper-v4"),
        ("total_timesteps", "int", 1000000),
        ("learning_rate", "float", 0.0003),
        ("num_envs", "int", 1),
        ("buffer_size", "int", 1000000),
        ("gamma", "float", 0.99),
        ("tau", "float", 0.005),
        ("policy_noise", "float", 0.2),
        ("exploration_noise", "float", 0.1),
        ("learning_starts", "int", 25000.0),
        ("policy_frequency", "int", 2),
        ("noise_clip", "float", 0.5),
    ),
    "td3_continuous_action_jax": (
        ("capture_video", "bool", False),
        ("save_model", "bool", False),
        ("upload_model", "bool", False),
        ("hf_entity", "str", ""),
    ),
}


def widget_value(kind: str, default: Any) -> Any:
    """What the form's widget for a field of ``kind`` holds when left at ``default``."""
    if kind == "bool":
        return bool(default)
    if kind == "int":
        return default if isinstance(default, int) and not isinstance(default, bool) else 0
    if kind == "float":
        return round(float(default), 6) if isinstance(default, (int, float)) else 0.0
    return default if isinstance(default, str) else ""


def form_algo_params(algo: str, env_id: str, *, fallback: bool = False) -> dict[str, Any]:
    """``extras.algo_params`` of an untouched form for ``algo`` (``fallback``: the form's own
    lists, as when the schema file is missing)."""
    fields = FALLBACK_FIELDS[algo] if fallback else SCHEMA_FIELDS[algo]
    params: dict[str, Any] = {}
    for name, kind, default in fields:
        if name in FORM_EXCLUDED and not fallback:
            continue
        if kind not in ("bool", "int", "float", "str"):
            continue
        params[name] = env_id if name == "env_id" else widget_value(kind, default)
    params["save_model"] = True
    return params


def schema_default(algo: str, name: str) -> Any:
    return next((d for n, _, d in SCHEMA_FIELDS.get(algo, ()) if n == name), None)


def form_config(
    algo: str,
    env_id: str = "CartPole-v1",
    *,
    run_id: str = "01JPLATFORMRUN",
    total_timesteps: int | None = None,
    fallback: bool = False,
    filled: bool = False,
) -> dict[str, Any]:
    """The worker config file the dispatcher writes for an untouched form (``filled``: with
    agent id, notes and the W&B project and entity typed in, TensorBoard ticked)."""
    params = form_algo_params(algo, env_id, fallback=fallback)
    num_envs = params.get("num_envs")
    count = num_envs if isinstance(num_envs, int) and num_envs > 0 else None
    if count is None:
        mode, grid_limit = "single", 4
    elif count > 1:
        mode, grid_limit = "grid", min(count, 16)
    else:
        mode, grid_limit = "single", 1
    extras: dict[str, Any] = {"cuda": True}
    if filled:
        extras["tensorboard_dir"] = "tensorboard"
        extras["wandb_project_name"] = "mosaic-runs"
        extras["wandb_entity"] = "my-team"
        extras["notes"] = "baseline on the lab machine"
    extras["algo_params"] = params
    extras.update(
        fastlane_only=True,
        fastlane_slot=0,
        fastlane_video_mode=mode,
        fastlane_grid_limit=grid_limit,
    )
    seed = schema_default(algo, "seed")
    timesteps = schema_default(algo, "total_timesteps")
    config: dict[str, Any] = {
        "run_id": run_id,
        "algo": algo,
        "env_id": env_id,
        "total_timesteps": total_timesteps or (timesteps if isinstance(timesteps, int) else 2048),
        "extras": extras,
    }
    seed = seed if isinstance(seed, int) and seed >= 0 else 1  # the seed box; 0 means none
    if seed > 0:
        config["seed"] = seed
    if filled:
        config["agent_id"] = "agent-7"
        extras["agent_id"] = "agent-7"
    config["worker_id"] = "cleanrl_worker"
    return config


def dispatcher_environment(config: dict[str, Any], *, filled: bool = False) -> dict[str, str]:
    """The variables the form asks the dispatcher to set for the worker of ``config``."""
    extras = config["extras"]
    params = extras.get("algo_params", {})
    num_envs = params.get("num_envs")
    env = {
        "CLEANRL_RUN_ID": config["run_id"],
        "CLEANRL_AGENT_ID": config.get("agent_id", "cleanrl_agent"),
        "TRACK_TENSORBOARD": "1" if "tensorboard_dir" in extras else "0",
        "TRACK_WANDB": "1" if extras.get("track_wandb") else "0",
        "WANDB_MODE": "online" if extras.get("track_wandb") else "offline",
        "WANDB_DISABLE_GYM": "true",
        "CLEANRL_NUM_ENVS": str(num_envs if isinstance(num_envs, int) and num_envs > 0 else 1),
        "CLEANRL_PROCEDURAL_GENERATION": "1",
        "GYM_GUI_FASTLANE_ONLY": "1" if extras["fastlane_only"] else "0",
        "GYM_GUI_FASTLANE_SLOT": str(extras["fastlane_slot"]),
        "GYM_GUI_FASTLANE_VIDEO_MODE": extras["fastlane_video_mode"],
        "GYM_GUI_FASTLANE_GRID_LIMIT": str(max(1, extras["fastlane_grid_limit"])),
    }
    if "seed" in config:
        env["CLEANRL_SEED"] = str(config["seed"])
    return env


def job_descriptor(config: dict[str, Any]) -> dict[str, Any]:
    """The same config nested the way the trainer's run record holds it."""
    return {
        "metadata": {"worker": {"worker_id": "cleanrl_worker", "config": copy.deepcopy(config)}}
    }


__all__ = [
    "FALLBACK_FIELDS",
    "FORM_EXCLUDED",
    "NOT_IN_CLEANRL_1_2",
    "SCHEMA_FIELDS",
    "dispatcher_environment",
    "form_algo_params",
    "form_config",
    "job_descriptor",
    "widget_value",
]
