"""What runs inside an env host process: gymnasium envs stepped behind the transport.

Worker 0 creates the ``SharedMemoryTransport`` and answers commands; workers 1..n-1 attach as
``TransportWorker`` and step their own slice. A reset command is split by slice: worker 0
forwards the other slices' share over a private pipe and kicks that worker awake.

Autoreset is gymnasium's default (``AutoresetMode.NEXT_STEP``) driven by the reset flags: an env
whose flag is set is reset (unseeded) instead of stepped, with reward 0 and both done flags 0.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import spaces
from mosaic_sdk.shm.sync import PeerGoneError, PeerWatch, TransportTimeoutError
from mosaic_sdk.shm.transport import SharedMemoryTransport
from mosaic_sdk.shm.worker import TransportWorker

REPLY_TIMEOUT = 60.0


class SliceStepper:
    """Steps envs ``[begin, begin + len(envs))`` of a transport's regions."""

    def __init__(self, side: Any, envs: Sequence[Any], begin: int, images: bool) -> None:
        self.side = side
        self.envs = list(envs)
        self.begin = begin
        self.end = begin + len(self.envs)
        self.obs_space = self.envs[0].observation_space
        self.act_space = self.envs[0].action_space
        self.images = images

    def _write_obs(self, i: int, obs: Any) -> None:
        spaces.encode_into(self.obs_space, obs, self.side.obs[i])
        if self.images and self.side.image is not None:
            self.side.image[i] = self.envs[i - self.begin].render()

    def step(self) -> None:
        """Apply the current action batch (or reset flags) to every env of the slice."""
        side, b, e = self.side, self.begin, self.end
        actions = spaces.decode_rows(self.act_space, side.actions[b:e])
        flags = side.resets[b:e].tolist()
        observations, rewards, terminated, truncated = [], [], [], []
        for env, action, reset in zip(self.envs, actions, flags, strict=True):
            if reset:
                obs, _ = env.reset()
                reward, term, trunc = 0.0, False, False
            else:
                obs, reward, term, trunc, _ = env.step(action)
            observations.append(obs)
            rewards.append(reward)
            terminated.append(term)
            truncated.append(trunc)
        spaces.encode_rows(self.obs_space, observations, side.obs[b:e])
        side.rewards[b:e] = rewards
        side.terminated[b:e] = terminated
        side.truncated[b:e] = truncated
        if self.images and side.image is not None:
            for k, env in enumerate(self.envs):
                side.image[b + k] = env.render()
        side.resets[b:e] = 0

    def reset(
        self, env_ids: Sequence[int], seeds: Sequence[int | None], options: Any
    ) -> list[dict[str, Any]]:
        """Reset the given global env ids of this slice; returns their infos."""
        infos = []
        for i, seed in zip(env_ids, seeds, strict=True):
            obs, info = self.envs[i - self.begin].reset(seed=seed, options=options)
            self._write_obs(i, obs)
            self.side.rewards[i] = 0.0
            self.side.terminated[i] = 0
            self.side.truncated[i] = 0
            self.side.resets[i] = 0
            infos.append(info)
        return infos


def _image_shape(env: Any) -> tuple[int, int, int]:
    env.reset()
    frame = np.asarray(env.render())
    if frame.ndim == 2:
        frame = frame[..., None]
    if frame.ndim != 3 or frame.dtype != np.uint8:
        raise ValueError(
            f"image region needs render() to return uint8 HxWxC frames, got {frame.dtype} "
            f"{frame.shape}; create the envs with render_mode='rgb_array'"
        )
    return (int(frame.shape[0]), int(frame.shape[1]), int(frame.shape[2]))


