"""``mosaic play NAME [--config FILE] [--set KEY=VALUE]``: step a worker by hand in a terminal."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.cli.run import add_config_options
from mosaic_sdk.exit_status import exit_status
from mosaic_sdk.extras import MissingExtraError, require
from mosaic_sdk.plugins.errors import PluginError

HELP = (
    "commands: reset [SEED] (r), step [ACTION] (s), run N (n), frame [FILE] (f), ping (p), quit (q)"
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "play",
        help="step a worker interactively (reset, step, run N, frame, quit)",
        description="Step a worker by hand, in the terminal: it starts in interactive mode "
        "(FastLane on) and reads one command a line: " + HELP.removeprefix("commands: ") + ".",
    )
    p.add_argument("name", help="worker name (see `mosaic workers list`)")
    add_config_options(p)
    p.add_argument("--runs-dir", metavar="DIR", help="where the run directory is made")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a reply")
    p.set_defaults(handler=play)


def _step_line(reply: Any) -> str:
    text = (
        f"step {reply.step_index} (episode {reply.episode_index}): "
        f"action {json.dumps(reply.action)}, reward {reply.reward:g}, "
        f"return {reply.episode_return:g}"
    )
    return text + ("  [episode done]" if reply.episode_done else "") + _turn(reply)


def _board(observation: Any) -> str:
    """A board game's observation as text, when it is a grid of two planes (PettingZoo's
    classic games: the person's marks, the others'): ``x`` yours, ``o`` theirs; an empty cell
    shows its move number when the game has one move per cell (row by row), else ``.``."""
    if not isinstance(observation, dict):
        return ""
    grid, mask = observation.get("observation"), observation.get("action_mask")
    try:
        rows = [[[int(v) for v in cell] for cell in row] for row in grid or []]
    except (TypeError, ValueError):
        return ""
    if not rows or any(len(cell) != 2 for row in rows for cell in row):
        return ""
    width = max(len(row) for row in rows)
    numbered = isinstance(mask, list) and len(mask) == len(rows) * width
    lines = []
    for r, row in enumerate(rows):
        cells = []
        for c, (mine, theirs) in enumerate(row):
            empty = str(r * width + c) if numbered else "."
            cells.append("x" if mine else "o" if theirs else empty)
        lines.append("  " + " ".join(f"{cell:>2}" for cell in cells))
    return "\n" + "\n".join(lines)


def _turn(reply: Any) -> str:
    """A turn-based reply: what the policy played for the others, the board, and the
    person's turn."""
    if reply.agent_id is None:
        return ""
    played = "; ".join(
        f"{m['agent_id']} played {json.dumps(m['action'])}" for m in reply.played or []
    )
    text = (f"\n  {played}" if played else "") + _board(reply.observation)
    if reply.episode_done:
        return text + f"\n  game over: {reply.agent_id} ended with return {reply.episode_return:g}"
    return text + f"\n  your turn ({reply.agent_id}): legal moves {json.dumps(reply.legal_actions)}"


def play(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.contract import ConfigError
    from mosaic_sdk.control.session import ControlCommandError, ControlTimeout
    from mosaic_sdk.runner.supervision.config_input import load_job
    from mosaic_sdk.runner.supervision.session_launch import SessionLaunchError, start_session

    with usage_errors(ConfigError, SessionLaunchError, PluginError, ControlTimeout, OSError):
        job = load_job(args.config, args.overrides)
        session = start_session(
            args.name,
            job.config,
            runs_dir=Path(args.runs_dir) if args.runs_dir else None,
            timeout=args.timeout,
            echo_stderr=sys.stderr,
        )
    print(f"playing {args.name} (run {session.run_id}); {HELP}", flush=True)
    with session:
        for raw in sys.stdin:
            words = raw.split(maxsplit=1)
            if not words:
                continue
            try:
                if not _do(session, words[0].lower(), words[1].strip() if len(words) > 1 else ""):
                    break
            except _Skip:
                continue
            except ControlCommandError as exc:
                print(f"error: {exc}", flush=True)
            except ControlTimeout as exc:
                print(f"error: {exc}", flush=True)
                return 1
        else:
            session.close()
    code = session.returncode
    print(f"session ended ({exit_status(code)})")
    return 0


def _do(session: Any, word: str, rest: str) -> bool:
    """Carry out one command; False ends the session."""
    if word in ("q", "quit", "exit"):
        print(f"closed: {session.close().closed}", flush=True)
        return False
    if word.isdigit() and not rest:  # a bare move: `4` is `step 4`
        word, rest = "step", word
    if word in ("r", "reset"):
        reply = session.reset(seed=_int(rest, "SEED") if rest else None)
        shown = f": {_obs(reply.observation)}" if reply.agent_id is None else ""
        print(f"episode {reply.episode_index} (seed {reply.seed}){shown}" + _turn(reply))
    elif word in ("s", "step"):
        print(_step_line(session.step(action=_json(rest) if rest else None)))
    elif word in ("n", "run"):
        count = max(1, _int(rest, "N"))
        for _ in range(count):
            reply = session.step()
            if reply.episode_done:
                break
        print(_step_line(reply))
    elif word in ("f", "frame"):
        _frame(session, rest or f"{session.run_id}.png")
    elif word in ("p", "ping"):
        session.ping()
        print("pong")
    else:
        print(f"unknown command {word!r}; {HELP}")
    sys.stdout.flush()
    return True


def _frame(session: Any, output: str) -> None:
    # CLI start-up time
    from mosaic_sdk.cli.fastlane import snapshot
    from mosaic_sdk.control.session import ControlTimeout
    from mosaic_sdk.fastlane.snapshot import snapshot_format

    try:  # what the PNG needs first: its errors have nothing to do with the session
        snapshot_format(output)
        require("PIL.Image", "images", "mosaic play's frame command")
    except (ValueError, MissingExtraError) as exc:
        print(f"error: {exc}")
        return
    if session.last_frame is not None:
        try:  # the last step's frame may still be pending: the worker publishes it soon
            session.wait_frame(timeout=5.0)
        except (ControlTimeout, ValueError):
            pass  # the snapshot below says what is there
    try:
        snapshot(argparse.Namespace(run_id=session.run_id, output=output, timeout=1.0, wait=0.0))
    except UsageError as exc:
        message = str(exc)
        if session.last_frame is None and not message.startswith("cannot write"):
            # no reply so far named a frame: no episode yet, or a worker without frames
            message += (
                " (reset first: a worker that claims supports_fastlane publishes the frame"
                " of each state once an episode has started)"
            )
        print(f"error: {message}")


def _int(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        print(f"error: {name} must be a non-negative integer, got {text!r}")
        raise _Skip
    return value


def _json(text: str) -> Any:
    from mosaic_sdk.telemetry.reader import MAX_JSON_DEPTH, json_depth_exceeds  # start-up

    shown = repr(text) if len(text) <= 80 else f"{text[:40]!r}... ({len(text):,} characters)"
    try:
        value = json.loads(text)
        deep = json_depth_exceeds(value, MAX_JSON_DEPTH)
    except RecursionError:  # nested past what the parser's stack takes
        deep = True
    except ValueError:
        print(f"error: ACTION must be JSON (e.g. 1 or [0.5, -0.2]), got {shown}")
        raise _Skip from None
    if deep:
        print(f"error: ACTION nests deeper than {MAX_JSON_DEPTH} levels, got {shown}")
        raise _Skip
    return value


def _obs(observation: Any) -> str:
    text = json.dumps(observation)
    return text if len(text) <= 120 else text[:117] + "..."


class _Skip(Exception):
    """A command whose argument was refused (already said on stdout)."""
