"""Checkpoints of our PPO, and the one function that loads a policy from any we can read.

A checkpoint of our PPO is ``torch.save`` of a dict with ``format`` =
:data:`CHECKPOINT_FORMAT`, the agent's state dict under ``agent``, the optimizer's under
``optimizer``, ``global_step``, ``iteration``, ``env_id``, ``args`` and, since the CNN agent,
``agent_kind`` (``"mlp"`` or ``"minigrid_cnn"``) and ``agent_config`` (the constructor
arguments). A checkpoint written before that has no ``agent_kind``: it holds an MLP agent
described by ``obs_size`` / ``n_actions`` / ``hidden_size`` / ``one_hot``, which MLP
checkpoints still carry.

:func:`load_policy` also reads a bare state dict (what the platform's interactive mode loads
with ``torch.load(weights_only=True)``): keys starting with ``cnn.`` mean the CNN agent,
anything else the MLP agent; the layer shapes give the sizes. Files are always read with
``weights_only=True``: a checkpoint cannot run code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch

from mosaic_worker_cleanrl.agents import minigrid, mlp
from mosaic_worker_cleanrl.agents.spaces import agent_class, check_fits, spaces_of

CHECKPOINT_FORMAT = "mosaic-cleanrl-ppo/1"


def save_checkpoint(
    path: Path,
    agent: Any,
    optimizer: torch.optim.Optimizer | None,
    *,
    global_step: int,
    iteration: int,
    env_id: str,
    args: Mapping[str, object],
) -> None:
    """Write a checkpoint atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "agent_kind": agent.kind,
        "agent_config": agent.config(),
        "agent": agent.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "global_step": int(global_step),
        "iteration": int(iteration),
        "env_id": env_id,
        "n_actions": agent.n_actions,
        "args": args,
    }
    if agent.kind == mlp.KIND:  # what readers older than agent_kind look for
        record.update(obs_size=agent.obs_size, one_hot=agent.one_hot, hidden_size=agent.hidden)
    tmp = path.with_suffix(".tmp")
    torch.save(record, tmp)
    os.replace(tmp, path)


def read_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> Any:
    """``torch.load`` with ``weights_only=True``; a ``ValueError`` naming the file otherwise."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{str(p)!r} does not exist or is not a file")
    try:
        return torch.load(p, map_location=device, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - pickle and zip errors have many types
        raise ValueError(
            f"{str(p)!r} is not a checkpoint this worker can read safely: "
            f"torch.load(weights_only=True) refused it ({type(exc).__name__}; a checkpoint may "
            "hold only tensors and plain data)"
        ) from None


@dataclass
class LoadedPolicy:
    """A policy read by :func:`load_policy`."""

    agent: Any
    kind: str
    #: ``"mosaic"`` (a checkpoint of our PPO) or ``"state_dict"`` (bare weights)
    source: str
    env_id: str | None = None
    global_step: int = 0
    iteration: int = 0
    optimizer: dict[str, Any] | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def act(self, obs: Any, deterministic: bool = True) -> int:
        """The action for one raw observation of the (wrapped) env."""

        with torch.no_grad():
            logits = self.agent.logits(self.agent.prepare(np.asarray(obs)[None]))
        if deterministic:
            return int(logits.argmax(dim=-1).item())
        return int(torch.distributions.Categorical(logits=logits).sample().item())


def _describe_ours(data: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = data.get("agent_kind")
    if kind is None:  # written before the record existed: always the MLP agent
        keys = ("obs_size", "n_actions", "hidden_size", "one_hot")
        missing = [k for k in keys if k not in data]
        if missing:
            raise ValueError(f"checkpoint lacks {', '.join(missing)} (and has no agent_kind)")
        return mlp.KIND, {"obs_size": data["obs_size"], "n_actions": data["n_actions"],
                          "hidden": data["hidden_size"], "one_hot": data["one_hot"]}  # fmt: skip
    config = data.get("agent_config")
    if not isinstance(config, Mapping):
        raise ValueError("checkpoint has agent_kind but no agent_config")
    return str(kind), dict(config)


def _describe_state_dict(state: Mapping[str, Any], env: Any) -> tuple[str, dict[str, Any]]:
    if any(str(k).startswith("cnn.") for k in state):
        return minigrid.KIND, minigrid.config_from_state_dict(dict(state))
    one_hot = False
    if env is not None:
        one_hot = isinstance(spaces_of(env)[0], gymnasium.spaces.Discrete)
    return mlp.KIND, mlp.config_from_state_dict(dict(state), one_hot=one_hot)


def load_policy(path: str | Path, env: Any = None, device: str | torch.device = "cpu") -> Any:
    """The policy stored in ``path``, in eval mode on ``device``, as a :class:`LoadedPolicy`.

    ``env`` (a single or vector env, already through
    :func:`~mosaic_worker_cleanrl.env_families.wrap_observations`) is optional: given, the agent is
    checked against its spaces (a ``ValueError`` says what does not fit) and a bare MLP
    state dict learns from it whether observations are one-hot encoded.
    """
    data = read_checkpoint(path, device)
    if not isinstance(data, Mapping):
        raise ValueError(f"{str(path)!r} holds a {type(data).__name__}, not a checkpoint")
    if data.get("format") == CHECKPOINT_FORMAT:
        kind, config = _describe_ours(data)
        state, source = data.get("agent"), "mosaic"
    elif "format" in data:
        raise ValueError(
            f"{str(path)!r} has format {data['format']!r}; this worker reads {CHECKPOINT_FORMAT}"
        )
    elif data and all(isinstance(v, torch.Tensor) for v in data.values()):
        kind, config = _describe_state_dict(data, env)
        state, source = data, "state_dict"
    else:
        raise ValueError(
            f"{str(path)!r} is neither a checkpoint of this worker's PPO ({CHECKPOINT_FORMAT}) "
            "nor a state dict of tensors"
        )
    cls = agent_class(kind)
    try:
        agent = cls(**config)
        agent.load_state_dict(state)
    except (TypeError, RuntimeError) as exc:
        raise ValueError(f"{str(path)!r}: weights do not fit a {kind} agent: {exc}") from None
    agent.to(device).eval()
    if env is not None:
        check_fits(agent, env, where=str(path))
    return LoadedPolicy(
        agent=agent,
        kind=kind,
        source=source,
        env_id=data.get("env_id") if source == "mosaic" else None,
        global_step=int(data.get("global_step", 0)) if source == "mosaic" else 0,
        iteration=int(data.get("iteration", 0)) if source == "mosaic" else 0,
        optimizer=data.get("optimizer") if source == "mosaic" else None,
        data=dict(data) if source == "mosaic" else {},
    )


__all__ = ["CHECKPOINT_FORMAT", "LoadedPolicy", "load_policy", "read_checkpoint", "save_checkpoint"]
