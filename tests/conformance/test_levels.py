"""The two conformance levels: registration, the platform's line rules, advisories.

Quick tests without worker launches; the fixtures that fail each check at each level are in
test_broken_fixtures.py.
"""

from __future__ import annotations

import json

import pytest

from mosaic_sdk.conformance import all_checks, describe_checks, get_check
from mosaic_sdk.conformance.checks.telemetry import _count_problems
from mosaic_sdk.conformance.platform_lines import platform_line_problems, proxy_problems
from mosaic_sdk.conformance.registry import LEVELS, PLATFORM, SDK, conformance_check

#: What the issue lists as the platform's needs (plus loading and describing the worker).
PLATFORM_CHECKS = {
    "discovery.entry_point_loads",
    "discovery.name_unique",
    "description.metadata_valid",
    "cli.config_runs",
    "cli.dispatcher_launch",
    "telemetry.valid_jsonl",
    "telemetry.run_started_first",
    "telemetry.terminal_last",
    "telemetry.streams_live",
    "telemetry.proxy_episode_index",
    "stop.sigterm_exits",
    "stop.run_cancelled",
}


def test_every_check_is_in_the_sdk_level_and_the_platform_level_is_what_the_platform_needs():
    assert all(SDK in c.levels for c in all_checks())
    assert {c.name for c in all_checks() if PLATFORM in c.levels} == PLATFORM_CHECKS
    for row in describe_checks():
        assert set(row["hints"]) == set(row["levels"])
        assert row["levels"] == [lv for lv in LEVELS if lv in row["levels"]]


def test_checks_with_two_rules_take_the_level_and_give_a_hint_per_level() -> None:
    for name in ("telemetry.valid_jsonl", "stop.run_cancelled"):
        check = get_check(name)
        assert check.takes_level
        assert check.hint_for(PLATFORM) != check.hint_for(SDK)
    jsonl = get_check("telemetry.valid_jsonl")
    assert jsonl.runs_for(PLATFORM) == ("normal",)
    assert jsonl.runs_for(SDK) == ("normal", "bad_config")
    heartbeats = get_check("telemetry.heartbeats")
    assert heartbeats.levels == (SDK,)
    assert heartbeats.rule_level(PLATFORM) == SDK  # judged by its own rule, as an advisory
    assert not heartbeats.in_level(PLATFORM)


def test_bad_level_declarations_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown conformance level 'gui'"):
        conformance_check("cli.x", description="d", hint="h" * 30, levels=("gui",))
    with pytest.raises(ValueError, match="belongs to no level"):
        conformance_check("cli.x", description="d", hint="h" * 30, levels=())
    with pytest.raises(ValueError, match="hint missing for level"):
        conformance_check("cli.x", description="d", hint={SDK: "h" * 30})
    with pytest.raises(ValueError, match="does not belong to"):
        conformance_check("cli.x", description="d", hint={SDK: "h", PLATFORM: "p"}, levels=(SDK,))


# --- the platform's line rules ------------------------------------------------------------


def line(**fields) -> str:
    return json.dumps(fields)


GUIDE_LIFECYCLE = line(event="run_started", payload={}, run_id="r", timestamp=1.5)


@pytest.mark.parametrize(
    "text",
    [
        GUIDE_LIFECYCLE,
        line(type="step", episode_index=0, step_index=3, reward=0.5, terminated=False),
        line(type="step", episode=0, step=3),  # the proxy's other spelling
        line(type="episode", episode_index=2, total_reward=1.0, steps=10),
        line(type="episode", episode=2),
        # the SDK's lifecycle shape is accepted too
        line(type="lifecycle", event="heartbeat", payload={}, run_id="r", timestamp=1.0, seq=4),
    ],
)
def test_lines_the_platform_uses(text: str) -> None:
    assert platform_line_problems(text) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Loading weights... done", "not JSON: the proxy drops it silently"),
        ("", "an empty line"),
        ("{not json", "malformed JSON"),
        ("[1, 2]", "not an object (list, a stray print?): the proxy's reader fails on it"),
        ("3", "not an object (int, a stray print?): the proxy's reader fails on it"),
        (line(event_type="step", step_index=1), "'step' (the guide's spelling) is dropped"),
        (line(type="log", message="x"), "the proxy forwards only"),
        (line(type="step", step_index=1), "no episode index ('metadata.episode_index', where"),
        (line(type="step", metadata={"episode_index": -1}), "'metadata.episode_index' is -1"),
        (line(type="step", episode_index=-1, step_index=1), "not an integer >= 0"),
        (line(type="step", episode_index=0, step=True), "'step' is True"),
        (line(type="step", episode_index=0, step_index=0, reward="1"), "'reward' is '1'"),
        (line(type="episode", episode_index=0, steps=1.5), "'steps' is 1.5"),
        (line(run_id="r"), 'without "type" or "event"'),
    ],
)
def test_lines_the_platform_cannot_use(text: str, problem: str) -> None:
    problems = platform_line_problems(text)
    assert problems and any(problem in p for p in problems), problems


# --- what the proxy makes of a step or episode line ----------------------------------------

STOPS = "its reader stops there: nothing after this line reaches the platform"


def sdk_lines() -> list[dict]:
    import io

    from mosaic_sdk.telemetry import TelemetryEmitter

    buf = io.StringIO()
    em = TelemetryEmitter("r", buf, agent_id="a", flush_interval=0)
    em.step(2, 0, 1.0, metadata={"k": 1}, episode_seed=5, payload_version=1)
    em.episode(2, 1.0, 1, metadata={"k": 1}, episode_seed=5)
    return [json.loads(x) for x in buf.getvalue().splitlines()]


