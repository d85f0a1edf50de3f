"""The control protocol (when claimed): pause/resume, stop, interactive replay, bad commands."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mosaic_sdk.conformance.checks.gates import claims, step_numbering
from mosaic_sdk.conformance.recording import prepare_conformance_run
from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed, CheckSkipped
from mosaic_sdk.conformance.subject import DEFAULT_SEED, WorkerSubject, run_timeout, stop_timeout
from mosaic_sdk.control.session import ControlCommandError, ControlTimeout
from mosaic_sdk.exit_status import describe_exit
from mosaic_sdk.runner.supervision.launch import resolve_job
from mosaic_sdk.runner.supervision.session_lifecycle import launch_session

if TYPE_CHECKING:
    from mosaic_sdk.control.protocol import Reply
    from mosaic_sdk.control.session import Session

#: How soon after the pause reply the steps must stop (seconds).
PAUSE_WITHIN = 0.1
#: How long the checks watch a paused run (seconds).
PAUSE_WATCH = 0.5
#: Steps of each interactive episode compared by the replay check (at most).
REPLAY_STEPS = 50


def _session(subject: WorkerSubject, kind: str, mode: str | None = None) -> Session:
    """Launch the worker for ``kind`` under the run lifecycle, its stdin a pipe."""
    handle = subject.require_handle()
    config = {"seed": DEFAULT_SEED, **subject.conformance_config()}
    if mode is not None:
        config["mode"] = mode
    job = resolve_job(config, run_id=subject.run_id(f"control-{kind}"))
    prepared = prepare_conformance_run(
        handle, job, runs_dir=subject.runs_dir, extra_env={"MOSAIC_HOME": str(subject.home)}
    )
    subject.logs_dir.mkdir(parents=True, exist_ok=True)
    stderr = subject.logs_dir / f"{prepared.run_id}.stderr.log"
    try:
        return launch_session(handle, prepared, timeout=5.0, stderr_path=stderr)
    except RuntimeError as exc:
        raise CheckFailed(f"the worker could not be started: {exc}") from None


def _first(
    session: Session, predicate: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    try:
        return session.wait_for(predicate, timeout=run_timeout(), what=what)
    except ControlTimeout as exc:
        raise CheckFailed(str(exc)) from None


def _is_step(line: dict[str, Any]) -> bool:
    return line.get("type") == "step"


def _answer(call: Callable[[], Reply], what: str) -> Reply:
    """A command's reply; fails the check on an error reply or a timeout."""
    try:
        return call()
    except (ControlCommandError, ControlTimeout) as exc:
        raise CheckFailed(f"{what}: {exc}") from None


def _interactive(subject: WorkerSubject) -> str | None:
    """Gate: the worker's config accepts ``"mode": "interactive"``."""
    try:
        model = subject.config_model()
        model.from_dict({**subject.conformance_config(), "run_id": "gate", "mode": "interactive"})
    except CheckSkipped as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a config without the mode: not applicable
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        return f"the conformance config is not valid with mode 'interactive' ({reason})"
    return None


def _next_of(line: dict[str, Any]) -> tuple[int, int]:
    """The (episode, step) that follows a step line: the next step, or the next episode's
    first after a line that ends its episode."""
    episode, step = int(line.get("episode_index", 0)), int(line.get("step_index", 0))
    ended = bool(line.get("terminated") or line.get("truncated"))
    return (episode + 1, 0) if ended else (episode, step + 1)


def resumed_where(
    before: list[dict[str, Any]], following: dict[str, Any], numbering: str
) -> tuple[str, bool]:
    """Whether ``following`` (the first step line after resume) goes on where the step lines
    ``before`` the pause stopped: ``(what was expected, ok)``. ``per_ply`` (and a single-agent
    run): it follows the last line. ``per_agent``: it follows its own agent's last line, or is
    that agent's step 0 of the last line's episode or a later one when it wrote none."""
    last = before[-1]
    got = (following.get("episode_index"), following.get("step_index"))
    agent = following.get("agent_id")
    if numbering == "per_ply" or agent is None:
        expected = _next_of(last)
        return f"episode {expected[0]} step {expected[1]}", got == expected
    own = [s for s in before if s.get("agent_id") == agent]
    if own:
        expected = _next_of(own[-1])
        return (
            f"episode {expected[0]} step {expected[1]} (agent {agent!r}'s next step)",
            got == expected,
        )
    episode = int(last.get("episode_index", 0))
    ok = got[1] == 0 and isinstance(got[0], int) and got[0] >= episode
    return f"agent {agent!r}'s first step (0) of episode {episode} or later", ok