class _Owner:
    """Worker 0: owns the transport, serves commands, forwards resets to the other workers."""

    def __init__(
        self,
        transport: SharedMemoryTransport,
        stepper: SliceStepper,
        slices: Sequence[tuple[int, int]],
        pipes: Sequence[Connection],
    ) -> None:
        self.t = transport
        self.stepper = stepper
        self.slices = slices
        self.pipes = pipes

    def handle(self, message: Any) -> Any:
        if isinstance(message, cmd.ResetRequest):
            return self._reset(message)
        return None

    def _reset(self, req: cmd.ResetRequest) -> cmd.ResetResponse:
        n = self.t.layout.num_envs
        ids = req.env_ids or list(range(n))
        seeds = req.seeds or [None] * len(ids)
        if len(seeds) != len(ids):
            raise ValueError(f"{len(seeds)} seeds for {len(ids)} env ids")
        infos: dict[int, dict[str, Any]] = {}
        waiting = []
        for w, (b, e) in enumerate(self.slices):
            mine = [(i, s) for i, s in zip(ids, seeds, strict=True) if b <= i < e]
            if not mine or w == 0:
                continue
            self.pipes[w - 1].send(
                ("reset", [i for i, _ in mine], [s for _, s in mine], req.options)
            )
            self.t.kick_worker(w)
            waiting.append(w)
        b0, e0 = self.slices[0]
        own = [(i, s) for i, s in zip(ids, seeds, strict=True) if b0 <= i < e0]
        got = self.stepper.reset([i for i, _ in own], [s for _, s in own], req.options)
        infos.update(zip((i for i, _ in own), got, strict=True))
        for w in waiting:
            infos.update(self._reply(w))
        return cmd.ResetResponse(env_ids=list(ids), infos=[infos[i] for i in ids])

    def _reply(self, w: int) -> dict[int, dict[str, Any]]:
        pipe, pid = self.pipes[w - 1], self.t.seg.worker_pid(w)
        watch = PeerWatch(pid)
        try:
            waited = 0.0
            while not pipe.poll(0.05):
                waited += 0.05
                if not watch.alive():
                    raise PeerGoneError(f"engine worker {w} (pid {pid}) exited during a reset")
                if waited > REPLY_TIMEOUT:
                    raise TransportTimeoutError(f"engine worker {w} did not answer a reset")
            status, value = pipe.recv()
        finally:
            watch.close()
        if status != "ok":
            raise RuntimeError(f"engine worker {w}: {value}")
        return dict(value)


def _report(launcher: Connection, exc: BaseException) -> None:
    try:
        launcher.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
    except Exception:
        pass


def run_host(
    name: str,
    env_fns: Sequence[Callable[[], Any]],
    index: int,
    slices: Sequence[tuple[int, int]],
    images: bool,
    launcher: Connection,
    pipes: Sequence[Connection],
    spin: float | None,
    env_id: str,
) -> None:
    """Body of one host process (``index`` 0 owns the transport). Reports to ``launcher``."""
    launcher_pid = os.getppid()
    begin, end = slices[index]
    reported = False
    try:
        envs = [fn() for fn in env_fns]
        if index == 0:
            first = envs[0]
            for role, space in (
                ("observation", first.observation_space),
                ("action", first.action_space),
            ):
                spaces.check_supported(space, role)
            image_shape = _image_shape(first) if images else None
            act_space = first.action_space
            transport = SharedMemoryTransport(
                slices[-1][1],
                spaces.flat_size(first.observation_space),
                spaces.flat_size(act_space),
                name=name,
                image_shape=image_shape,
                num_workers=len(slices),
                spin=spin,
                peer_pids=(launcher_pid,),
            )
            try:
                for w, (b, e) in enumerate(slices):
                    transport.set_worker_slice(w, b, e)
                transport.schema = cmd.GetSchemaResponse(
                    num_envs=slices[-1][1],
                    obs_size=transport.layout.obs_size,
                    act_size=transport.layout.act_size,
                    observation_space=spaces.to_spec(first.observation_space),
                    action_space=spaces.to_spec(act_space),
                    image=image_shape,
                    env_id=env_id,
                    metadata={k: v for k, v in first.metadata.items() if k != "autoreset_mode"},
                    num_workers=len(slices),
                )
                stepper = SliceStepper(transport, envs, begin, images)
                owner = _Owner(transport, stepper, slices, pipes)
                launcher.send(("ready", transport.name))
                while (seq := transport.wait_for_actions(owner.handle)) is not None:
                    stepper.step()
                    transport.publish_frame(seq)
            except BaseException as exc:
                _report(launcher, exc)  # before close(), so the client finds it on waking
                reported = True
                raise
            finally:
                transport.close()
        else:
            worker = TransportWorker(name, index, spin=spin)
            try:
                worker.watch_peer(launcher_pid, "launcher")
                stepper = SliceStepper(worker, envs, begin, images)
                launcher.send(("ready", name))
                pipe = pipes[0]
                while (seq := worker.wait_for_actions()) is not None:
                    if seq == 0:
                        while pipe.poll():
                            _, ids, seeds, options = pipe.recv()
                            try:
                                infos = stepper.reset(ids, seeds, options)
                                pipe.send(("ok", list(zip(ids, infos, strict=True))))
                            except Exception as exc:
                                pipe.send(("error", f"{type(exc).__name__}: {exc}"))
                        continue
                    stepper.step()
                    worker.publish_done(seq)
            except BaseException as exc:
                _report(launcher, exc)
                reported = True
                raise
            finally:
                worker.close()
        for env in envs:
            env.close()
    except BaseException as exc:
        if not reported:
            _report(launcher, exc)
        raise SystemExit(1) from None
