"""The configs the platform's CleanRL form and dispatcher send: accepted, honoured or reported.

The shapes come from :mod:`platform_forms` (written from facts about the platform). Before
this worker took them as they are, the default PPO form was refused for six algo_params
(capture_video, save_model, upload_model, hf_entity, env_id, num_envs) and the DQN form for
two (env_id, num_envs); the dispatcher's environment was ignored.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from mosaic_worker_cleanrl.arguments import normalise_name
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.fastlane_settings import resolve_fastlane
from mosaic_worker_cleanrl.launch_args import build_argv
from mosaic_worker_cleanrl.platform_config import Resolution, resolve, wandb_environment
from mosaic_worker_cleanrl.registry import resolve as find_algorithm

from mosaic_sdk.contract import ConfigError
from worker_cleanrl import platform_forms as forms
from worker_cleanrl.worker_runs import run_worker, unique_run_id

SCHEMA_ALGOS = sorted(set(forms.SCHEMA_FIELDS) - forms.NOT_IN_CLEANRL_1_2)


def _resolved(
    config: dict[str, Any], environ: dict[str, str] | None = None, **kwargs: Any
) -> tuple[Resolution, list[str]]:
    cfg = CleanRLConfig.from_dict(config)
    algo = find_algorithm(cfg.algo)
    kwargs.setdefault("have_wandb", False)
    kwargs.setdefault("have_video", True)
    env = forms.dispatcher_environment(config) if environ is None else environ
    resolution = resolve(cfg, algo.arguments(), env, **kwargs)
    return resolution, build_argv(resolution.config, algo, Path("/run"))


def test_the_fixture_knows_the_schema_of_every_algorithm_of_the_form() -> None:
    assert len(forms.SCHEMA_FIELDS) == 33
    assert len(SCHEMA_ALGOS) == 27


@pytest.mark.parametrize("algo", SCHEMA_ALGOS)
def test_every_algorithm_s_default_form_config_is_accepted_and_every_key_accounted_for(
    algo: str,
) -> None:
    """Each algo_params key the form sends is forwarded as a flag, sets a config field, or is
    reported with a reason: none is refused, none disappears silently."""
    config = forms.form_config(algo)
    resolution, argv = _resolved(config)
    flags = {a.split("=")[0].removeprefix("--no-").removeprefix("--") for a in argv}
    for key in config["extras"]["algo_params"]:
        name = normalise_name(key)
        forwarded = name.replace("_", "-") in flags
        reported = f"algo_params.{key}" in resolution.ignored
        folded = name in ("env_id", "num_envs") and not reported
        assert forwarded or reported or folded, f"{algo}: {key} neither forwarded nor reported"
        if name != "num_envs":  # a placeholder 0 here, and CLEANRL_NUM_ENVS sets the flag
            assert not (forwarded and reported), f"{algo}: {key} forwarded and reported"
    assert "\n" not in resolution.summary()


@pytest.mark.parametrize("algo", sorted(forms.FALLBACK_FIELDS))
def test_the_form_s_own_parameter_lists_are_accepted(algo: str) -> None:
    env_id = "BreakoutNoFrameskip-v4" if algo == "ppo_atari" else "CartPole-v1"
    resolution, _ = _resolved(forms.form_config(algo, env_id, fallback=True))
    if algo == "ppo_atari":
        assert (
            "run's length is the config's total_timesteps"
            in (resolution.ignored["algo_params.total_frames"])
        )


def test_default_ppo_form_builds_the_run_it_asks_for() -> None:
    config = forms.form_config("ppo", total_timesteps=2048)
    resolution, argv = _resolved(config)
    cfg = resolution.config
    assert (cfg.env_id, cfg.num_envs, cfg.seed, cfg.cuda) == ("CartPole-v1", 4, 1, True)
    for flag in ("--env-id=CartPole-v1", "--num-envs=4", "--seed=1", "--total-timesteps=2048",
                 "--no-capture-video", "--save-model", "--learning-rate=0.00025",
                 "--torch-deterministic", "--num-steps=128"):  # fmt: skip
        assert flag in argv, (flag, argv)
    assert not any("upload" in a or "hf-entity" in a or "target-kl" in a for a in argv)
    assert set(resolution.ignored) == {
        "algo_params.upload_model",
        "algo_params.hf_entity",
        "algo_params.target_kl",
        "agent_id",
    }
    assert cfg.track_tensorboard is False  # TRACK_TENSORBOARD=0: honoured
    assert "no network upload" in resolution.ignored["algo_params.upload_model"]
    fastlane = resolve_fastlane(cfg, {})
    assert fastlane is not None  # fastlane_only: frames on, step lines off
    assert (fastlane["video_mode"], fastlane["grid_limit"]) == ("grid", 4)


def test_default_dqn_form_builds_the_run_it_asks_for() -> None:
    resolution, argv = _resolved(forms.form_config("dqn", total_timesteps=2048))
    for flag in ("--env-id=CartPole-v1", "--num-envs=1", "--seed=1", "--save-model=True",
                 "--capture-video=False", "--buffer-size=10000", "--cuda=True",
                 "--learning-starts=10000"):  # fmt: skip
        assert flag in argv, (flag, argv)
    assert not any("upload" in a or "hf-entity" in a for a in argv)
    assert resolution.config.fastlane_only and resolution.config.fastlane_video_mode == "single"


def test_the_job_descriptor_shape_loads_the_same() -> None:
    config = forms.form_config("dqn")
    assert CleanRLConfig.from_dict(forms.job_descriptor(config)) == CleanRLConfig.from_dict(config)


def test_a_filled_in_form_keeps_its_metadata_and_reports_wandb_keys_without_wandb() -> None:
    config = forms.form_config("dqn", filled=True)
    cfg = CleanRLConfig.from_dict(config)
    assert (cfg.agent_id, cfg.notes) == ("agent-7", "baseline on the lab machine")
    assert (cfg.wandb_project_name, cfg.wandb_entity) == ("mosaic-runs", "my-team")
    resolution, argv = _resolved(config)
    assert resolution.ignored["wandb_project_name"] == "W&B tracking is off"
    assert "run metadata" in resolution.ignored["notes"]
    assert "run metadata" in resolution.ignored["agent_id"]
    assert "TRACK_TENSORBOARD" not in resolution.ignored  # ticked: honoured
    assert not any("wandb" in a for a in argv)
    # tracking asked for, wandb missing: the run goes on without it, saying why
    config["extras"]["track_wandb"] = True
    config["extras"]["wandb_api_key"] = "secret-key"
    resolution, argv = _resolved(config, have_wandb=False)
    assert "--track=False" in argv
    for key in ("track_wandb", "wandb_project_name", "wandb_entity", "wandb_api_key"):
        assert resolution.ignored[key] == "wandb is not installed (pip install wandb)"
    assert "secret-key" not in str(resolution.config.to_dict())


def test_with_wandb_installed_tracking_forwards_project_entity_and_key() -> None:
    config = forms.form_config("dqn", filled=True)
    config["extras"].update(track_wandb=True, wandb_api_key="secret-key", wandb_run_name="r7")
    resolution, argv = _resolved(config, have_wandb=True)
    for flag in ("--track=True", "--wandb-project-name=mosaic-runs", "--wandb-entity=my-team"):
        assert flag in argv
    assert "name their W&B run" in resolution.ignored["wandb_run_name"]
    assert wandb_environment(resolution.config)["WANDB_API_KEY"] == "secret-key"
    # our PPO takes the entity too
    config = forms.form_config("ppo", filled=True)
    config["extras"]["track_wandb"] = True
    _, argv = _resolved(config, have_wandb=True)
    assert "--track" in argv and "--wandb-entity=my-team" in argv


def test_the_dispatcher_s_variables_apply_where_the_config_is_silent() -> None:
    config = {"run_id": "r1", "algo": "ppo", "env_id": "CartPole-v1"}
    env = {"CLEANRL_NUM_ENVS": "8", "CLEANRL_SEED": "42", "CLEANRL_AGENT_ID": "a1",
           "CLEANRL_RUN_ID": "r1", "TRACK_TENSORBOARD": "1"}  # fmt: skip
    resolution, argv = _resolved(config, env)
    assert "--num-envs=8" in argv and "--seed=42" in argv
    assert resolution.config.agent_id == "a1"
    assert set(resolution.ignored) == {"agent_id"}
    # the config wins where it speaks, and the loser is reported
    config.update(seed=3, num_envs=2, run_id="r2")
    resolution, argv = _resolved(config, env)
    assert "--num-envs=2" in argv and "--seed=3" in argv
    assert resolution.ignored["CLEANRL_NUM_ENVS"] == "the config's num_envs (2) wins"
    assert resolution.ignored["CLEANRL_SEED"] == "the config's seed (3) wins"
    assert "run_id (r2)" in resolution.ignored["CLEANRL_RUN_ID"]


def test_dispatcher_variables_that_cannot_apply_are_reported_not_fatal() -> None:
    env = {"CLEANRL_NUM_ENVS": "4", "CLEANRL_SEED": "x", "TRACK_TENSORBOARD": "0",
           "TRACK_WANDB": "1", "CLEANRL_PROCEDURAL_GENERATION": "0"}  # fmt: skip
    resolution, argv = _resolved({"run_id": "r1", "algo": "c51"}, env)  # c51 1.2: no --num-envs
    assert "runs one env" in resolution.ignored["CLEANRL_NUM_ENVS"]
    assert "not an integer" in resolution.ignored["CLEANRL_SEED"]
    assert "TRACK_TENSORBOARD" not in resolution.ignored
    assert resolution.config.track_tensorboard is False
    assert "wandb is not installed" in resolution.ignored["track_wandb"]
    assert "fixed levels" in resolution.ignored["CLEANRL_PROCEDURAL_GENERATION"]
    assert not any(a.startswith("--num-envs") for a in argv)


def test_track_tensorboard_follows_the_variable_unless_the_config_or_wandb_says_otherwise() -> None:
    config: dict[str, Any] = {"run_id": "r1", "algo": "dqn"}
    resolution, _ = _resolved(config, {})
    assert resolution.config.track_tensorboard is True  # files by default
    resolution, _ = _resolved(config, {"TRACK_TENSORBOARD": "false"})
    assert resolution.config.track_tensorboard is False and not resolution.ignored
    resolution, _ = _resolved({**config, "track_tensorboard": True}, {"TRACK_TENSORBOARD": "0"})
    assert resolution.config.track_tensorboard is True
    assert "track_tensorboard (true) wins" in resolution.ignored["TRACK_TENSORBOARD"]
    # W&B's sync_tensorboard reads the event files: they are written, and that is said
    tracked = {**config, "track_wandb": True}
    resolution, _ = _resolved(tracked, {"TRACK_TENSORBOARD": "0"}, have_wandb=True)
    assert resolution.config.track_tensorboard is True
    assert "W&B tracking reads" in resolution.ignored["TRACK_TENSORBOARD"]
    resolution, _ = _resolved({**tracked, "track_tensorboard": False}, {}, have_wandb=True)
    assert "W&B tracking reads" in resolution.ignored["track_tensorboard"]


def test_algo_params_env_id_must_agree_with_the_config_s() -> None:
    config = forms.form_config("ppo")
    config["extras"]["algo_params"]["env_id"] = "Acrobot-v1"
    with pytest.raises(ConfigError, match="algo_params.env_id is 'Acrobot-v1' but env_id is"):
        CleanRLConfig.from_dict(config)


def test_a_refusal_names_every_bad_key_and_lists_the_accepted_ones_once() -> None:
    config = forms.form_config("ppo")
    params = config["extras"]["algo_params"]
    params.update(learning_rat=0.1, bogus=1, num_steps="many")
    with pytest.raises(ConfigError) as info:
        CleanRLConfig.from_dict(config)
    text = str(info.value)
    assert "ppo has no argument 'learning_rat' (did you mean learning_rate?), 'bogus'" in text
    assert "num_steps expects an int, got str 'many'" in text
    assert text.count("it accepts") == 1 and text.count("learning_rate,") == 1
    config = forms.form_config("dqn")
    config["extras"].update(bogus=1, other=2)
    with pytest.raises(ConfigError) as info:
        CleanRLConfig.from_dict(config)
    text = str(info.value)
    assert "unknown keys 'bogus', 'other'" in text and text.count("(known keys:") == 1


def test_a_wrong_type_for_a_platform_only_key_is_refused() -> None:
    config = forms.form_config("ppo")
    config["extras"]["algo_params"]["upload_model"] = "yes"
    with pytest.raises(ConfigError, match="upload_model expects a bool"):
        CleanRLConfig.from_dict(config)


def test_the_config_as_received_is_kept_whole() -> None:
    config = forms.form_config("ppo")
    cfg = CleanRLConfig.from_dict(copy.deepcopy(config))
    assert cfg.raw == config


@pytest.mark.slow
def test_the_default_ppo_form_runs_to_completion_with_the_dispatcher_s_environment(
    runs: Path,
) -> None:
    config = forms.form_config("ppo", run_id=unique_run_id("form-ppo"), total_timesteps=1024)
    result = run_worker(runs, config, timeout=300, extra_env=forms.dispatcher_environment(config))
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    started = result.events("run_started")[0]["payload"]
    assert "--num-envs=4" in started["argv"] and "--save-model" in started["argv"]
    assert set(started["ignored"]) == {
        "algo_params.upload_model", "algo_params.hf_entity", "algo_params.target_kl", "agent_id",
    }  # fmt: skip
    assert not (result.run_dir / "tensorboard").exists()  # the form's TRACK_TENSORBOARD=0
    assert any(e["payload"]["values"].get("losses/value_loss") is not None
               for e in result.events("metrics"))  # fmt: skip
    assert result.stderr.count("cleanrl: ignored: ") == 1
    assert result.analytics()["extra"]["agent_id"] == "cleanrl_agent"
    assert list((result.run_dir / "checkpoints").glob("ppo_*.pt"))
    assert not Path(f"/dev/shm/mosaic.fastlane.{config['run_id']}").exists()
