"""The agents of the worker's own PPO, and loading them from checkpoints.

- :class:`MLPAgent` (:mod:`.mlp`): flat observations (CartPole, LunarLander, FrozenLake);
- :class:`MinigridAgent` / :class:`MinigridCNN` (:mod:`.minigrid`): MiniGrid and BabyAI's
  7x7x3 view;
- :func:`make_agent` (:mod:`.spaces`): the agent an env's observation space calls for;
- :func:`load_policy` (:mod:`.checkpoint`): any checkpoint of our PPO, old or new, or a bare
  state dict, as a ready agent; ``policy_eval``, ``resume_training`` and interactive stepping
  all load through it.

Importing this package imports torch.
"""

from __future__ import annotations

from mosaic_worker_cleanrl.agents.checkpoint import (
    CHECKPOINT_FORMAT,
    LoadedPolicy,
    load_policy,
    read_checkpoint,
    save_checkpoint,
)
from mosaic_worker_cleanrl.agents.minigrid import MinigridAgent, MinigridCNN
from mosaic_worker_cleanrl.agents.mlp import MLPAgent, layer_init
from mosaic_worker_cleanrl.agents.spaces import KINDS, check_fits, choose_kind, make_agent

__all__ = [
    "CHECKPOINT_FORMAT",
    "KINDS",
    "LoadedPolicy",
    "MLPAgent",
    "MinigridAgent",
    "MinigridCNN",
    "check_fits",
    "choose_kind",
    "layer_init",
    "load_policy",
    "make_agent",
    "read_checkpoint",
    "save_checkpoint",
]
