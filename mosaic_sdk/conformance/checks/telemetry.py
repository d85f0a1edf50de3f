"""Telemetry: valid JSONL only, run_started first, terminal last, seq, streaming, heartbeats,
consistent counts; determinism: the same seed gives the same steps and episodes."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from mosaic_sdk.conformance.checks.cli import launched
from mosaic_sdk.conformance.checks.gates import step_numbering
from mosaic_sdk.conformance.platform_lines import (
    forwarded,
    platform_line_problems,
    proxy_episode_index,
    proxy_problems,
)
from mosaic_sdk.conformance.recording import RecordedLine, RecordedRun, streaming, written_at
from mosaic_sdk.conformance.registry import PLATFORM, SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed, CheckSkipped
from mosaic_sdk.conformance.subject import HEARTBEAT_INTERVAL, WorkerSubject
from mosaic_sdk.exit_status import exit_status
from mosaic_sdk.telemetry.emitter import TERMINAL_EVENTS
from mosaic_sdk.telemetry.reader import validate_line
from mosaic_sdk.telemetry.unfinished import is_unfinished

#: Fields that legitimately differ between two runs with the same seed.
VOLATILE_FIELDS = frozenset({"ts_unix_ns", "timestamp", "seq", "run_id", "worker_id"})


@conformance_check(
    "telemetry.valid_jsonl",
    description="Every stdout line is telemetry: of the platform's shapes (platform), valid "
    "against the SDK's schema (sdk)",
    hint={
        PLATFORM: "Print only telemetry on stdout, one JSON object a line: lifecycle lines "
        '{"event", "payload", "run_id", "timestamp"} and step/episode lines with "type": '
        '"step" | "episode" (the proxy drops anything else silently); send library output and '
        "logs to stderr",
        SDK: "Write stdout only through TelemetryEmitter; worker_main sends library prints to "
        "stderr (claim_stdout); child processes must not inherit the telemetry stream",
    },
    runs={PLATFORM: ("normal",), SDK: ("normal", "bad_config")},
)
def valid_jsonl(subject: WorkerSubject, level: str) -> str | None:
    bad: list[str] = []
    checked = 0
    kinds = ("normal",) if level == PLATFORM else ("normal", "bad_config")
    for kind in kinds:
        run = launched(subject, kind)
        for number, rec in enumerate(run.lines, 1):
            checked += 1
            problems = _line_problems(rec, level)
            if problems:
                bad.append(f"{kind} line {number}: {'; '.join(problems)}: {rec.text[:80]!r}")
    if bad:
        rule = "the platform's shapes" if level == PLATFORM else "the SDK's schema"
        raise CheckFailed(
            f"{len(bad)} of {checked} stdout lines are not telemetry of {rule}; first: {bad[0]}",
            details=bad[:20],
        )
    return f"{checked} lines valid"


def _line_problems(rec: RecordedLine, level: str) -> list[str]:
    """Every problem of one stdout line by the rule of ``level`` (all at once)."""
    if level == PLATFORM:
        return platform_line_problems(rec.text)
    if not rec.line.is_telemetry:
        return ["not JSON" if rec.line.kind == "log" else str(rec.line.error)]
    return validate_line(dict(rec.line.data))


@conformance_check(
    "telemetry.proxy_episode_index",
    description="The platform's telemetry proxy reads every step and episode line without "
    "failing, each under the episode index the SDK reads",
    hint={
        PLATFORM: 'Put the episode index where the proxy reads it: "metadata": '
        '{"episode_index": N} on every step and episode line (it never reads a top-level '
        '"episode_index"; keep that too, with the same N, for the SDK); write step_index, '
        "steps, episode_seed and payload_version as integers >= 0, reward and total_reward as "
        "numbers",
        SDK: "Write step and episode lines with TelemetryEmitter.step/episode (schema version "
        "3 copies the episode index into metadata.episode_index, where the platform reads it); "
        "pass no metadata with a different episode_index",
    },
    runs=("normal",),
)
def proxy_reads_episodes(subject: WorkerSubject) -> str | None:
    run = launched(subject, "normal")
    bad: list[str] = []
    # The episode index of each episode line, as the platform gets it and as the SDK reads it.
    platform: list[int | None] = []
    sdk: list[object] = []
    lines = 0
    for number, rec in enumerate(run.lines, 1):
        try:
            data = json.loads(rec.text)
        except (ValueError, RecursionError):
            continue  # not forwarded (telemetry.valid_jsonl reports it)
        if not forwarded(data):
            continue
        lines += 1
        problems = proxy_problems(data)
        if problems:
            bad.append(f"line {number}: {'; '.join(problems)}: {rec.text[:80]!r}")
        if str(data.get("type")).lower() == "episode":
            platform.append(proxy_episode_index(data)[0])
            sdk.append(rec.line.data.get("episode_index"))
    if not lines:
        raise CheckSkipped("the normal run wrote no step or episode line")
    if bad:
        summary = f"{len(bad)} of {lines} step/episode lines"
        if platform != sdk:
            summary += (
                f"; the platform numbers the episodes {_few(platform)} where the SDK reads "
                f"{_few(sdk)}"
            )
        raise CheckFailed(f"{summary}; first: {bad[0]}", details=bad[:20])
    return f"{lines} step/episode lines, episodes {_few(platform)}"


def _few(values: Sequence[object], limit: int = 8) -> str:
    shown = ", ".join(map(str, values[:limit]))
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _telemetry(subject: WorkerSubject, kind: str = "normal") -> tuple[RecordedRun, list[Any]]:
    run = launched(subject, kind)
    lines = [r.line.data for r in run.telemetry]
    excerpt = run.stderr_excerpt()
    why = f" ({exit_status(run.exit_code)}; stderr: {excerpt})" if excerpt else ""
    if not lines:
        raise CheckFailed(f"the {kind} run wrote no telemetry line{why}")
    return run, lines


@conformance_check(
    "telemetry.run_started_first",
    description="The first telemetry line is the run_started lifecycle event",
    hint={
        PLATFORM: 'Print the run_started lifecycle line ({"event": "run_started", "payload": '
        '{...}, "run_id": ..., "timestamp": ...}, flush=True) before any other line',
        SDK: "Call emitter.run_started(...) before any step, episode or heartbeat line",
    },
    runs=("normal",),
)
def run_started_first(subject: WorkerSubject) -> str | None:
    first = _telemetry(subject)[1][0]
    if first.get("type") != "lifecycle" or first.get("event") != "run_started":
        label = first.get("event") or first.get("type")
        raise CheckFailed(f"the first telemetry line is {label!r}, not run_started")
    return None


@conformance_check(
    "telemetry.terminal_last",
    description="The last telemetry line is the only terminal event (run_completed/failed/"
    "cancelled)",
    hint={
        PLATFORM: "End every run with exactly one lifecycle line run_completed, run_failed or "
        "run_cancelled (on errors too: try/except/finally) and print nothing after it",
        SDK: "End every run with exactly one of run_completed, run_failed, run_cancelled and "
        "write nothing after it",
    },
    runs=("normal",),
)
def terminal_last(subject: WorkerSubject) -> str | None:
    _, lines = _telemetry(subject)
    terminals = [d.get("event") for d in lines if d.get("event") in TERMINAL_EVENTS]
    last = lines[-1]
    if last.get("event") not in TERMINAL_EVENTS:
        raise CheckFailed(
            f"the last telemetry line is {last.get('event') or last.get('type')!r}, "
            "not a terminal event"
        )
    if len(terminals) > 1:
        raise CheckFailed(f"{len(terminals)} terminal events: {', '.join(map(str, terminals))}")
    return f"ends with {last.get('event')}"


@conformance_check(
    "telemetry.seq_increasing",
    description="seq increases strictly from line to line (workers using the SDK emitter)",
    hint="Use one TelemetryEmitter per process and never write lines around it",
    runs=("normal",),
    levels=(SDK,),
)
def seq_increasing(subject: WorkerSubject) -> str | None:
    _, lines = _telemetry(subject)
    seqs = [d.get("seq") for d in lines]
    if all(s is None for s in seqs):
        raise CheckSkipped("the lines carry no seq (the worker does not use the SDK emitter)")
    previous = None
    for number, seq in enumerate(seqs, 1):
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise CheckFailed(f"telemetry line {number} has seq {seq!r}, not an integer")
        if previous is not None and seq <= previous:
            raise CheckFailed(f"telemetry line {number} has seq {seq} after {previous}")
        previous = seq
    return None


@conformance_check(
    "telemetry.streams_live",
    description="Lines arrive while the worker runs, not all at exit",
    hint={
        PLATFORM: "Print every telemetry line with flush=True as it happens, or make stdout "
        "line-buffered (sys.stdout.reconfigure(line_buffering=True) at start): stdout to a "
        "pipe is block-buffered and the platform does not set PYTHONUNBUFFERED. Do not "
        "collect lines and print them at the end. Make the conformance config run for >= 1 s",
        SDK: "Flush telemetry as you go (TelemetryEmitter does within 20 ms), or make stdout "
        "line-buffered (sys.stdout.reconfigure(line_buffering=True)): the platform does not set "
        "PYTHONUNBUFFERED. Do not collect lines and print them at the end. Make the "
        "conformance config run for >= 1 s",
    },
    runs=("normal",),
)
def streams_live(subject: WorkerSubject) -> str | None:
    run, _ = _telemetry(subject)
    live, note = streaming(run)
    if not live:
        raise CheckFailed(f"lines were held back: {note}")
    return note


def _run_span(run: RecordedRun) -> float:
    """Seconds from the run's first telemetry line to its last (run_started to the terminal
    event when both are there): by when the worker wrote them when both lines say
    (``ts_unix_ns`` or ``timestamp``), else by when they arrived."""
    lines = run.telemetry
    start = next((r for r in lines if r.event == "run_started"), lines[0])
    end = next((r for r in lines if r.event in TERMINAL_EVENTS), lines[-1])
    began, ended = written_at(start.line.data), written_at(end.line.data)
    if began is not None and ended is not None:
        return ended - began
    return end.arrived - start.arrived


@conformance_check(
    "telemetry.heartbeats",
    description=f"Heartbeats appear when MOSAIC_HEARTBEAT_INTERVAL is short "
    f"({HEARTBEAT_INTERVAL} s)",
    hint="Run a mosaic_sdk.telemetry.Heartbeat during the run (it reads "
    "MOSAIC_HEARTBEAT_INTERVAL); make the conformance config run for >= 1 s",
    runs=("normal",),
    levels=(SDK,),
)
def heartbeats(subject: WorkerSubject) -> str | None:
    run, _ = _telemetry(subject)
    beats = [r for r in run.telemetry if r.event == "heartbeat"]
    if beats:
        return f"{len(beats)} heartbeat(s)"
    lasted = _run_span(run)
    if lasted < 3 * HEARTBEAT_INTERVAL:
        raise CheckSkipped(
            f"the run lasted {lasted:.2f} s, too short to expect a heartbeat every "
            f"{HEARTBEAT_INTERVAL} s; make the conformance config run for >= 1 s"
        )
    raise CheckFailed(f"no heartbeat line with MOSAIC_HEARTBEAT_INTERVAL={HEARTBEAT_INTERVAL}")


@conformance_check(
    "telemetry.counts_add_up",
    description="Step lines, episode lines and run_completed agree on steps, episodes and "
    "rewards; run_completed counts finished episodes only (an unfinished one is in no count)",
    hint="Emit one episode line per finished episode (per agent, with its agent_id, in a "
    "multi-agent run) with steps = its number of steps and total_reward = the sum of its step "
    "rewards; report run_completed(episodes=...) with the number of finished episodes. An "
    "episode cut off by the run's end: emitter.episode(..., unfinished=True) (truncated, "
    "metadata.unfinished: true), left out of run_completed's episodes. Number "
    "each agent's steps 0, 1, 2... (step_numbering 'per_agent', the default), or the plies of "
    "an episode across agents and declare step_numbering='per_ply' in WorkerCapabilities",
    runs=("normal",),
    levels=(SDK,),
)
def counts_add_up(subject: WorkerSubject) -> str | None:
    run, lines = _telemetry(subject)
    steps = [d for d in lines if d.get("type") == "step"]
    episodes = [d for d in lines if d.get("type") == "episode"]
    if not steps or not episodes:
        raise CheckFailed(
            f"{len(steps)} step and {len(episodes)} episode lines: the conformance config "
            "should produce at least one of each"
        )
    per_ply = step_numbering(subject) == "per_ply"
    problems = _ply_problems(steps, episodes) if per_ply else []
    problems += _count_problems(steps, episodes, check_indices=not per_ply)
    problems += _unfinished_problems(episodes)
    finished = [e for e in episodes if not is_unfinished(e)]
    cut = len(episodes) - len(finished)
    completed = [d for d in lines if d.get("event") == "run_completed"]
    if completed:
        declared = completed[-1].get("payload", {}).get("episodes")
        # In a multi-agent run every agent reports each episode it played: run_completed
        # counts the run's episodes, the distinct episode indices of its lines. An unfinished
        # episode is in no count (docs/reference/telemetry.md, "Unfinished episodes").
        played = len(finished)
        if len({e.get("agent_id") for e in episodes}) > 1:
            played = len({e.get("episode_index") for e in finished})
        if isinstance(declared, int) and declared != played:
            said = f"run_completed says {declared} episodes, {played} finished reported"
            if cut:
                said += (
                    f" (and {cut} unfinished, which no episode count includes: leave the "
                    "episode the run's end cut off out of run_completed's episodes)"
                )
            problems.append(said)
    if problems:
        raise CheckFailed(problems[0], details=problems[:20])
    more = f" (+{cut} unfinished)" if cut else ""
    return f"{len(steps)} steps in {len(finished)} episodes{more}"


def _unfinished_problems(episodes: list[dict[str, Any]]) -> list[str]:
    """An unfinished episode line must say it was cut off: truncated, not terminated."""
    return [
        f"episode {e.get('episode_index')} is flagged unfinished but says "
        f"terminated={e.get('terminated')!r}, truncated={e.get('truncated')!r} (an unfinished "
        "episode is truncated, not terminated)"
        for e in episodes
        if is_unfinished(e) and (e.get("truncated") is not True or e.get("terminated") is True)
    ]


def _ply_problems(steps: list[dict[str, Any]], episodes: list[dict[str, Any]]) -> list[str]:
    """``per_ply`` numbering: in each episode the step lines of all its agents number the
    plies, each index once, below the sum of the agents' steps, the last ply among them."""
    problems: list[str] = []
    plies: dict[object, int] = {}
    for e in episodes:
        n = e.get("steps")
        if isinstance(n, int):
            key = e.get("episode_index")
            plies[key] = plies.get(key, 0) + n
    indices: dict[object, list[object]] = {}
    for s in steps:
        indices.setdefault(s.get("episode_index"), []).append(s.get("step_index"))
    for episode, found in indices.items():
        if episode not in plies:
            continue  # reported by the per-agent part (step lines but no episode line)
        total = plies[episode]
        if len(set(found)) != len(found):
            problems.append(f"episode {episode}: a ply (step_index) appears twice across agents")
        if any(not isinstance(i, int) or i >= total for i in found):
            problems.append(
                f"episode {episode}: step lines beyond its {total} plies (the agents' steps "
                "add up to that; per_ply numbering counts the plies of the episode)"
            )
        if total and (total - 1) not in found:
            problems.append(f"episode {episode}: no line for its last ply ({total - 1})")
    return problems


