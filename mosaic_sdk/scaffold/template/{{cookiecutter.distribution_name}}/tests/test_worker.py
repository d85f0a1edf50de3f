{%- set pz = cookiecutter.env_family == "pettingzoo" -%}
"""Unit tests of the worker: config, description, {{ "policy" if pz else "learner" }}, and one real run through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
{% if pz %}
import numpy as np
{%- endif %}
import pytest
from mosaic_sdk.analytics import read_analytics
from mosaic_sdk.contract import ConfigError, WorkerCapabilities, WorkerMetadata
from mosaic_sdk.telemetry import validate_line

from {{ cookiecutter.package_name }} import WORKER_TYPE, plugin
from {{ cookiecutter.package_name }}.config import Config
from {{ cookiecutter.package_name }}.runtime import {{ "PreferencePolicy" if pz else "PreferenceLearner" }}


def test_config_round_trips_and_refuses_unknown_keys() -> None:
    config = Config(run_id="t-1", seed=3, episodes=2)
    assert Config.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="episodez"):
        Config.from_dict({"run_id": "t-1", "episodez": 2})


def test_description_matches_the_entry_point() -> None:
    metadata, capabilities = plugin.mosaic_worker_describe()
    assert isinstance(metadata, WorkerMetadata) and isinstance(capabilities, WorkerCapabilities)
    assert capabilities.worker_type == WORKER_TYPE
{%- if pz %}
    assert capabilities.max_agents > 1 and capabilities.step_numbering == "per_agent"
{%- endif %}
    assert metadata.name == {{ cookiecutter.worker_name|py_str }}


def test_the_entry_point_answers_when_called() -> None:
    # The MOSAIC platform calls it and gets its own classes; without the platform, the SDK's.
    metadata, capabilities = plugin.get_worker_metadata()
    assert capabilities.worker_type == WORKER_TYPE
    assert metadata.name == {{ cookiecutter.worker_name|py_str }}
{%- if pz %}


def test_the_policy_plays_only_legal_actions_and_learns() -> None:
    policy = PreferencePolicy(3, Config(run_id="t", seed=0, exploration=0.5), seed=0)
    mask = np.array([0, 1, 0])
    assert {policy.act(mask) for _ in range(50)} == {1}
    policy.learn([0, 0, 0, 0], game_return=0.0)
    policy.learn([2, 2, 2, 2], game_return=1.0)
    assert policy.preferences[2] > policy.preferences[0]
{%- else %}


def test_learner_moves_towards_the_actions_of_a_better_episode() -> None:
    import gymnasium

    learner = PreferenceLearner(gymnasium.spaces.Discrete(2), Config(run_id="t", seed=0))
    learner.learn([0, 0, 0, 0], episode_return=0.0)
    learner.learn([1, 1, 1, 1], episode_return=10.0)
    assert learner.preferences[1] > learner.preferences[0]
    assert learner.probabilities()[1] > 0.5
{%- endif %}


def run_worker(tmp_path: Path, *extra: str, **config: object) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": "test-run", "seed": 1, **config}), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", {{ cookiecutter.package_name|py_str }}, "--config", str(path), *extra],
        stdin=subprocess.DEVNULL,  # the worker reads control commands there: end them at once
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
{%- if pz %}


def steps_of(steps: list[dict], episode: dict) -> list[dict]:
    """The step lines of one agent's episode line."""
    key = (episode["agent_id"], episode["episode_index"])
    return [s for s in steps if (s["agent_id"], s["episode_index"]) == key]


def test_a_run_reports_every_agent_and_writes_its_manifest(tmp_path: Path) -> None:
    done = run_worker(tmp_path, episodes=3)
{%- else %}


def test_a_run_reports_valid_telemetry_and_writes_its_manifest(tmp_path: Path) -> None:
    done = run_worker(tmp_path, episodes=2, max_steps_per_episode=20)
{%- endif %}
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    for line in lines:
        assert validate_line(line) == [], line
    events = [line.get("event") for line in lines if line.get("type") == "lifecycle"]
    assert events[0] == "run_started" and events[-1] == "run_completed"
{%- if pz %}
    agents = lines[0]["payload"]["agents"]
    assert len(agents) == 2
    episodes = [line for line in lines if line.get("type") == "episode"]
    # An episode is a game: every agent writes its own episode line for each of the 3 games.
    assert sorted((e["agent_id"], e["episode_index"]) for e in episodes) == sorted(
        (a, i) for a in agents for i in range(3)
    )
    steps = [line for line in lines if line.get("type") == "step"]
    for e in episodes:  # each agent's steps add up to its episode line
        own = steps_of(steps, e)
        assert [s["step_index"] for s in own] == list(range(e["steps"]))
        assert sum(s["reward"] for s in own) == pytest.approx(e["total_reward"])
    counts = lines[-1]["payload"]["agents"]
    assert {a: c["episodes"] for a, c in counts.items()} == dict.fromkeys(agents, 3)
    manifest = read_analytics(tmp_path)
    assert manifest.status == "completed" and manifest.episodes == 3
    assert manifest.extra["agents"] == counts
{%- if cookiecutter.paradigm == "turn_based" %}


def test_the_reward_of_a_game_is_credited_to_the_move_that_earned_it(tmp_path: Path) -> None:
    # In a decided game the winner's last step line carries its win: the reward is credited
    # to the agent that moved, on that move's line, not to the agent whose turn came next.
    done = run_worker(tmp_path, episodes=5)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    steps = [line for line in lines if line.get("type") == "step"]
    for e in (line for line in lines if line.get("type") == "episode"):
        own = steps_of(steps, e)
        assert own[-1]["terminated"] and own[-1]["reward"] == e["total_reward"]


