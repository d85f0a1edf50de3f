"""The MLP agent: separate actor and critic networks over a flat observation.

For vector observations (CartPole, MountainCar, LunarLander, ...) and one-hot ``Discrete``
ones (FrozenLake, Taxi). Each network is two ``hidden``-wide tanh layers and an output layer,
orthogonally initialised (gain sqrt(2) for hidden layers, 0.01 for the policy's logits, 1 for
the value). State-dict keys are ``actor.{0,2,4}.*`` and ``critic.{0,2,4}.*``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

KIND = "mlp"


def layer_init(layer: nn.Module, std: float = float(np.sqrt(2)), bias: float = 0.0) -> Any:
    """Orthogonal weights with gain ``std``, constant bias (the PPO initialisation)."""
    nn.init.orthogonal_(layer.weight, std)  # type: ignore[arg-type]
    nn.init.constant_(layer.bias, bias)  # type: ignore[arg-type]
    return layer


def _tower(inputs: int, hidden: int, outputs: int, out_std: float) -> nn.Sequential:
    return nn.Sequential(
        layer_init(nn.Linear(inputs, hidden)),
        nn.Tanh(),
        layer_init(nn.Linear(hidden, hidden)),
        nn.Tanh(),
        layer_init(nn.Linear(hidden, outputs), std=out_std),
    )


class MLPAgent(nn.Module):
    """Actor and critic MLPs; ``one_hot`` encodes a ``Discrete`` observation first."""

    kind = KIND

    def __init__(self, obs_size: int, n_actions: int, hidden: int = 64, one_hot: bool = False):
        super().__init__()
        self.obs_size, self.n_actions = int(obs_size), int(n_actions)
        self.hidden, self.one_hot = int(hidden), bool(one_hot)
        self.critic = _tower(self.obs_size, self.hidden, 1, 1.0)
        self.actor = _tower(self.obs_size, self.hidden, self.n_actions, 0.01)

    # -- what a checkpoint records ------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """Constructor arguments: ``MLPAgent(**agent.config())`` builds the same shape."""
        return {"obs_size": self.obs_size, "n_actions": self.n_actions,
                "hidden": self.hidden, "one_hot": self.one_hot}  # fmt: skip

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one prepared observation (what rollout storage holds)."""
        return (self.obs_size,)

    # -- forward -------------------------------------------------------------------------
    def prepare(self, obs: Any) -> torch.Tensor:
        """A batch of raw env observations (numpy) to the float batch the networks take."""
        x = torch.as_tensor(np.asarray(obs), device=next(self.parameters()).device)
        if self.one_hot:
            return nn.functional.one_hot(x.long().reshape(-1), self.obs_size).float()
        return x.float().reshape(x.shape[0], -1)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor(x)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None) -> Any:
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def config_from_state_dict(state: dict[str, Any], one_hot: bool = False) -> dict[str, Any]:
    """The ``MLPAgent`` arguments a bare state dict implies (its layer shapes)."""
    try:
        first, last = state["actor.0.weight"], state["actor.4.weight"]
    except KeyError as exc:
        raise ValueError(
            f"not an MLP agent's state dict: no {exc.args[0]!r} (expected actor.0/2/4 and "
            "critic.0/2/4 layers)"
        ) from None
    return {"obs_size": int(first.shape[1]), "n_actions": int(last.shape[0]),
            "hidden": int(first.shape[0]), "one_hot": one_hot}  # fmt: skip


__all__ = ["KIND", "MLPAgent", "config_from_state_dict", "layer_init"]
