"""The MiniGrid CNN agent: a small convolutional backbone over the 7x7x3 egocentric view.

MiniGrid and BabyAI observe a partial view of the grid, one (object, colour, state) triple
per cell, as a ``(7, 7, 3)`` uint8 image (``minigrid.wrappers.ImgObsWrapper`` keeps only that
image). The agent:

    (B, 7, 7, 3) uint8 -> (B, 3, 7, 7) float / 255
    -> Conv2d(3, 32, 3, padding=1) + ReLU
    -> Conv2d(32, 64, 3, padding=1) + ReLU
    -> Conv2d(64, 64, 3, padding=1) + ReLU
    -> Flatten (64 * 7 * 7 = 3136) -> Linear(3136, 128) + ReLU     (MinigridCNN)
    actor:  Linear(128, 128) + ReLU -> Linear(128, n_actions)      (logits)
    critic: Linear(128, 128) + ReLU -> Linear(128, 1)              (value)

Every layer is orthogonally initialised (gain sqrt(2); 0.01 for the logits, 1 for the value).
The backbone is shared by the two heads; a ReLU follows its Linear so that the heads see a
non-linear feature. State-dict keys: ``cnn.network.{0,2,4}.*`` (convolutions), ``cnn.fc.0.*``
(the Linear), ``actor.{0,2}.*``, ``critic.{0,2}.*``: the ``cnn.`` prefix tells a CNN
checkpoint from an MLP one, as the platform's deployed loader does. A state dict without
``cnn.fc`` (the platform's earlier layout, whose heads read the 3136 conv features directly)
loads into ``MinigridAgent(features=None)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

from mosaic_worker_cleanrl.agents.mlp import layer_init

KIND = "minigrid_cnn"


class MinigridCNN(nn.Module):
    """Three 3x3 convolutions (32/64/64, padding 1), then ``Linear(64*H*W, features)``."""

    def __init__(
        self, height: int = 7, width: int = 7, channels: int = 3, features: int | None = 128
    ):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(channels, 32, kernel_size=3, padding=1)),
            nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, kernel_size=3, padding=1)),
            nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, kernel_size=3, padding=1)),
            nn.ReLU(),
            nn.Flatten(),
        )
        flat = 64 * height * width  # padding 1 keeps the grid's size
        self.fc = None
        self.output_dim = flat
        if features is not None:
            self.fc = nn.Sequential(layer_init(nn.Linear(flat, features)), nn.ReLU())
            self.output_dim = features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: (B, H, W, C) cell codes (uint8 or float) -> (B, output_dim)."""
        x = x.permute(0, 3, 1, 2).float() / 255.0
        x = self.network(x)
        return self.fc(x) if self.fc is not None else x


class MinigridAgent(nn.Module):
    """The CNN backbone with separate actor and critic heads (see the module docstring)."""

    kind = KIND

    def __init__(
        self,
        n_actions: int,
        height: int = 7,
        width: int = 7,
        channels: int = 3,
        features: int | None = 128,
        hidden: int = 128,
    ):
        super().__init__()
        self.n_actions, self.hidden, self.features = int(n_actions), int(hidden), features
        self.image_shape = (int(height), int(width), int(channels))
        self.cnn = MinigridCNN(height, width, channels, features)
        width_in = self.cnn.output_dim
        self.actor = nn.Sequential(
            layer_init(nn.Linear(width_in, hidden)),
            nn.ReLU(),
            layer_init(nn.Linear(hidden, self.n_actions), std=0.01),
        )
        self.critic = nn.Sequential(
            layer_init(nn.Linear(width_in, hidden)),
            nn.ReLU(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )

    def config(self) -> dict[str, Any]:
        """Constructor arguments: ``MinigridAgent(**agent.config())`` builds the same shape."""
        height, width, channels = self.image_shape
        return {"n_actions": self.n_actions, "height": height, "width": width,
                "channels": channels, "features": self.features, "hidden": self.hidden}  # fmt: skip

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.image_shape

    def prepare(self, obs: Any) -> torch.Tensor:
        """A batch of raw images (B, H, W, C) to a float tensor (scaled in the forward)."""
        x = torch.as_tensor(np.asarray(obs), device=next(self.parameters()).device)
        return x.float().reshape(x.shape[0], *self.image_shape)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor(self.cnn(x))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.cnn(x))

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None) -> Any:
        hidden = self.cnn(x)
        dist = Categorical(logits=self.actor(hidden))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(hidden)


def config_from_state_dict(state: dict[str, Any]) -> dict[str, Any]:
    """The ``MinigridAgent`` arguments a bare state dict implies (its layer shapes)."""
    try:
        conv0, conv2 = state["cnn.network.0.weight"], state["cnn.network.4.weight"]
        head0, head2 = state["actor.0.weight"], state["actor.2.weight"]
    except KeyError as exc:
        raise ValueError(
            f"not a MiniGrid CNN agent's state dict: no {exc.args[0]!r} (expected "
            "cnn.network.0/2/4, actor.0/2 and critic.0/2 layers)"
        ) from None
    fc = state.get("cnn.fc.0.weight")
    flat = int(fc.shape[1]) if fc is not None else int(head0.shape[1])
    cells = flat // int(conv2.shape[0])
    side = int(round(cells**0.5))
    if side * side != cells:
        raise ValueError(f"cannot tell the grid size of a CNN with {flat} flattened features")
    return {"n_actions": int(head2.shape[0]), "height": side, "width": side,
            "channels": int(conv0.shape[1]),
            "features": int(fc.shape[0]) if fc is not None else None,
            "hidden": int(head0.shape[0])}  # fmt: skip


__all__ = ["KIND", "MinigridAgent", "MinigridCNN", "config_from_state_dict"]