def _count_problems(
    steps: list[dict[str, Any]], episodes: list[dict[str, Any]], *, check_indices: bool = True
) -> list[str]:
    """Per (agent, episode): the step lines against the episode line. With ``check_indices``
    (``per_agent`` numbering) the step indices must be the agent's own 0..steps-1."""
    problems: list[str] = []
    by_episode: dict[tuple[object, object], list[dict[str, Any]]] = {}
    for s in steps:
        by_episode.setdefault((s.get("agent_id"), s.get("episode_index")), []).append(s)
    seen: set[tuple[object, object]] = set()
    for e in episodes:
        key = _episode_key(e, by_episode)
        if key in seen:
            problems.append(f"episode {key[1]} is reported twice")
            continue
        seen.add(key)
        own = by_episode.get(key, [])
        n = e.get("steps")
        indices = [s.get("step_index") for s in own]
        if not isinstance(n, int):
            continue
        if check_indices:
            problems += _index_problems(key[1], indices, n, bool(own))
        if len(own) == n:
            total = math.fsum(float(s.get("reward", 0.0)) for s in own)
            reported = float(e.get("total_reward", math.nan))
            if not math.isclose(total, reported, rel_tol=1e-6, abs_tol=1e-6):
                problems.append(
                    f"episode {key[1]}: total_reward {reported} but its steps sum to {total}"
                )
    for key in by_episode:
        if key not in seen:
            problems.append(f"episode {key[1]} has step lines but no episode line")
    return problems


