"""The turn-based example worker: two players learning tic-tac-toe (PettingZoo's AEC
``tictactoe_v3``), one telemetry row per move of each player.

`python -m mosaic_worker_example.turnbased --config PATH [--dry-run]` runs it; `mosaic run
example_turnbased` does the same through the runner; `mosaic play example_turnbased` lets a
person play one side (``human``) against the learned policy. Read it top to bottom:

- **Agents act in turn** (``env.agent_iter()``), each choosing a *legal* move from its
  observation's ``action_mask``.
- **A reward is credited to the agent that moved.** ``env.last()`` hands the agent about to
  act the reward it accumulated since its own last move (the opponent's reply may have
  decided the game). So each agent's step line is written at its *next* turn, or when the
  game ends, with the reward that move earned; a win shows on the winner's last move, a loss
  on the loser's.
- **Step lines are numbered per agent** (``step_numbering="per_agent"``): each agent's moves
  in a game are its steps 0, 1, 2...
- **An episode is one game.** It ends when both players are done; each writes its own
  episode line (its moves, its return). ``run_completed`` counts games (``episodes``) and
  reports each agent's counts (``agents``).
- **Learning**: a tabular Q-function over (board, move), updated at each agent's next turn
  (TD(0) towards the credited reward plus the best legal value from there). With
  ``opponent="self"`` one table plays both sides (self-play) and both learn; with
  ``opponent="random"`` the ``learner`` plays a fixed opponent that moves uniformly at
  random among its legal moves, and only the learner learns.
- **Per-agent series**: every ``metrics_every`` games each agent reports its mean return and
  its win rate over the last ``window`` games (``emitter.metrics(..., agent_id=...)``).
- ``ctx.cancelled`` is checked before every move: the control safe point (pause, checkpoint,
  stop).
- **The board on FastLane**, when FastLane is on (``fastlane``, else the launcher's switch;
  ``mosaic play`` turns it on): the env draws its board as an RGB array (``BoardImage``) and
  ``maybe_wrap_env`` publishes it after every move to the run's stream and to each player's
  (``agent_stream_id``), so ``mosaic watch`` shows the game as it is played.
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
from mosaic_sdk.contract import WorkerCapabilities, WorkerConfig, WorkerMetadata
from mosaic_sdk.control.interactive import TurnBasedSession
from mosaic_sdk.fastlane import resolve_fastlane
from mosaic_sdk.plugins import maybe_wrap_env
from mosaic_sdk.telemetry import Heartbeat, TelemetryEmitter
from mosaic_sdk.worker_cli import RunContext, worker_main
from mosaic_worker_example import __version__

WORKER_TYPE = "example_turnbased"
ALGORITHM = "tabular_q"
AGENTS = ("player_1", "player_2")


class TurnBasedConfig(WorkerConfig):
    env_id: Literal["tictactoe_v3"] = Field(
        "tictactoe_v3", description="The PettingZoo AEC game (pettingzoo.classic)"
    )
    episodes: int = Field(300, ge=1, le=1_000_000, description="Games to play")
    opponent: Literal["self", "random"] = Field(
        "random",
        description="'random': the learner plays a fixed opponent that moves at random; "
        "'self': one policy plays both sides and learns from both (self-play)",
    )
    learner: Literal["player_1", "player_2"] = Field(
        "player_1", description="The agent that learns when opponent is 'random'"
    )
    learning_rate: float = Field(0.5, gt=0, le=1, description="Step size of the Q update")
    discount: float = Field(0.95, gt=0, le=1, description="Discount from one move to the next")
    exploration: float = Field(
        0.1, ge=0, le=1, description="Probability of a random legal move while learning"
    )
    metrics_every: int = Field(10, ge=1, description="Report per-agent metrics every N games")
    window: int = Field(50, ge=1, description="Games the reported mean return and win rate span")
    step_every: int = Field(1, ge=1, description="Write every Nth step line (episode ends always)")
    heartbeat_interval: float | None = Field(
        None, gt=0, description="Seconds between heartbeats (None: MOSAIC_HEARTBEAT_INTERVAL or 30)"
    )
    step_delay_ms: float = Field(0.0, ge=0, description="Sleep per move, to watch a slow run")
    mode: Literal["train", "interactive"] = Field(
        "train",
        description="'train' plays the games; 'interactive' first learns from `episodes` games "
        "(without telemetry), then serves reset/step commands: a person plays `human` against "
        "the learned policy (`mosaic play example_turnbased`)",
    )
    human: Literal["player_1", "player_2"] = Field(
        "player_2", description="Interactive mode: the agent a person plays"
    )
    fastlane: bool | None = Field(
        None,
        description="Publish the board to FastLane (the run's stream and one per player): "
        "true on, false off, null (default) as the launcher says",
    )


#: Pixels of a cell's side and of the grid's lines in the board image.
CELL, LINE = 40, 4
COLOURS = {
    "background": (250, 248, 240),
    "grid": (60, 60, 60),
    1: (200, 40, 40),  # player_1's X
    2: (40, 80, 200),  # player_2's O
}


def _stamps() -> dict[int, np.ndarray]:
    """The two marks as boolean CELL x CELL masks: an X for player_1, a ring for player_2."""
    yy, xx = np.mgrid[0:CELL, 0:CELL].astype(float)
    inset = (yy >= 7) & (yy < CELL - 7) & (xx >= 7) & (xx < CELL - 7)
    cross = inset & ((np.abs(yy - xx) <= 2.5) | (np.abs(yy + xx - (CELL - 1)) <= 2.5))
    centre = (CELL - 1) / 2
    ring = np.abs(np.hypot(yy - centre, xx - centre) - (CELL / 2 - 9)) <= 2.5
    return {1: cross, 2: ring}


_STAMPS = _stamps()


def draw_board(squares: Sequence[int]) -> np.ndarray:
    """The board as an RGB image (uint8, 128 x 128): square ``i`` at row ``i // 3``, column
    ``i % 3`` (as the observation's grid and ``mosaic play``'s text board lay it out), 0 empty,
    1 player_1's X, 2 player_2's O."""
    side = 3 * CELL + 4 * LINE
    image = np.empty((side, side, 3), dtype=np.uint8)
    image[:] = COLOURS["grid"]
    for index, mark in enumerate(squares):
        top = LINE + (index // 3) * (CELL + LINE)
        left = LINE + (index % 3) * (CELL + LINE)
        cell = image[top : top + CELL, left : left + CELL]
        cell[:] = COLOURS["background"]
        if mark in _STAMPS:
            cell[_STAMPS[mark]] = COLOURS[mark]
    return image


class BoardImage:
    """The game with a render of its own: ``render()`` draws the board (:func:`draw_board`)
    as an RGB array, small and fast (PettingZoo's own ``rgb_array`` render is a 1000-pixel
    pygame picture). Everything else is the game's."""

    render_mode = "rgb_array"

    def __init__(self, env: Any) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def render(self) -> np.ndarray:
        return draw_board(self.env.unwrapped.board.squares)


