"""REINFORCE with a linear softmax policy, in numpy: the example worker's ``reinforce`` policy.

Small enough to read in a minute and it learns in seconds: on CartPole-v1 the mean return of
200 episodes' last 20 is several times their first 20's. The policy is
``softmax(W^T [features(obs), 1])``; after each episode, with ``G_t`` the discounted returns
normalised over the episode (the baseline), ``W += lr * mean_t(G_t * grad log pi(a_t|s_t))``.
Features are the observation as floats (a ``Box``) or one-hot (a ``Discrete``, the toy-text
envs); actions must be ``Discrete``.

:meth:`Reinforce.update` returns what the worker reports as series: the policy loss
(``-mean_t(G_t * log pi(a_t|s_t))``, the surrogate whose gradient the update follows) and the
mean entropy of the policy over the episode's states.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


class Reinforce:
    """A linear softmax policy trained once per episode (see the module docstring)."""

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        *,
        learning_rate: float,
        gamma: float,
        seed: int | None,
    ) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(
                f"policy 'reinforce' needs a discrete action space, the env has {action_space}; "
                "choose an env such as CartPole-v1, Acrobot-v1 or FrozenLake-v1"
            )
        if isinstance(observation_space, spaces.Discrete):
            size = int(observation_space.n)
        elif isinstance(observation_space, spaces.Box):
            size = int(np.prod(observation_space.shape))
        else:
            raise ValueError(
                f"policy 'reinforce' reads Box or Discrete observations, the env has "
                f"{observation_space}"
            )
        self.observation_space = observation_space
        self.n_actions = int(action_space.n)
        self.learning_rate = learning_rate
        self.gamma = gamma
        self.weights = np.zeros((size + 1, self.n_actions))
        self.rng = np.random.default_rng(seed)
        self._features: list[np.ndarray] = []
        self._actions: list[int] = []
        self._rewards: list[float] = []

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps: the weights (as lists, for JSON)."""
        return {"weights": self.weights.tolist()}

    def load(self, state: dict[str, Any]) -> None:
        """Start from a checkpoint's :meth:`state` (``ValueError`` when it does not fit)."""
        weights = np.asarray(state.get("weights"), dtype=np.float64)
        if weights.shape != self.weights.shape:
            raise ValueError(
                f"the checkpoint's weights have shape {weights.shape}, this env's policy "
                f"{self.weights.shape}: resume from a checkpoint of the same env"
            )
        self.weights = weights

    def features(self, obs: Any) -> np.ndarray:
        if isinstance(self.observation_space, spaces.Discrete):
            x = np.zeros(self.weights.shape[0])
            x[int(obs) - int(self.observation_space.start)] = 1.0
        else:
            x = np.empty(self.weights.shape[0])
            x[:-1] = np.asarray(obs, dtype=np.float64).ravel()
        x[-1] = 1.0
        return x

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        z = x @ self.weights
        p = np.exp(z - z.max(axis=-1, keepdims=True))
        return p / p.sum(axis=-1, keepdims=True)

    def act(self, obs: Any) -> int:
        """Sample an action for ``obs`` and remember both for the episode's update."""
        x = self.features(obs)
        cumulative = np.cumsum(self.probabilities(x))
        action = min(int(np.searchsorted(cumulative, self.rng.random() * cumulative[-1])),
                     self.n_actions - 1)  # fmt: skip
        self._features.append(x)
        self._actions.append(action)
        return action

    def reward(self, reward: float) -> None:
        """The reward that followed the last action."""
        self._rewards.append(float(reward))

    def update(self) -> dict[str, float]:
        """One gradient step on the episode just played; returns its loss and entropy."""
        steps = min(len(self._rewards), len(self._actions))
        if steps == 0:
            return {}
        x = np.array(self._features[:steps])
        actions = np.array(self._actions[:steps])
        rewards = np.array(self._rewards[:steps])
        self._features, self._actions, self._rewards = [], [], []
        returns = np.empty(steps)
        running = 0.0
        for t in range(steps - 1, -1, -1):
            running = rewards[t] + self.gamma * running
            returns[t] = running
        advantages = (returns - returns.mean()) / (returns.std() + 1e-8)
        probs = self.probabilities(x)
        log_taken = np.log(probs[np.arange(steps), actions] + 1e-12)
        entropy = float(-(probs * np.log(probs + 1e-12)).sum(axis=1).mean())
        loss = float(-(advantages * log_taken).mean())
        chosen = np.eye(self.n_actions)[actions]
        gradient = x.T @ ((chosen - probs) * advantages[:, None]) / steps
        self.weights += self.learning_rate * gradient
        return {"losses/policy_loss": loss, "losses/entropy": entropy}


__all__ = ["Reinforce"]