def test_a_person_plays_one_agent_against_the_policy(tmp_path: Path) -> None:
    from mosaic_sdk.control import Session
    from mosaic_sdk.control.session import ControlCommandError

    path = tmp_path / "config.json"
    config = {"run_id": "test-play", "seed": 1, "mode": "interactive", "episodes": 3}
    path.write_text(json.dumps(config), encoding="utf-8")
    argv = [sys.executable, "-m", {{ cookiecutter.package_name|py_str }}, "--config", str(path)]
    with Session.launch(argv, timeout=60) as session:
        reply = session.reset(seed=4)
        assert reply.agent_id and reply.legal_actions  # the person's agent, its legal moves
        illegal = next(a for a in range(100) if a not in reply.legal_actions)
        with pytest.raises(ControlCommandError, match="illegal_action"):
            session.step(action=illegal)  # refused, not played
        while not reply.episode_done:
            reply = session.step(action=reply.legal_actions[0])
        assert session.close().closed
    assert session.events() == ["run_started", "run_completed"]
{%- endif %}
{%- if cookiecutter.include_fastlane %}


def test_the_board_is_on_fastlane_while_a_person_plays(tmp_path: Path) -> None:
    # Runs publish too: the conformance suite checks their frames (fastlane.frames_published,
    # agents.fastlane_streams) and that the segments go (fastlane.segment_removed).
    from mosaic_sdk.control import Session

    path = tmp_path / "config.json"
    config = {"run_id": "test-board", "seed": 1, "mode": "interactive", "episodes": 3}
    path.write_text(json.dumps({**config, "fastlane": True}), encoding="utf-8")
    argv = [sys.executable, "-m", {{ cookiecutter.package_name|py_str }}, "--config", str(path)]
    with Session.launch(argv, timeout=60) as session:
        reply = session.reset(seed=4)
        before = session.wait_frame(timeout=30).array().copy()
        reply = session.step(action=reply.legal_actions[0])
        after = session.wait_frame(reply, timeout=30).array()
        assert before.shape == after.shape and (before != after).any()  # the move is drawn
        assert session.close().closed
    shm = Path("/dev/shm")
    if shm.is_dir():  # the writers removed their segments when the env closed
        assert not [p for p in shm.iterdir() if "test-board" in p.name]
{%- endif %}
{%- else %}
    assert sum(1 for line in lines if line.get("type") == "episode") == 2
    manifest = read_analytics(tmp_path)
    assert manifest.status == "completed" and manifest.episodes == 2
    assert manifest.worker_type == WORKER_TYPE


def test_the_platforms_dispatcher_config_runs(tmp_path: Path) -> None:
    # MOSAIC's trainer daemon adds worker_id and its form's keys to the config and starts the
    # worker with --grpc --grpc-target ADDR --worker-id ID: the SDK's base config takes them.
    done = run_worker(
        tmp_path,
        "--grpc",
        "--grpc-target",
        "127.0.0.1:50055",
        "--worker-id",
        "w-1",
        episodes=1,
        max_steps_per_episode=5,
        worker_id="w-1",
        schema_id="telemetry.step.default",
        schema_definition={"fields": []},
    )
    assert done.returncode == 0, done.stderr
    assert {json.loads(line)["worker_id"] for line in done.stdout.splitlines()} == {"w-1"}


def test_interactive_mode_steps_on_command(tmp_path: Path) -> None:
    from mosaic_sdk.control import Session

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": "test-play", "seed": 1, "mode": "interactive"}))
    argv = [sys.executable, "-m", {{ cookiecutter.package_name|py_str }}, "--config", str(path)]
    with Session.launch(argv, timeout=60) as session:
        session.reset(seed=4)
        replay = [session.step().observation for _ in range(3)]
        session.reset(seed=4)
        assert [session.step().observation for _ in range(3)] == replay
        assert session.close().closed
    assert session.events() == ["run_started", "run_completed"]
{%- endif %}


def test_dry_run_validates_without_running(tmp_path: Path) -> None:
    done = run_worker(tmp_path, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    bad = run_worker(tmp_path, "--dry-run", env_id={{ ("pettingzoo.classic.no_such_game_v0" if pz else "NoSuchEnv-v0")|py_str }})
    assert bad.returncode == 2
    assert {{ ("no_such_game_v0" if pz else "NoSuchEnv-v0")|py_str }} in bad.stderr
{%- if not pz and cookiecutter.include_fastlane %}


def test_fastlane_is_switched_on_by_config_or_environment() -> None:
    from {{ cookiecutter.package_name }}.fastlane import fastlane_settings

    def on(environ: dict[str, str], **config: object) -> bool:
        return fastlane_settings(Config(run_id="t", **config), environ=environ).enabled

    assert not on({})
    assert on({}, fastlane=True)
    assert not on({"MOSAIC_FASTLANE": "1"}, fastlane=False)
    assert on({"MOSAIC_FASTLANE": "1"})
    assert on({"MOSAIC_FASTLANE_ONLY": "1"})
    assert on({"GYM_GUI_FASTLANE_ONLY": "1"})
    assert not on({"MOSAIC_FASTLANE": "1", "MOSAIC_FASTLANE_VIDEO_MODE": "off"})


def test_a_fastlane_run_completes_and_leaves_no_segment(tmp_path: Path) -> None:
    # Frames themselves are checked by the conformance suite (fastlane.frames_published).
    done = run_worker(tmp_path, episodes=1, max_steps_per_episode=10, fastlane=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["event"] == "run_completed"
    shm = Path("/dev/shm")
    if shm.is_dir():  # the writer removed its segment when the env closed
        assert not [p for p in shm.iterdir() if "test-run" in p.name]
{%- endif %}
