"""Interactive mode: the worker does not train, it serves ``reset``/``step``/``act``/``close``."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from mosaic_sdk.control import dialect
from mosaic_sdk.control.channel import EOF, ControlChannel
from mosaic_sdk.control.protocol import ProtocolError, error_reply, ok_reply


class RunContext(Protocol):
    """What interactive serving uses of the worker's :class:`mosaic_sdk.run_context.RunContext`
    (which builds on this package, so it is named here by what it offers)."""

    config: Any  # the worker's config: ``run_id``, ``seed``, ``to_dict()``
    emitter: Any  # its TelemetryEmitter: ``run_started``, ``episode``, ``run_completed``
    control: ControlChannel | None
    cancel: threading.Event


#: The value of a config's ``mode`` that selects interactive mode.
INTERACTIVE = "interactive"


class InteractiveSession:
    """An env and a policy, and the state of the episode being played.

    ``policy(observation) -> action`` is the worker's own policy (a trained network, a rule).
    ``info`` fills the dialect's ``init``/``ready`` lines (``env_id``, ``algo``,
    ``policy_path``). ``json_frames=True`` adds the deployed dialect's ``render_payload``
    (every frame as a JSON list) to dialect-1.0 replies, as the deployed worker does.
    """

    def __init__(
        self,
        env: Any,
        policy: Callable[[Any], Any],
        *,
        info: Mapping[str, Any] | None = None,
        json_frames: bool = False,
    ) -> None:
        self.env = env
        self.policy = policy
        self.info = {"env_id": None, "algo": None, "policy_path": None, **dict(info or {})}
        self.json_frames = json_frames
        self.observation: Any = None
        self.seed: int | None = None
        self.episode_index = -1
        self.step_index = 0
        self.episode_return = 0.0
        self.episode_done = False
        self.episodes_done = 0

    def reset(self, seed: int | None) -> Any:
        self.observation, _ = self.env.reset(seed=seed)
        if seed is not None:
            self.env.action_space.seed(seed)
        self._new_episode(seed)
        return self.observation

    def _new_episode(self, seed: int | None) -> None:
        self.seed = seed
        self.episode_index += 1
        self.step_index = 0
        self.episode_return = 0.0
        self.episode_done = False

    def step(self, action: Any = None) -> tuple[Any, float, bool, bool]:
        """One step with ``action`` (``None``: the policy's); returns action, reward,
        terminated, truncated."""
        action = self._chosen(action)
        obs, reward, terminated, truncated, _ = self.env.step(action)
        self.observation = obs
        self.step_index += 1
        self.episode_return += float(reward)
        self.episode_done = bool(terminated or truncated)
        return action, float(reward), bool(terminated), bool(truncated)

    def _chosen(self, action: Any) -> Any:
        return self.policy(self.observation) if action is None else self.coerce_action(action)

    def coerce_action(self, action: Any) -> Any:
        """An action given as JSON, in the form the env's action space holds."""
        space = self.env.action_space
        if isinstance(action, list):
            action = np.asarray(action, dtype=space.dtype)
        if not space.contains(action):
            raise ValueError(f"action {action!r} is not in the action space {space}")
        return action

    def fastlane(self) -> Any:
        """The FastLane wrapper in the env's wrapper chain that publishes frames, or None."""
        env = self.env
        while env is not None:
            if getattr(env, "publishing", False) and hasattr(env, "publish_pending_frame"):
                return env
            env = getattr(env, "env", None)
        return None

    def frame_ref(self) -> dict[str, object] | None:
        """Where the frame of the current state is: the FastLane run, the frames published so
        far and whether this state's frame is still pending (``None`` without FastLane)."""
        wrapper = self.fastlane()
        if wrapper is None:
            return None
        return {
            "fastlane_run_id": wrapper.run_id,
            "frames_published": wrapper.pump.frames_published,
            "pending": bool(wrapper.frame_pending),
        }

    def frame_due_in(self) -> float | None:
        """Seconds until the pending frame may be published (0.0: now); None when no frame
        is pending (or FastLane is off)."""
        wrapper = self.fastlane()
        return None if wrapper is None else wrapper.pending_frame_due_in()

    def publish_pending_frame(self) -> bool:
        """Publish the current state's frame now if it is pending; True when one was."""
        wrapper = self.fastlane()
        if wrapper is None:
            return False
        try:
            return bool(wrapper.publish_pending_frame())
        except Exception as exc:  # noqa: BLE001 - no command to answer: FastLane stops, not the session
            wrapper.pump.disable(f"render() raised {type(exc).__name__}: {exc}")
            return False

    def frame(self) -> Any:
        return self.env.render()

    def turn_fields(self) -> dict[str, object]:
        """Fields a ``reset``/``step`` reply adds (a turn-based session's turn; none here)."""
        return {}


class IllegalAction(ValueError):
    """A turn-based session refused a move: it is not legal now (nothing was played)."""

    def __init__(self, agent: str, action: Any, legal: list[int]) -> None:
        self.agent, self.action, self.legal = agent, action, legal
        super().__init__(
            f"move {action!r} is not legal for {agent} now; legal moves: {legal}"
            if legal
            else f"{agent} has no move to make now (the episode is over)"
        )


class TurnBasedSession(InteractiveSession):
    """A turn-based (PettingZoo AEC) game: a person plays ``human``, the policy the others.

    ``policy(agent, observation) -> action`` is the worker's policy for any agent (it must be
    deterministic for a given observation, or seeded, for ``reset {seed}`` to replay). The
    legal moves of an agent come from its observation's ``action_mask`` (PettingZoo's classic
    games), else from its discrete action space.
    """

    def __init__(
        self,
        env: Any,
        policy: Callable[[str, Any], Any],
        *,
        human: str,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(env, lambda observation: policy(self.human, observation), info=info)
        if human not in env.possible_agents:
            raise ValueError(
                f"human {human!r} is not an agent of this game; its agents: "
                f"{', '.join(env.possible_agents)}"
            )
        self.agent_policy = policy
        self.human = human
        self.agents = list(env.possible_agents)
        self.legal: list[int] = []
        self.played: list[dict[str, Any]] = []
        self.terminated = self.truncated = False

    def legal_moves(self, observation: Any) -> list[int]:
        if isinstance(observation, Mapping) and "action_mask" in observation:
            return [int(i) for i in np.flatnonzero(np.asarray(observation["action_mask"]) > 0)]
        space = self.env.action_space(self.human)
        return [int(space.start) + i for i in range(int(space.n))]

    def reset(self, seed: int | None) -> Any:
        self.env.reset(seed=seed)
        self._new_episode(seed)
        self.terminated = self.truncated = False
        self.played = []
        self._advance()
        return self.observation

    def _advance(self) -> float:
        """Play the policy's moves until the person's turn or the end of the game; returns
        the reward the person's agent earned meanwhile (since its last move)."""
        earned = 0.0
        env = self.env
        while env.agents:
            agent = env.agent_selection
            observation, reward, terminated, truncated, _ = env.last()
            done = bool(terminated or truncated)
            if agent == self.human:
                earned += float(reward)
                self.observation = observation
                if not done:
                    self.legal = self.legal_moves(observation)
                    return earned
                self.terminated, self.truncated = bool(terminated), bool(truncated)
            if done:
                env.step(None)
                continue
            action = self.agent_policy(agent, observation)
            env.step(action)
            self.played.append({"agent_id": agent, "action": action})
        self.legal = []
        self.episode_done = True
        return earned

    def step(self, action: Any = None) -> tuple[Any, float, bool, bool]:
        """The person's move (``None``: the policy's move for the person), then the others'
        until the person's turn comes again; returns the move, the reward it earned,
        terminated, truncated. An illegal move raises :class:`IllegalAction`, unplayed."""
        if self.env.agent_selection != self.human or not self.env.agents:
            raise IllegalAction(self.human, action, [])
        action = self._chosen(action)
        self.played = []
        self.env.step(action)
        reward = self._advance()
        self.step_index += 1
        self.episode_return += reward
        return action, reward, self.terminated, self.truncated

    def coerce_action(self, action: Any) -> Any:
        """A move given as JSON: one of the legal moves now, else :class:`IllegalAction`."""
        if isinstance(action, bool) or not isinstance(action, int) or action not in self.legal:
            raise IllegalAction(self.human, action, list(self.legal))
        return action

    def turn_fields(self) -> dict[str, object]:
        return {
            "agent_id": self.human,
            "legal_actions": list(self.legal),
            "played": [dict(m) for m in self.played],
        }


def serve_interactive(ctx: RunContext, session: InteractiveSession, worker_type: str) -> None:
    """Serve commands until ``close``, EOF, ``stop`` or a signal.

    A worker supplies an :class:`InteractiveSession` (its env and its policy) and
    :func:`serve_interactive` does the rest: it reads the commands the control channel forwards,
    steps the env, answers in protocol version 1 (``control_reply`` lines) or in the deployed
    CleanRL dialect 1.0 (commands without ``"v"``, :mod:`mosaic_sdk.control.dialect`), writes one
    ``episode`` telemetry line per finished episode, and ends the run with ``run_completed`` on
    ``close`` (or a closed stdin) and ``run_cancelled`` on ``stop``/SIGTERM.

    Frames go through FastLane: wrap the env with ``maybe_wrap_env`` (its default interval, 16 ms,
    or ``MOSAIC_FASTLANE_INTERVAL_MS``) and each ``reset``/``step``/``close`` reply names the
    segment in ``frame``. Frames come at display rate, and the newest state is always shown: a
    step the interval skipped leaves its frame *pending* (``"pending": true`` in the reply), and
    while a frame is pending the session waits for the next command only until the frame is due,
    then publishes it. So during a burst of commands a frame is published at most every interval,
    and within one interval after the commands stop the segment holds the frame of the latest
    state (``Session.wait_frame`` waits for it). ``close`` (and a closed stdin) publishes a
    pending frame before the session ends. A reset needs nothing special: its own frame is
    published or pending like a step's, and a frame still pending from before it shows a state
    that is gone. ``interval_ms=0`` publishes every step's frame (nothing is ever pending).
    A seeded ``reset`` also seeds the action space, so ``reset {seed}`` followed by the same
    ``step`` commands replays the same episode.

    Turn-based games: a :class:`TurnBasedSession` wraps a PettingZoo AEC env; a person acts for
    one agent (``human``) and the worker's policy plays the others. ``reset`` and ``step`` play
    the policy's moves until it is the person's turn again (or the game is over) and their
    replies add ``agent_id`` (the person's agent), ``legal_actions`` (its legal moves now) and
    ``played`` (the policy's moves since the last reply). ``step`` with a move that is not legal
    is refused with ``illegal_action`` and nothing is played; ``step`` without one lets the
    policy move for the person too. The reward of a reply is what the person's agent earned
    since its last move (credited to that move), ``episode_return`` its return in the game.
    """
    channel = ctx.control
    if channel is None or channel.interactive is None:
        raise RuntimeError("serve_interactive needs a control channel in interactive mode")
    started = time.monotonic()
    ctx.emitter.run_started(
        worker_type=worker_type,
        algo=session.info.get("algo"),
        env_id=session.info.get("env_id"),
        seed=getattr(ctx.config, "seed", None),
        config=ctx.config.to_dict(),
        mode=INTERACTIVE,
        **({"agents": session.agents} if isinstance(session, TurnBasedSession) else {}),
    )
    info = {key: session.info[key] for key in ("env_id", "algo", "policy_path")}
    init = {"type": "init", "run_id": ctx.config.run_id, **info}
    dialect.write(channel, {**init, "version": dialect.DIALECT_VERSION})
    try:
        commands = channel.interactive
        while not ctx.cancel.is_set():
            # While a frame is pending, wait for a command only until the frame is due.
            due_in = session.frame_due_in()
            try:
                kind, item = commands.get() if due_in is None else commands.get(timeout=due_in)
            except queue.Empty:
                session.publish_pending_frame()
                continue
            if (kind, item) == EOF:
                session.publish_pending_frame()  # ends as on close
                break
            if kind == "v1":
                if _serve_v1(ctx, session, item):
                    break
            elif kind == "legacy":
                _serve_legacy(ctx, session, item)
    finally:
        channel.end_interactive()
        session.env.close()
    if ctx.cancel.is_set():
        return  # worker_main ends the run with run_cancelled
    ctx.emitter.run_completed(
        episodes=session.episodes_done,
        total_reward=session.episode_return,
        duration_seconds=time.monotonic() - started,
    )


def _finish_episode(ctx: RunContext, session: InteractiveSession, terminated: bool) -> None:
    session.episodes_done += 1
    ctx.emitter.episode(
        session.episode_index,
        session.episode_return,
        session.step_index,
        terminated=terminated,
        truncated=not terminated,
        episode_seed=session.seed,
        agent_id=session.human if isinstance(session, TurnBasedSession) else None,
    )


def _serve_v1(ctx: RunContext, session: InteractiveSession, command: Any) -> bool:
    """Answer one version-1 command; True when the session ends (close)."""
    channel = ctx.control
    assert channel is not None
    name, cid = command.cmd, command.id
    try:
        if name == "close":
            session.publish_pending_frame()
            channel.reply(ok_reply(cid, name, closed=True, frame=session.frame_ref()))
            return True
        if name == "reset":
            obs = session.reset(command.seed)
            result = {
                "seed": command.seed,
                "episode_index": session.episode_index,
                "step_index": 0,
                "episode_return": 0.0,
                "observation": obs,
                "frame": session.frame_ref(),
                **session.turn_fields(),
            }
        elif name == "act":
            obs = command.observation
            if isinstance(obs, list):
                obs = np.asarray(obs, dtype=np.float32)
            result = {"action": session.policy(obs)}
        else:  # step
            _check_steppable(session, cid)
            action, reward, terminated, truncated = session.step(command.action)
            if session.episode_done:
                _finish_episode(ctx, session, terminated)
            result = {
                "episode_index": session.episode_index,
                "step_index": session.step_index,
                "action": action,
                "reward": reward,
                "terminated": terminated,
                "truncated": truncated,
                "episode_return": session.episode_return,
                "episode_done": session.episode_done,
                "observation": session.observation,
                "frame": session.frame_ref(),
                **session.turn_fields(),
            }
        channel.reply(ok_reply(cid, name, **result))
    except ProtocolError as exc:
        channel.reply(exc.reply())
    except IllegalAction as exc:  # refused and not played: the game waits for a legal move
        hint = "send step with one of the legal moves (or without action: the policy's move)"
        channel.reply(error_reply(cid, name, "illegal_action", str(exc), hint))
    except Exception as exc:  # noqa: BLE001 - a bad action or env error: reply, go on
        hint = "check the action against the env's action space; the session goes on"
        channel.reply(error_reply(cid, name, "failed", f"{type(exc).__name__}: {exc}", hint))
    return False


def _check_steppable(session: InteractiveSession, cid: str) -> None:
    if session.observation is None:
        why, hint = (
            "step before reset: no episode is running",
            'send {"cmd": "reset", "seed": N} first',
        )
    elif session.episode_done:
        why = f"episode {session.episode_index} is over (episode_done was true)"
        hint = "send reset to start the next episode"
    else:
        return
    raise ProtocolError("out_of_order", why, hint, id=cid, cmd="step")


def _serve_legacy(ctx: RunContext, session: InteractiveSession, data: dict[str, Any]) -> None:
    """Answer one dialect-1.0 command exactly as the deployed worker does."""
    channel = ctx.control
    assert channel is not None
    cmd = data.get("cmd")
    try:
        if cmd == "ping":
            dialect.write(channel, {"type": "pong"})
        elif cmd == "stop":
            channel.request_stop()
            dialect.write(channel, {"type": "stopped"})
        elif cmd == "reset":
            seed = data.get("seed")
            if seed is not None and (type(seed) is not int or seed < 0):
                raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
            obs = session.reset(seed)
            line = {
                "type": "ready",
                "run_id": ctx.config.run_id,
                "env_id": session.info["env_id"],
                "algo": session.info["algo"],
                "seed": seed,
                "observation_shape": list(getattr(obs, "shape", ())),
                "step_index": 0,
                "episode_index": session.episode_index,
                "episode_reward": 0.0,
            }
            dialect.write(channel, _with_frame(session, line))
        elif cmd == "step":
            if session.observation is None:
                raise ValueError("step before reset: send reset first")
            if session.episode_done:  # the deployed worker plays on: a new, unseeded episode
                session.reset(None)
            action, reward, terminated, truncated = session.step()
            line = {
                "type": "step",
                "step_index": session.step_index,
                "episode_index": session.episode_index,
                "action": action,
                "reward": reward,
                "terminated": terminated,
                "truncated": truncated,
                "episode_reward": session.episode_return,
            }
            dialect.write(channel, _with_frame(session, line))
            if session.episode_done:
                _finish_episode(ctx, session, terminated)
                done = {
                    "type": "episode_done",
                    "total_reward": session.episode_return,
                    "episode_length": session.step_index,
                    "episode_number": session.episode_index + 1,
                }
                dialect.write(channel, done)
        else:
            known = ", ".join(dialect.LEGACY_COMMANDS)
            dialect.write(channel, dialect.error_line(f"unknown command {cmd!r}; known: {known}"))
    except Exception as exc:  # noqa: BLE001 - the dialect answers every failure with error
        dialect.write(channel, dialect.error_line(f"{type(exc).__name__}: {exc}"))


def _with_frame(session: InteractiveSession, line: dict[str, object]) -> dict[str, object]:
    if session.json_frames:
        payload = dialect.render_payload(session.frame())
        if payload is not None:
            line["render_payload"] = payload
    return line
