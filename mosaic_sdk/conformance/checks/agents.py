"""Agents (workers that declare ``max_agents > 1``): every line names a declared agent, the
counts per agent add up, and each agent has its own FastLane stream when FastLane is on.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from mosaic_sdk.conformance.checks.cli import launched
from mosaic_sdk.conformance.checks.gates import claims, fastlane_in_sdk
from mosaic_sdk.conformance.fastlane_v1 import segment_name
from mosaic_sdk.conformance.recording import RecordedRun
from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import WorkerSubject
from mosaic_sdk.telemetry.unfinished import is_unfinished

COUNTS = ("episodes", "steps", "total_reward")


def multi_agent(subject: WorkerSubject) -> str | None:
    """Gate: the worker declares ``max_agents`` greater than 1."""
    if subject.handle is None:
        return None
    try:
        most = int(subject.capability("max_agents"))
    except Exception as exc:  # noqa: BLE001 - the description checks report this
        return f"cannot tell how many agents it has: {exc}"
    return None if most > 1 else f"the worker declares max_agents={most} (single agent)"


def declared_agents(subject: WorkerSubject, run: RecordedRun) -> list[str]:
    """The agent ids the run's ``run_started`` declares; CheckFailed when it declares none."""
    started = [r.line.data for r in run.telemetry if r.event == "run_started"]
    if not started:
        raise CheckFailed(f"the {run.kind} run wrote no run_started line")
    agents = started[0].get("payload", {}).get("agents")
    if not isinstance(agents, list) or not agents:
        raise CheckFailed("run_started declares no agents (payload.agents: a list of agent ids)")
    bad = [a for a in agents if not isinstance(a, str) or not a]
    if bad or len(set(agents)) != len(agents):
        raise CheckFailed(f"run_started's agents {agents!r} must be distinct, non-empty strings")
    most = int(subject.capability("max_agents"))
    if len(agents) > most:
        raise CheckFailed(f"run_started declares {len(agents)} agents, max_agents is {most}")
    return agents


@conformance_check(
    "agents.declared",
    description="A multi-agent run declares its agents in run_started, and every step and "
    "episode line names one of them (agent_id)",
    hint="Pass agents=[...] to emitter.run_started and agent_id=... to every "
    "emitter.step/episode call, using the ids of that list",
    runs=("normal",),
    gates=(multi_agent,),
    levels=(SDK,),
)
def declared(subject: WorkerSubject) -> str | None:
    run = launched(subject, "normal")
    agents = set(declared_agents(subject, run))
    lines = [r.line.data for r in run.telemetry if r.line.data.get("type") in ("step", "episode")]
    undeclared = [d.get("agent_id") for d in lines if d.get("agent_id") not in agents]
    strangers = Counter("no agent_id" if a is None else repr(a) for a in undeclared)
    if strangers:
        found = ", ".join(f"{k} ({n} lines)" for k, n in sorted(strangers.items()))
        raise CheckFailed(
            f"step/episode lines with an undeclared agent: {found}; declared: {sorted(agents)}"
        )
    seen = {d.get("agent_id") for d in lines}
    return f"{len(lines)} lines from {len(seen)} of {len(agents)} declared agents"


def _reported(episodes: list[dict[str, Any]], agents: list[str]) -> dict[str, dict[str, float]]:
    counts = {a: dict.fromkeys(COUNTS, 0.0) for a in agents}
    for e in episodes:
        own = counts.setdefault(str(e.get("agent_id")), dict.fromkeys(COUNTS, 0.0))
        # the steps of an episode the run's end cut off were taken; it is no episode and
        # has no return (docs/reference/telemetry.md, "Unfinished episodes")
        own["steps"] += float(e.get("steps", 0))
        if not is_unfinished(e):
            own["episodes"] += 1
            own["total_reward"] += float(e.get("total_reward", 0.0))
    return counts