def make_env(config: TurnBasedConfig | None = None) -> Any:
    """The AEC game (its module imports pygame, which the example's gymnasium extra brings).

    With a config whose FastLane is on (``resolve_fastlane``: its ``fastlane`` switch, else
    the launcher's variables), the game draws its board and ``maybe_wrap_env`` publishes it.
    """
    from pettingzoo.classic import tictactoe_v3

    env = tictactoe_v3.env()
    if config is None:
        return env
    fastlane = resolve_fastlane(config.fastlane)
    if not fastlane.enabled:
        return env
    return maybe_wrap_env(BoardImage(env), run_id=config.run_id, settings=fastlane)


def board_key(observation: Any) -> bytes:
    """The state a Q value belongs to: the board as the agent to move sees it (its own marks
    in the first plane), so one table can play either side."""
    return np.asarray(observation["observation"], dtype=np.int8).tobytes()


def legal_moves(observation: Any) -> list[int]:
    return [int(i) for i in np.flatnonzero(np.asarray(observation["action_mask"]) > 0)]


class QPolicy:
    """Tabular Q values over (board, move), with epsilon-greedy play among legal moves."""

    def __init__(self, config: TurnBasedConfig, seed: int | None) -> None:
        self.table: dict[bytes, np.ndarray] = {}
        self.rng = np.random.default_rng(seed)
        self.learning_rate = config.learning_rate
        self.discount = config.discount
        self.exploration = config.exploration

    def values(self, key: bytes) -> np.ndarray:
        found = self.table.get(key)
        if found is None:
            found = self.table[key] = np.zeros(9)
        return found

    def act(self, observation: Any, *, explore: bool = True) -> int:
        legal = legal_moves(observation)
        if explore and self.rng.random() < self.exploration:
            return int(self.rng.choice(legal))
        values = self.values(board_key(observation))[legal]
        best = [m for m, v in zip(legal, values, strict=True) if v == values.max()]
        return int(self.rng.choice(best))

    def greedy(self, observation: Any) -> int:
        """The best legal move (the first of equals): the deterministic policy of play."""
        legal = legal_moves(observation)
        values = self.values(board_key(observation))[legal]
        return legal[int(np.argmax(values))]

    def best_value(self, observation: Any) -> float:
        legal = legal_moves(observation)
        return float(self.values(board_key(observation))[legal].max()) if legal else 0.0

    def update(self, key: bytes, move: int, target: float) -> None:
        values = self.values(key)
        values[move] += self.learning_rate * (target - values[move])

    def state(self) -> dict[str, list[float]]:
        return {key.hex(): values.tolist() for key, values in self.table.items()}