@conformance_check(
    "control.pause_resume",
    description=f"A pause stops the steps within {PAUSE_WITHIN * 1000:g} ms and resume continues "
    "from the same step (per agent, or per ply as the worker declares in step_numbering)",
    hint="Check ctx.cancelled (the control safe point) before every step, or before every "
    "agent's move in a turn-based loop; do not read ctx.cancel directly, and do not step from "
    "another thread. A multi-agent run is judged per agent (each agent's step_index goes on "
    "from its own last one) unless its capabilities declare step_numbering='per_ply'",
    gates=(claims("control_protocol"), claims("supports_pause_resume")),
    levels=(SDK,),
)
def pause_resume(subject: WorkerSubject) -> str | None:
    numbering = step_numbering(subject)
    session = _session(subject, "pause")
    try:
        _first(session, _is_step, "the first step line")
        _answer(session.pause, "pause")
        paused_at = time.time_ns()
        time.sleep(PAUSE_WATCH)
        steps = [x for x in list(session.lines) if _is_step(x)]
        late = [s for s in steps if s.get("ts_unix_ns", 0) > paused_at + PAUSE_WITHIN * 1e9]
        if late:
            raise CheckFailed(
                f"{len(late)} step line(s) came more than {PAUSE_WITHIN * 1000:g} ms after the "
                f"pause reply (over {PAUSE_WATCH:g} s)",
                details=[json.dumps(s)[:200] for s in late[:5]],
            )
        if session.poll() is not None:
            raise CheckFailed("the worker exited while paused")
        _answer(session.resume, "resume")
        last = steps[-1]
        following = _first(
            session,
            lambda x: _is_step(x) and x.get("seq", 0) > last.get("seq", 0),
            "a step after resume",
        )
        expected, ok = resumed_where(steps, following, numbering)
        episode, step = int(last.get("episode_index", 0)), int(last.get("step_index", 0))
        who = f" of agent {last['agent_id']!r}" if last.get("agent_id") is not None else ""
        got_agent = following.get("agent_id")
        got_who = f" (agent {got_agent!r})" if got_agent is not None else ""
        if not ok:
            raise CheckFailed(
                f"after resume the run went on at episode {following.get('episode_index')} "
                f"step {following.get('step_index')}{got_who}, not at {expected} (the last "
                f"step before the pause was episode {episode} step {step}{who}; step "
                f"numbering judged {numbering})"
            )
        return f"paused after episode {episode} step {step}{who}, resumed there ({numbering})"
    finally:
        session.shutdown(timeout=stop_timeout())


@conformance_check(
    "control.stop_cancels",
    description="A stop command ends the run as SIGTERM does: the last line is run_cancelled",
    hint="Leave stop to worker_main (it sets ctx.cancel); when ctx.cancelled is true end the "
    "loop and emit run_cancelled, not run_completed",
    gates=(claims("control_protocol"),),
    levels=(SDK,),
)
def stop_cancels(subject: WorkerSubject) -> str | None:
    session = _session(subject, "stop")
    try:
        _first(session, _is_step, "the first step line")
        _answer(session.stop, "stop")
        code = session.wait_exit(stop_timeout())
        if code is None:
            raise CheckFailed(f"the worker was still running {stop_timeout():g} s after stop")
        last = (session.events() or ["no event"])[-1]
        if last != "run_cancelled":
            raise CheckFailed(f"after stop the run ended with {last}, not run_cancelled")
        return describe_exit(code)
    finally:
        session.shutdown(timeout=stop_timeout())


def _episode(session: Session, seed: int) -> list[tuple[object, ...]]:
    first = _answer(lambda: session.reset(seed=seed), f"reset seed={seed}")
    played: list[tuple[object, ...]] = [("reset", json.dumps(first.observation))]
    for _ in range(REPLAY_STEPS):
        reply = _answer(session.step, "step")
        played.append(
            (reply.action, reply.reward, json.dumps(reply.observation), reply.episode_done)
        )
        if reply.episode_done:
            break
    return played


@conformance_check(
    "control.interactive_replay",
    description="In interactive mode, reset with a seed followed by the same steps plays the "
    "same episode twice",
    hint="Seed the env in reset (InteractiveSession does, and seeds the action space) and make "
    "the interactive policy deterministic, or seed its generator from the reset's seed",
    gates=(claims("control_protocol"), _interactive),
    levels=(SDK,),
)
def interactive_replay(subject: WorkerSubject) -> str | None:
    session = _session(subject, "interactive", mode="interactive")
    try:
        _first(session, lambda x: x.get("type") == "init", "the init line")
        a = _episode(session, DEFAULT_SEED)
        b = _episode(session, DEFAULT_SEED)
        if a != b:
            pairs = enumerate(zip(a, b, strict=False))
            at = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
            raise CheckFailed(
                f"the same seed gave another episode (first difference at step {at})",
                details=[f"first: {a[at : at + 1]}", f"second: {b[at : at + 1]}"],
            )
        _answer(session.close, "close")
        return f"{len(a) - 1} steps replayed"
    finally:
        session.shutdown(timeout=stop_timeout())


@conformance_check(
    "control.bad_command_answered",
    description="A malformed line and an unknown command each get an error reply, and the "
    "worker goes on answering",
    hint="Read commands through worker_main's control channel (ctx.control); do not read stdin "
    "yourself or drop lines you cannot parse",
    gates=(claims("control_protocol"),),
    levels=(SDK,),
)
def bad_command_answered(subject: WorkerSubject) -> str | None:
    session = _session(subject, "badcommand")
    try:
        _first(session, lambda x: x.get("event") == "run_started", "run_started")
        session.send_line('{"v": 1, "id": "malformed", "cmd": ')
        try:
            reply = session.next_unmatched(timeout=5.0)
        except ControlTimeout as exc:
            raise CheckFailed(f"no error reply to a malformed line: {exc}") from None
        if reply.ok or reply.error is None or reply.error.code != "malformed_json":
            raise CheckFailed(f"a malformed line got {reply.model_dump(exclude_none=True)}")
        try:
            session.request("no_such_command")
        except ControlCommandError as exc:
            if exc.code != "unknown_command":
                raise CheckFailed(f"an unknown command got the error code {exc.code!r}") from None
        except ControlTimeout as exc:
            raise CheckFailed(f"no reply to an unknown command: {exc}") from None
        else:
            raise CheckFailed("an unknown command was answered ok")
        _answer(session.ping, "ping after the bad commands")
        return None
    finally:
        session.shutdown(timeout=stop_timeout())