def _differences(where: str, claimed: Any, counts: dict[str, dict[str, float]]) -> list[str]:
    if not isinstance(claimed, dict):
        return [f"{where} has no per-agent counts ({{agent_id: {{{', '.join(COUNTS)}}}}})"]
    problems = []
    for agent, own in counts.items():
        theirs = claimed.get(agent)
        if not isinstance(theirs, dict):
            problems.append(f"{where} has no counts for agent {agent!r}")
            continue
        for key in COUNTS:
            value = theirs.get(key)
            if not isinstance(value, (int, float)) or not math.isclose(
                float(value), own[key], rel_tol=1e-6, abs_tol=1e-6
            ):
                problems.append(
                    f"{where}: agent {agent!r} {key} is {value!r}, its episode lines add up "
                    f"to {own[key]:g}"
                )
    for agent in sorted(set(claimed) - set(counts)):
        problems.append(f"{where} counts agent {agent!r}, which reported nothing")
    return problems


@conformance_check(
    "agents.counts_add_up",
    description="Per agent, the episode lines add up to the episodes, steps and reward that "
    "run_completed (and analytics.json) report for it",
    hint="Report run_completed(..., agents={agent_id: {'episodes', 'steps', 'total_reward'}}) "
    "from the same numbers as each agent's episode lines (episodes and total_reward of its "
    "finished episodes, steps of all), and the same mapping as extra={'agents': ...} in "
    "analytics.json",
    runs=("normal",),
    gates=(multi_agent,),
    levels=(SDK,),
)
def counts_add_up(subject: WorkerSubject) -> str | None:
    run = launched(subject, "normal")
    agents = declared_agents(subject, run)
    data = [r.line.data for r in run.telemetry]
    episodes = [d for d in data if d.get("type") == "episode"]
    if not episodes:
        raise CheckFailed("no episode line: the conformance config should finish an episode")
    counts = _reported(episodes, agents)
    completed = [d for d in data if d.get("event") == "run_completed"]
    if not completed:
        raise CheckFailed("the run did not end with run_completed")
    problems = _differences("run_completed", completed[-1].get("payload", {}).get("agents"), counts)
    manifest = run.run_dir / "analytics.json" if run.run_dir is not None else None
    if manifest is not None and manifest.is_file():
        try:
            extra = json.loads(manifest.read_text()).get("extra") or {}
        except (OSError, ValueError) as exc:
            problems.append(f"analytics.json cannot be read: {exc}")
        else:
            problems += _differences("analytics.json extra.agents", extra.get("agents"), counts)
    if problems:
        raise CheckFailed(problems[0], details=problems[:20])
    return ", ".join(
        f"{a}: {int(c['episodes'])} ep / {int(c['steps'])} steps" for a, c in counts.items()
    )


@conformance_check(
    "agents.fastlane_streams",
    description="With FastLane on, every declared agent publishes frames to its own stream "
    "(mosaic_sdk.fastlane.agent_stream_id)",
    hint="Publish each agent's frames with FastLaneWriter.create(agent_stream_id(run_id, i), "
    "...) where i is the agent's position in run_started's agents",
    runs=("fastlane",),
    gates=(multi_agent, claims("supports_fastlane"), fastlane_in_sdk),
    levels=(SDK,),
)
def fastlane_streams(subject: WorkerSubject) -> str | None:
    # Optional part: gated on fastlane_in_sdk.
    from mosaic_sdk.fastlane import agent_stream_id

    run = launched(subject, "fastlane")
    agents = declared_agents(subject, run)
    if run.probe_error:
        raise CheckFailed(f"watching the segments failed: {run.probe_error}")
    seen: dict[str, int] = (run.probe or {}).get("streams", {})
    missing = []
    for index, agent in enumerate(agents):
        name = segment_name(agent_stream_id(run.run_id, index))
        if not seen.get(name):
            state = "appeared without a frame" if name in seen else "never appeared"
            missing.append(f"{agent!r}: /dev/shm/{name} {state}")
    if missing:
        raise CheckFailed(
            f"{len(missing)} of {len(agents)} agents have no FastLane stream: "
            + "; ".join(missing),
            details=missing,
        )
    return f"{len(agents)} streams, heads {sorted(seen.values())}"