class RandomPolicy:
    """The fixed opponent: a uniformly random legal move."""

    def __init__(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Any, *, explore: bool = True) -> int:
        return int(self.rng.choice(legal_moves(observation)))


def make_policies(config: TurnBasedConfig) -> tuple[dict[str, Any], set[str]]:
    """Each agent's policy and the agents that learn."""
    seed = config.seed
    if config.opponent == "self":
        shared = QPolicy(config, seed)
        return dict.fromkeys(AGENTS, shared), set(AGENTS)
    other = next(a for a in AGENTS if a != config.learner)
    opponent = RandomPolicy(None if seed is None else seed + 1)
    return {config.learner: QPolicy(config, seed), other: opponent}, {config.learner}


class Reporter:
    """Per-agent telemetry of one run: step and episode lines, metrics, counts."""

    def __init__(self, emitter: TelemetryEmitter, config: TurnBasedConfig) -> None:
        self.emitter = emitter
        self.config = config
        emitter.step_every = config.step_every
        self.game = 0
        self.moves = dict.fromkeys(AGENTS, 0)
        self.returns = dict.fromkeys(AGENTS, 0.0)
        self.counts = {a: {"episodes": 0, "steps": 0, "total_reward": 0.0} for a in AGENTS}
        self.recent: dict[str, deque[float]] = {a: deque(maxlen=config.window) for a in AGENTS}
        self.game_returns: list[float] = []  # per game: the sum over agents (0: zero-sum)
        self.agent_returns: dict[str, list[float]] = {a: [] for a in AGENTS}  # each agent's
        self.total_moves = 0

    def move(
        self, agent: str, reward: float, move: int, *, terminated: bool, truncated: bool
    ) -> None:
        self.emitter.step(
            self.game,
            self.moves[agent],
            reward,
            terminated=terminated,
            truncated=truncated,
            action=move,
            agent_id=agent,
        )
        self.moves[agent] += 1
        self.returns[agent] += reward
        self.total_moves += 1

    def game_over(self, ended: dict[str, tuple[bool, bool]]) -> None:
        for agent in AGENTS:
            terminated, truncated = ended.get(agent, (True, False))
            self.emitter.episode(
                self.game,
                self.returns[agent],
                self.moves[agent],
                terminated=terminated,
                truncated=truncated,
                agent_id=agent,
            )
            own = self.counts[agent]
            own["episodes"] += 1
            own["steps"] += self.moves[agent]
            own["total_reward"] += self.returns[agent]
            self.recent[agent].append(self.returns[agent])
            self.agent_returns[agent].append(self.returns[agent])
        self.game_returns.append(sum(self.returns.values()))
        self.game += 1
        if self.game % self.config.metrics_every == 0:
            for agent in AGENTS:
                recent = list(self.recent[agent])
                self.emitter.metrics(
                    {
                        "mean_return": float(np.mean(recent)),
                        "win_rate": sum(r > 0 for r in recent) / len(recent),
                        "loss_rate": sum(r < 0 for r in recent) / len(recent),
                    },
                    step=self.game,
                    agent_id=agent,
                )
        self.moves = dict.fromkeys(AGENTS, 0)
        self.returns = dict.fromkeys(AGENTS, 0.0)