def _index_problems(episode: object, indices: list[object], n: int, any_line: bool) -> list[str]:
    """An agent's own step indices in an episode of ``n`` steps (``per_agent`` numbering)."""
    problems: list[str] = []
    if len(set(indices)) != len(indices):
        problems.append(f"episode {episode}: a step_index appears twice")
    if any(not isinstance(i, int) or i >= n for i in indices):
        problems.append(f"episode {episode}: step lines beyond its {n} steps")
    if n and any_line and (n - 1) not in indices:
        problems.append(f"episode {episode}: no line for its last step ({n - 1})")
    return problems


def _episode_key(
    episode: dict[str, Any], by_episode: dict[tuple[object, object], list[dict[str, Any]]]
) -> tuple[object, object]:
    """The (agent_id, episode_index) of the step lines an episode line reports on.

    An agent id on only one side of a single-agent episode (the proxy reads ``agent_id`` on
    both kinds of line, so workers put it on one, the other or both) still matches."""
    key = (episode.get("agent_id"), episode.get("episode_index"))
    if key in by_episode:
        return key
    agents = {agent for agent, index in by_episode if index == key[1]}
    if len(agents) == 1 and (key[0] is None or None in agents):
        return (agents.pop(), key[1])
    return key


def _comparable(subject: WorkerSubject, kind: str) -> list[dict[str, object]]:
    """The run's step and episode lines without the fields that differ between identical runs."""
    lines = [d for d in _telemetry(subject, kind)[1] if d.get("type") in ("step", "episode")]
    return [{k: v for k, v in d.items() if k not in VOLATILE_FIELDS} for d in lines]


@conformance_check(
    "determinism.same_seed_same_telemetry",
    description="Two runs with the same seed give the same step and episode lines "
    "(timestamps aside)",
    hint="Seed every random generator from config.seed (env.reset(seed=...), "
    "action_space.seed(...), numpy/torch generators); avoid wall-clock dependent logic",
    runs=("normal", "repeat"),
    levels=(SDK,),
)
def same_seed_same_telemetry(subject: WorkerSubject) -> str | None:
    first, second = _comparable(subject, "normal"), _comparable(subject, "repeat")
    if not first:
        raise CheckFailed("no step or episode lines to compare")
    for index, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            raise CheckFailed(
                f"line {index + 1} of the step/episode stream differs in {', '.join(keys)}"
            )
    if len(first) != len(second):
        raise CheckFailed(f"{len(first)} step/episode lines in one run, {len(second)} in the other")
    return f"{len(first)} lines identical"
