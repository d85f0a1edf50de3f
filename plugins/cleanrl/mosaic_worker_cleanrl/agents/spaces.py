"""Which agent fits which spaces: the choice our PPO makes, and the check loading makes.

:func:`make_agent` picks from the observation space: a ``(H, W, 3)`` uint8 image (MiniGrid's
view after ``ImgObsWrapper``) gets the CNN agent, a ``Box`` of numbers or a ``Discrete``
(one-hot) the MLP agent. Only ``Discrete`` actions: the policy is a categorical distribution.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from mosaic_worker_cleanrl.agents import minigrid, mlp

KINDS = (mlp.KIND, minigrid.KIND)
#: Largest image (cells) the CNN agent takes: its Linear grows with H*W.
MAX_CNN_CELLS = 32 * 32


def agent_class(kind: str) -> Any:
    if kind == mlp.KIND:
        return mlp.MLPAgent
    if kind == minigrid.KIND:
        return minigrid.MinigridAgent
    raise ValueError(f"unknown agent kind {kind!r}; known: {', '.join(KINDS)}")


def spaces_of(env: Any) -> tuple[Any, Any]:
    """(observation space, action space) of one env or of one env of a vector env."""
    obs = getattr(env, "single_observation_space", None) or env.observation_space
    act = getattr(env, "single_action_space", None) or env.action_space
    return obs, act


def is_grid_image(space: Any) -> bool:
    """A ``(H, W, 3)`` uint8 ``Box``: MiniGrid's (object, colour, state) view."""
    return (
        isinstance(space, gymnasium.spaces.Box)
        and len(space.shape) == 3
        and space.shape[2] == 3
        and space.dtype == np.uint8
    )


def choose_kind(obs_space: Any, requested: str = "auto") -> str:
    """The agent kind for ``obs_space`` (``requested``: ``auto`` or a kind to insist on)."""
    if isinstance(obs_space, gymnasium.spaces.Dict):
        hint = (
            " (a MiniGrid env: make it through"
            " mosaic_worker_cleanrl.env_families.wrap_observations)"
            if "image" in obs_space.spaces
            else ""
        )
        raise TypeError(f"the agents take a Box or Discrete observation, not {obs_space}{hint}")
    if not isinstance(obs_space, gymnasium.spaces.Box | gymnasium.spaces.Discrete):
        raise TypeError(f"the agents take a Box or Discrete observation, not {obs_space}")
    if requested == "auto":
        return minigrid.KIND if is_grid_image(obs_space) else mlp.KIND
    if requested == minigrid.KIND and not is_grid_image(obs_space):
        raise TypeError(f"the {minigrid.KIND} agent takes a (H, W, 3) uint8 image, not {obs_space}")
    agent_class(requested)
    return requested


def make_agent(env: Any, kind: str = "auto", hidden: int = 64) -> Any:
    """A fresh agent for ``env``'s spaces (``hidden``: the MLP agent's width)."""
    obs_space, act_space = spaces_of(env)
    if not isinstance(act_space, gymnasium.spaces.Discrete):
        raise TypeError(
            f"our PPO handles Discrete actions, not {act_space}; use ppo_continuous_action"
        )
    kind = choose_kind(obs_space, kind)
    n_actions = int(act_space.n)
    if kind == minigrid.KIND:
        height, width, channels = (int(x) for x in obs_space.shape)
        if height * width > MAX_CNN_CELLS:
            raise TypeError(
                f"images of {height}x{width} are too large for the MiniGrid CNN agent (at most "
                f"{MAX_CNN_CELLS} cells); pixel observations need a pixel agent (ppo_atari)"
            )
        return minigrid.MinigridAgent(n_actions, height, width, channels)
    if isinstance(obs_space, gymnasium.spaces.Discrete):
        return mlp.MLPAgent(int(obs_space.n), n_actions, hidden, one_hot=True)
    return mlp.MLPAgent(int(np.prod(obs_space.shape)), n_actions, hidden)


def check_fits(agent: Any, env: Any, where: str = "the policy") -> None:
    """Raise ``ValueError`` when ``agent`` cannot act in ``env`` (what does not fit, and why)."""
    obs_space, act_space = spaces_of(env)
    problems = []
    if not isinstance(act_space, gymnasium.spaces.Discrete):
        problems.append(f"the env's actions are {act_space}, the agent's are Discrete")
    elif int(act_space.n) != agent.n_actions:
        problems.append(f"the agent has {agent.n_actions} actions, the env {int(act_space.n)}")
    if agent.kind == minigrid.KIND:
        if not is_grid_image(obs_space) or tuple(obs_space.shape) != tuple(agent.input_shape):
            problems.append(f"the CNN agent sees {agent.input_shape} images, the env {obs_space}")
    elif isinstance(obs_space, gymnasium.spaces.Discrete):
        if not agent.one_hot or agent.obs_size != int(obs_space.n):
            problems.append(f"the MLP agent takes {agent.obs_size} inputs, the env {obs_space}")
    elif isinstance(obs_space, gymnasium.spaces.Box):
        if agent.one_hot or agent.obs_size != int(np.prod(obs_space.shape)):
            problems.append(f"the MLP agent takes {agent.obs_size} inputs, the env {obs_space}")
    else:
        problems.append(f"the env observes {obs_space}")
    if problems:
        raise ValueError(f"{where} does not fit this env: {'; '.join(problems)}")


__all__ = ["KINDS", "MAX_CNN_CELLS", "agent_class", "check_fits", "choose_kind",
           "is_grid_image", "make_agent", "spaces_of"]  # fmt: skip