def play_game(
    env: Any,
    policies: dict[str, Any],
    learners: set[str],
    *,
    seed: int | None,
    report: Reporter | None = None,
    ctx: RunContext | None = None,
    delay_ms: float = 0.0,
) -> bool:
    """Play one game, learning as it goes; False when the run was cancelled mid-game."""
    env.reset(seed=seed)
    waiting: dict[str, tuple[bytes, int]] = {}  # agent -> (board, move) awaiting its reward
    ended: dict[str, tuple[bool, bool]] = {}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        reward, done = float(reward), bool(terminated or truncated)
        if agent in waiting:
            # The reward since this agent's last move is that move's: learn and report it.
            key, move = waiting.pop(agent)
            if agent in learners:
                future = 0.0 if done else policies[agent].best_value(observation)
                policies[agent].update(key, move, reward + policies[agent].discount * future)
            if report is not None:
                report.move(
                    agent, reward, move, terminated=bool(terminated), truncated=bool(truncated)
                )
        if done:
            ended[agent] = (bool(terminated), bool(truncated))
            env.step(None)
            continue
        if ctx is not None and ctx.cancelled:  # before every move: pause, checkpoint, stop
            return False
        move = policies[agent].act(observation, explore=agent in learners)
        waiting[agent] = (board_key(observation), move)
        env.step(move)
        if delay_ms:
            time.sleep(delay_ms / 1000.0)
    if report is not None:
        report.game_over(ended)
    return True


def save_checkpoint(ctx: RunContext, policies: dict[str, Any], moves: int) -> Path:
    path = ctx.run_dir / f"checkpoint-{moves}.json"
    tables = {a: p.state() for a, p in policies.items() if isinstance(p, QPolicy)}
    path.write_text(json.dumps(tables), encoding="utf-8")
    ctx.emitter.checkpoint_saved(checkpoint_path=str(path), step=moves)
    return path


def run(ctx: RunContext) -> None:
    config = ctx.config
    assert isinstance(config, TurnBasedConfig)
    emitter = ctx.emitter
    started = time.monotonic()
    env = make_env(config)
    policies, learners = make_policies(config)
    report = Reporter(emitter, config)
    emitter.run_started(
        worker_type=WORKER_TYPE,
        algo=ALGORITHM,
        env_id=config.env_id,
        seed=config.seed,
        config=config.to_dict(),
        agents=list(AGENTS),
    )
    if ctx.control is not None:
        ctx.control.on_checkpoint(lambda: save_checkpoint(ctx, policies, report.total_moves))
    status = "completed"
    progress = lambda: {"episode": report.game, "step": report.total_moves}  # noqa: E731
    try:
        with Heartbeat(emitter, config.heartbeat_interval, progress=progress):
            for game in range(config.episodes):
                finished = play_game(
                    env,
                    policies,
                    learners,
                    seed=config.seed if game == 0 else None,
                    report=report,
                    ctx=ctx,
                    delay_ms=config.step_delay_ms,
                )
                if not finished:
                    status = "cancelled"
                    break
    finally:
        env.close()
    duration = time.monotonic() - started
    manifest = AnalyticsManifest.build(
        run_id=config.run_id,
        worker_type=WORKER_TYPE,
        status=status,
        returns=report.game_returns,
        agent_returns=report.agent_returns,
        steps=report.total_moves,
        duration_seconds=duration,
        env_id=config.env_id,
        algo=ALGORITHM,
        seed=config.seed,
        extra={"agents": report.counts, "opponent": config.opponent},
    )
    write_analytics(ctx.run_dir, manifest)
    save_checkpoint(ctx, policies, report.total_moves)
    if status == "cancelled":
        emitter.run_cancelled(
            reason=ctx.stop_reason, completed_episodes=report.game, agents=report.counts
        )
        return
    emitter.run_completed(
        episodes=report.game,
        total_reward=sum(report.game_returns),
        duration_seconds=duration,
        final_metrics={
            "steps": report.total_moves,
            **{
                f"mean_return/{a}": c["total_reward"] / max(1, c["episodes"])
                for a, c in report.counts.items()
            },
        },
        agents=report.counts,
    )