@pytest.mark.parametrize(
    "data",
    [
        *sdk_lines(),
        {"type": "step", "episode": 2, "step": 1},  # the proxy's fallback, no SDK index
        {"type": "step", "metadata": {"episode_index": 2}, "step_index": 1},
        {"type": "step", "metadata_json": '{"episode_index": 2}', "episode_index": 2},
        {"type": "episode", "metadata": '{"episode_index": 2}', "episode_index": 2},
        {"type": "step", "episode": 2, "episode_index": 2},
        {"type": "step", "metadata": "not json", "episode": 2},  # ignored by the proxy
    ],
)
def test_lines_the_proxy_forwards_under_the_sdks_index(data: dict) -> None:
    assert proxy_problems(data) == []


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (
            {"type": "step", "episode_index": 2, "step_index": 0},
            "'episode_index' 2 is never read by the platform's proxy (it reads "
            "metadata.episode_index, else 'episode'): the line reaches the platform as episode "
            '0; add "metadata": {"episode_index": 2}',
        ),
        (
            {"type": "episode", "episode_index": 0, "steps": 1},
            "'episode_index' 0 is never read",  # right by chance only: still wrong
        ),
        (
            {"type": "step", "episode_index": 2, "metadata": {"episode_index": 1}},
            "metadata.episode_index is 1 but 'episode_index' is 2: the platform shows this line "
            "under episode 1, the SDK under 2",
        ),
        (
            {"type": "step", "episode_index": 2, "metadata": '{"episode_index": 0}'},
            "metadata.episode_index is 0 but 'episode_index' is 2",
        ),
        (
            {"type": "step", "episode_index": 2, "episode": 7},
            "'episode' is 7 but 'episode_index' is 2",
        ),
        ({"type": "step", "metadata": "[1]"}, "'metadata' is JSON text of list [1], not of an"),
        ({"type": "step", "metadata_json": "null"}, "JSON text of NoneType"),
        ({"type": "step", "metadata": {"episode_index": "x"}}, "the proxy's int() fails"),
        ({"type": "step", "metadata": {"episode_index": -1}}, "unsigned 64-bit field"),
        ({"type": "step", "episode": None}, "'episode' is None: the proxy's int() fails"),
        ({"type": "step", "episode": 0, "step_index": None}, "'step_index' is None"),
        ({"type": "step", "episode": 0, "step": -3}, "'step_index' is -3: outside"),
        ({"type": "step", "episode": 0, "reward": None}, "'reward' is None: the proxy's float()"),
        ({"type": "step", "episode": 0, "reward": 10**400}, "float() fails on it (Overflow"),
        ({"type": "step", "episode": 0, "payload_version": 2**32}, "unsigned 32-bit field"),
        ({"type": "step", "episode": 0, "payload_version": None}, "'payload_version' is None"),
        ({"type": "step", "episode": 0, "episode_seed": "seed"}, "'episode_seed' is 'seed'"),
        ({"type": "step", "episode": 0, "episode_seed": -1}, "'episode_seed' is -1: outside"),
        ({"type": "step", "episode": 0, "ts_unix_ns": "1.2.3"}, "'ts_unix_ns' is '1.2.3'"),
        ({"type": "step", "episode": 0, "ts_unix_ns": 10**40}, "too large for a timestamp"),
        ({"type": "episode", "episode": 0, "total_reward": None}, "'total_reward' is None"),
        ({"type": "episode", "episode": 0, "reward": "x"}, "'total_reward' is 'x'"),
        ({"type": "episode", "episode": 0, "steps": None}, "'steps' is None"),
    ],
)
def test_lines_the_proxy_gets_wrong_or_fails_on(data: dict, problem: str) -> None:
    problems = proxy_problems(data)
    assert any(problem in p for p in problems), problems
    if "never read" not in problem and "but 'episode_index'" not in problem:
        assert any(p.endswith(STOPS) for p in problems), problems


def test_a_lifecycle_line_gets_every_problem_at_once() -> None:
    problems = platform_line_problems(line(event="run_started", payload=[]))
    assert problems[0] == "lifecycle line without 'run_id', 'timestamp'"
    assert "'payload' is [], not an object" in problems[1]


# --- counts_add_up matches episode lines to their steps ---------------------------------


def steps(episode: int, n: int, **extra) -> list[dict]:
    return [
        {"type": "step", "episode_index": episode, "step_index": i, "reward": 1.0, **extra}
        for i in range(n)
    ]


def test_counts_match_when_only_the_steps_carry_the_agent_id() -> None:
    """The proxy reads agent_id on both kinds of line; a worker that sets it on its step
    lines only used to get 'episode 0 has step lines but no episode line'."""
    episode = {"type": "episode", "episode_index": 0, "total_reward": 3.0, "steps": 3}
    assert _count_problems(steps(0, 3, agent_id="agent_0"), [episode]) == []
    assert _count_problems(steps(0, 3), [{**episode, "agent_id": "agent_0"}]) == []


def test_counts_still_tell_agents_apart() -> None:
    lines = steps(0, 2, agent_id="a") + steps(0, 2, agent_id="b")
    episode = {"type": "episode", "episode_index": 0, "total_reward": 2.0, "steps": 2}
    problems = _count_problems(lines, [episode])
    assert "episode 0 has step lines but no episode line" in problems
