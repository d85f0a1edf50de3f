"""What an env host process does to its slice of envs: step, reset, call, set attributes.

``SliceStepper`` steps envs ``[begin, end)`` of a transport as ``SyncVectorEnv`` steps its
envs, writing fixed-size observations into their rows and everything else (other spaces'
observations, infos, an env's exception) as one pickled blob into the worker's side area.
"""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Sequence
from typing import Any

import cloudpickle
import numpy as np

from mosaic_sdk.shm.packing import RowCodec
from mosaic_sdk.shm.side import SideArea

NEXT_STEP, SAME_STEP, DISABLED = "NextStep", "SameStep", "Disabled"


def dumps(value: Any) -> bytes:
    """Pickle ``value`` (cloudpickle for what plain pickle refuses, e.g. lambdas)."""
    try:
        return pickle.dumps(value, protocol=5)
    except Exception:
        return bytes(cloudpickle.dumps(value, protocol=5))


def error_blob(exc: BaseException) -> bytes:
    """The exception with its traceback text, pickled for the client to re-raise."""
    text = "".join(traceback.format_exception(exc))
    try:
        return dumps({"error": exc, "traceback": text})
    except Exception:
        return dumps({"error": RuntimeError(f"{type(exc).__name__}: {exc}"), "traceback": text})


class SliceStepper:
    """Steps envs ``[begin, begin + len(envs))`` of a transport's regions."""

    def __init__(
        self,
        side_: Any,
        envs: Sequence[Any],
        begin: int,
        images: bool,
        worker: int,
        autoreset_mode: str = NEXT_STEP,
        areas: tuple[Any, Any] | None = None,
    ) -> None:
        self.side = side_
        self.envs = list(envs)
        self.begin = begin
        self.end = begin + len(self.envs)
        self.images = images
        self.mode = autoreset_mode
        self.obs_codec = RowCodec(self.envs[0].observation_space)
        self.act_codec = RowCodec(self.envs[0].action_space)
        self.obs_views = self.obs_codec.leaf_views(side_.obs) if self.obs_codec.fixed else []
        self.act_views = self.act_codec.leaf_views(side_.actions) if self.act_codec.fixed else []
        if areas is not None:  # in-process stepping passes its own (see ``inline``)
            self.area_in, self.area_out = areas
            return
        regions = side_.seg.side
        self.area_in = SideArea(regions[worker][0]) if regions else None
        self.area_out = SideArea(regions[worker][1]) if regions else None

    def _actions(self) -> list[Any]:
        if self.act_codec.fixed:
            return self.act_codec.read_values(self.act_views, self.begin, self.end)
        data = self.area_in.read() if self.area_in is not None else None
        if data is None:
            raise RuntimeError("no actions arrived in the side area for a non-fixed action space")
        return list(pickle.loads(data))

    def _publish(self, blob: dict[str, Any]) -> None:
        if self.area_out is None:
            if blob:
                raise RuntimeError(
                    "this transport has no side areas, so step infos and observations of "
                    "non-fixed spaces cannot travel; create it with side_size > 0"
                )
            return
        if not blob:
            self.area_out.clear()
            return
        data = dumps(blob)
        if not self.area_out.fits(data):
            data = error_blob(self.area_out.too_big(data))
        self.area_out.write(data)

    def step(self) -> None:
        """Apply the current action batch (or reset flags) to every env of the slice."""
        try:
            self._step()
        except Exception as exc:  # the env's error goes to the client, which re-raises it
            if self.area_out is None:
                raise
            self.area_out.write(error_blob(exc))

    def _step(self) -> None:
        s, b, e = self.side, self.begin, self.end
        actions = self._actions()
        # bit 0 of a reset flag: reset instead of step (bit 1 marks an asynchronous request)
        flags = (s.resets[b:e] & 1).tolist() if self.mode == NEXT_STEP else [0] * (e - b)
        observations, rewards, terminated, truncated = [], [], [], []
        infos: dict[int, list[dict[str, Any]]] = {}
        for k, (env, action, reset) in enumerate(zip(self.envs, actions, flags, strict=True)):
            added: list[dict[str, Any]] = []
            if reset:
                obs, info = env.reset()
                reward, term, trunc = 0.0, False, False
            else:
                obs, reward, term, trunc, info = env.step(action)
                if self.mode == SAME_STEP and (term or trunc):
                    added.append({"final_obs": obs, "final_info": info})
                    obs, info = env.reset()
            if info:
                added.append(info)
            if added:
                infos[b + k] = added
            observations.append(obs)
            rewards.append(reward)
            terminated.append(term)
            truncated.append(trunc)
        blob: dict[str, Any] = {}
        if self.obs_codec.fixed:
            self.obs_codec.write_values(self.obs_views, observations, b)
        else:
            blob["obs"] = observations
        if infos:
            blob["infos"] = infos
        s.rewards[b:e] = np.asarray(rewards, dtype=np.float64)
        s.terminated[b:e] = terminated
        s.truncated[b:e] = truncated
        if self.images and s.image is not None:
            for k, env in enumerate(self.envs):
                s.image[b + k] = env.render()
        s.resets[b:e] = 0
        self._publish(blob)

    def reset(
        self, env_ids: Sequence[int], seeds: Sequence[int | None], options: Any
    ) -> tuple[list[dict[str, Any]], list[Any] | None]:
        """Reset the given global env ids of this slice; returns their infos (and their
        observations when the space has no fixed row)."""
        infos, observations = [], []
        for i, seed in zip(env_ids, seeds, strict=True):
            obs, info = self.envs[i - self.begin].reset(seed=seed, options=options)
            if self.obs_codec.fixed:
                self.obs_codec.write_values(self.obs_views, [obs], i)
            observations.append(obs)
            if self.images and self.side.image is not None:
                self.side.image[i] = self.envs[i - self.begin].render()
            for region in (self.side.rewards, self.side.terminated, self.side.truncated):
                region[i] = 0
            self.side.resets[i] = 0
            infos.append(info)
        return infos, None if self.obs_codec.fixed else observations

    def call(self, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """``env.get_wrapper_attr(name)`` of every env of the slice, called with the arguments
        when it is callable."""
        attrs = [env.get_wrapper_attr(name) for env in self.envs]
        return [a(*args, **kwargs) if callable(a) else a for a in attrs]

    def set_attr(self, name: str, values: Sequence[Any]) -> None:
        """``env.set_wrapper_attr(name, value)`` with one value per env of the slice."""
        for env, value in zip(self.envs, values, strict=True):
            env.set_wrapper_attr(name, value)

    def run(self, message: tuple[Any, ...]) -> Any:
        """Execute one forwarded command (see ``host_process._Owner``)."""
        kind = message[0]
        if kind == "reset":
            return self.reset(message[1], message[2], message[3])
        if kind == "call":
            args, kwargs = pickle.loads(message[2])
            return dumps(self.call(message[1], args, kwargs))
        if kind == "set":
            self.set_attr(message[1], pickle.loads(message[2]))
            return None
        raise ValueError(f"unknown forwarded command {kind!r}")