def interactive_session(ctx: RunContext) -> TurnBasedSession:
    """Interactive mode: learn from ``config.episodes`` games first, then let a person play
    ``config.human`` while the learned policy (greedy) plays the other side."""
    config = ctx.config
    assert isinstance(config, TurnBasedConfig)
    env = make_env()
    policies, learners = make_policies(config)
    try:
        for game in range(config.episodes):
            if ctx.cancel.is_set():
                break
            play_game(env, policies, learners, seed=config.seed if game == 0 else None)
    finally:
        env.close()
    learned = next(p for a, p in policies.items() if a in learners)

    def policy(agent: str, observation: Any) -> int:
        return learned.greedy(observation)

    return TurnBasedSession(
        make_env(config),
        policy,
        human=config.human,
        info={"env_id": config.env_id, "algo": ALGORITHM},
    )


def check_config(config: WorkerConfig) -> str:
    """Dry-run check: PettingZoo's classic games import."""
    assert isinstance(config, TurnBasedConfig)
    try:
        make_env().close()
    except ImportError as exc:
        raise ValueError(
            f"{config.env_id} cannot be imported ({exc}); install the turn-based extra: "
            "pip install 'mosaic-worker-example[turnbased]'"
        ) from None
    who = "self-play" if config.opponent == "self" else f"{config.learner} against random moves"
    return f"{config.episodes} game(s) of {config.env_id}, {who}"


def describe() -> tuple[WorkerMetadata, WorkerCapabilities]:
    metadata = WorkerMetadata(
        name="Example Turn-Based Worker",
        version=__version__,
        description="Two players learn tic-tac-toe (PettingZoo AEC) by self-play or against "
        "a random opponent, reporting every move per agent; a person can play one side",
        author="mosaic-worker-sdk developers",
        upstream_library="pettingzoo",
        license="MIT",
    )
    capabilities = WorkerCapabilities(
        worker_type=WORKER_TYPE,  # must equal the entry-point name
        supported_paradigms=("turn_based",),
        env_families=("pettingzoo",),
        action_spaces=("discrete",),
        observation_spaces=("dict",),
        max_agents=2,
        supports_self_play=True,
        # Each agent's moves in a game are its steps 0, 1, 2... (see turnbased.py).
        step_numbering="per_agent",
        supports_pause_resume=True,
        supports_checkpointing=True,
        # The board goes to the run's stream and to each player's (make_env).
        supports_fastlane=True,
        control_protocol=1,
        estimated_memory_mb=128,
    )
    return metadata, capabilities


def main(argv: Sequence[str] | None = None) -> int:

    return worker_main(
        config_model=TurnBasedConfig,
        run=run,
        interactive=interactive_session,
        capabilities=describe()[1],
        describe_dry_run=check_config,
        argv=argv,
        prog="mosaic_worker_example.turnbased",
    )


if __name__ == "__main__":
    sys.exit(main())
