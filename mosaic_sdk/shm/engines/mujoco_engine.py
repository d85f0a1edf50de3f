"""``MujocoEngine``: a MuJoCo physics engine behind the shm transport and the seven services.

    engine = MujocoEngine(num_envs=64, model="reacher")     # creates the segment
    print(engine.name)                                      # give it to the client
    engine.serve_forever()                                  # until the client sends Close
    engine.close()                                          # unlinks the segment

Rendering is offscreen: ``MUJOCO_GL`` defaults to ``egl`` (``osmesa`` where EGL is missing).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import engines
from mosaic_sdk.shm import services as sv
from mosaic_sdk.shm.engines import model_path
from mosaic_sdk.shm.engines.render import BatchRenderer
from mosaic_sdk.shm.layout import LAYOUTS, Layout
from mosaic_sdk.shm.messages import SpaceSpec
from mosaic_sdk.shm.ring import MessageTooLargeError
from mosaic_sdk.shm.sync import SLICE, PeerGoneError
from mosaic_sdk.shm.transport import SharedMemoryTransport

mujoco = engines.load_mujoco()  # an optional dependency (the `mujoco` extra), offscreen GL

OUTBOX_LIMIT = 100_000  # telemetry frames waiting for ring space before a stream is stopped
#: Most steps one command may advance (``mujoco.control``'s physics steps, ``scene.set_mode
#: ("step")``'s control steps): a command is answered in seconds, not hours.
MAX_COMMAND_STEPS = 10_000
#: Physics steps between two looks at the client during a long command (gone: it stops).
CHECK_EVERY = 1000

TELEMETRY: tuple[tuple[str, str], ...] = (
    ("sim_time", "simulated time of the env (s)"),
    ("contact_count", "number of active contacts"),
    ("contact_force", "sum of the contacts' normal forces (N)"),
    ("body_linvel", "linear velocity of every body in the world frame (nbody x 3, m/s)"),
    ("body_angvel", "angular velocity of every body in the world frame (nbody x 3, rad/s)"),
    ("qpos", "joint positions"),
    ("qvel", "joint velocities"),
    ("ctrl", "actuator controls"),
)


def _numeric(model: Any, name: str, default: float) -> float:
    try:
        return float(model.numeric(name).data[0])
    except KeyError:
        return default


@dataclass
class _TelemetryStream:
    stream_id: int
    env_ids: list[int]
    names: list[str]
    every: int  # physics ticks between frames
    max_frames: int
    next_tick: int
    sent: int = 0


@dataclass
class _ImageStream:
    stream_id: int
    camera: str  # "" = the free viewport camera
    env_ids: list[int]
    period: float
    max_frames: int
    next_due: float
    sent: int = 0


@dataclass
class _JointLayout:
    """Where the joints of a joint-state request live in qpos/qvel (looked up once)."""

    names: list[str]
    qpos_dims: list[int]
    qvel_dims: list[int]
    qpos_at: list[int]
    qvel_at: list[int]


@dataclass
class _EnvState:
    noise: tuple[float, float] = (0.02, 0.02)  # qpos, qvel half-widths at every reset
    debug: list[sv.DebugShape] = field(default_factory=list)


class MujocoEngine:
    """A MuJoCo engine serving ``num_envs`` copies of ``model`` over a transport segment.

    ``model`` is a shipped model's name (``builtin_models()``) or an MJCF path. ``image_size``
    ``(width, height)``: default 64x64 when the model has cameras, ``(0, 0)`` for none.
    ``layout``: "mshm" or "lrbc". ``peer_pids``: processes whose exit ends the engine.
    ``render_threads``: GL contexts drawing in parallel (default one per CPU, at most 2).
    ``gpu_obs`` (``0``, ``"cuda:0"``) also exports the observations over CUDA IPC.

    A step applies each env's action row as its ``ctrl`` and advances ``frame_skip`` physics
    steps; obs are ``qpos``, ``qvel`` and the mocap ``target``'s x, y; the reward is minus the
    ``tip``-target distance and a control cost. MJCF ``<custom><numeric>`` entries
    ``mosaic_frame_skip``, ``mosaic_max_episode_steps``, ``mosaic_target_range`` and
    ``mosaic_ctrl_cost`` set these constants. A telemetry frame the ring cannot take waits in
    an outbox; an image frame is rendered only once the client has read the ones before.
    """

    def __init__(
        self,
        num_envs: int,
        model: str = "reacher",
        *,
        name: str | None = None,
        layout: str = "mshm",
        image_size: tuple[int, int] | None = None,
        seed: int = 0,
        spin: float | None = None,
        timeout: float | None = None,
        peer_pids: tuple[int, ...] = (),
        render_threads: int | None = None,
        gpu_obs: int | str | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r} is unknown: use one of {', '.join(LAYOUTS)}")
        self.model_file = model_path(model)
        self.model = m = mujoco.MjModel.from_xml_path(str(self.model_file))
        self.model_name = self.model_file.stem
        self.num_envs = num_envs
        self.frame_skip = max(1, int(_numeric(m, "mosaic_frame_skip", 1)))
        self.max_episode_steps = int(_numeric(m, "mosaic_max_episode_steps", 1000))
        self.target_range = _numeric(m, "mosaic_target_range", 0.2)
        self.ctrl_cost = _numeric(m, "mosaic_ctrl_cost", 0.0)
        self._obs_dirty = True  # obs written since the last GPU upload (gpu_obs)
        target = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "target")
        self._mocap = int(m.body_mocapid[target]) if target >= 0 else -1
        self._tip = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "tip")
        self._qmask = np.zeros(m.nq, dtype=bool)  # positions that noise may move
        for j in range(m.njnt):
            if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                self._qmask[m.jnt_qposadr[j]] = True
        self.obs_size = m.nq + m.nv + (2 if self._mocap >= 0 else 0)
        limited = m.actuator_ctrllimited.astype(bool)
        lo = np.where(limited, m.actuator_ctrlrange[:, 0], -np.inf)
        hi = np.where(limited, m.actuator_ctrlrange[:, 1], np.inf)
        self.ctrl_low, self.ctrl_high = lo, hi
        if image_size is None:
            image_size = (64, 64) if m.ncam > 0 else (0, 0)
        width, height = image_size
        image = (height, width, 3) if width and height else None
        first = mujoco.MjData(m)
        mujoco.mj_forward(m, first)  # its arena in use: part of what every env needs
        _check_memory(num_envs, self.obs_size, m.nu, image, layout, first)
        self.models: list[Any] = [m] * num_envs
        self.datas = [first] + [mujoco.MjData(m) for _ in range(num_envs - 1)]
        self.rngs = [np.random.default_rng([seed, i]) for i in range(num_envs)]
        self.envs = [_EnvState() for _ in range(num_envs)]
        self._steps = np.zeros(num_envs, dtype=np.int64)  # hot-path steps since each reset
        self.transport = SharedMemoryTransport(
            num_envs,
            self.obs_size,
            m.nu,
            name=name,
            image_shape=image,
            spin=spin,
            timeout=timeout,
            peer_pids=peer_pids,
            layout=layout,
        )
        try:
            self._set_up(num_envs, image, render_threads, gpu_obs)
        except BaseException:  # the segment this engine created goes with it
            self.transport.close_gpu_obs()
            self.transport.close()
            raise

    def _set_up(
        self,
        num_envs: int,
        image: tuple[int, int, int] | None,
        render_threads: int | None,
        gpu_obs: int | str | None,
    ) -> None:
        """The rest of the set-up, once the segment exists."""
        m, lo, hi = self.model, self.ctrl_low, self.ctrl_high
        self.transport.schema = cmd.GetSchemaResponse(
            num_envs=num_envs,
            obs_size=self.obs_size,
            act_size=m.nu,
            observation_space=SpaceSpec(
                "Box",
                (self.obs_size,),
                "float32",
                [-np.inf] * self.obs_size,
                [np.inf] * self.obs_size,
            ),
            action_space=SpaceSpec("Box", (m.nu,), "float32", list(lo), list(hi)),
            image=image,
            env_id=f"mujoco/{self.model_name}",
            metadata={"render_fps": 30, "model": self.model_name},
        )
        self.mode = "lockstep"
        self.realtime = False
        self._run_start = (0.0, 0)  # (wall clock, tick) when run mode began
        self._tick = 0  # physics steps of the whole batch since the start
        self._ids = 0
        self._telemetry: dict[int, _TelemetryStream] = {}
        self._images: dict[int, _ImageStream] = {}
        self._outbox: deque[bytes] = deque()
        self._renderer: BatchRenderer | None = None
        self.render_threads = render_threads
        self._version = 0  # bumped by anything that may change what a frame shows
        self._drawn: list[tuple[Any, int] | None] = [None] * num_envs  # (camera, version)
        self._viewport = mujoco.MjvCamera()
        mujoco.mjv_defaultFreeCamera(m, self._viewport)
        self._closing = False
        self._frame = 0
        self._handlers: dict[type, Any] = {}  # request class -> its _on_ method
        self._joint_layouts: dict[tuple[str, ...], _JointLayout] = {}
        self._entities: dict[tuple[str, str], int] = {}  # (kind, name) -> index
        for i in range(num_envs):
            self._reset_env(i)
        if gpu_obs is not None:
            self.transport.export_gpu_obs(gpu_obs)
            self._sync_gpu()

    # -- description ----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The segment name."""
        return self.transport.name

    def _name(self, kind: Any, index: int, fallback: str) -> str:
        return mujoco.mj_id2name(self.model, kind, index) or f"{fallback}{index}"

    # -- physics --------------------------------------------------------------------------
    def _reset_env(self, i: int, rng: np.random.Generator | None = None) -> None:
        self._version += 1
        m, d = self.models[i], self.datas[i]
        rng = self.rngs[i] if rng is None else rng
        mujoco.mj_resetData(m, d)
        qn, vn = self.envs[i].noise
        d.qpos[self._qmask] += rng.uniform(-qn, qn, int(self._qmask.sum()))
        d.qvel[:] += rng.uniform(-vn, vn, m.nv)
        if self._mocap >= 0:
            d.mocap_pos[self._mocap, :2] = rng.uniform(-self.target_range, self.target_range, 2)
        mujoco.mj_forward(m, d)
        self._steps[i] = 0
        self._write_obs(i)
        t = self.transport
        t.rewards[i] = 0.0
        t.terminated[i] = 0
        t.truncated[i] = 0

    def _write_obs(self, i: int) -> None:
        self._obs_dirty = True
        d, m = self.datas[i], self.model
        row = self.transport.obs[i]
        row[: m.nq] = d.qpos
        row[m.nq : m.nq + m.nv] = d.qvel
        if self._mocap >= 0:
            row[m.nq + m.nv :] = d.mocap_pos[self._mocap, :2]

    def _physics(self, env_ids: list[int], control_steps: int = 1) -> None:
        """Advance ``env_ids`` by ``control_steps`` x frame_skip physics steps."""
        models, datas = self.models, self.datas
        step = mujoco.mj_step
        self._version += 1
        for n in range(1, control_steps * self.frame_skip + 1):
            for i in env_ids:
                step(models[i], datas[i])
            self._tick += 1
            if self._telemetry:
                self._telemetry_tick()
            if not n % CHECK_EVERY:
                self.transport._check()  # PeerGoneError: the client is gone, stop here
        for i in env_ids:  # positions of the new state (rewards, poses, rendering)
            mujoco.mj_kinematics(models[i], datas[i])

    def step_batch(self) -> None:
        """One hot-path step of every env (resets where the reset flag is set); the exported
        GPU observations (``gpu_obs``) are brought up to date before it returns."""
        self._step_batch()
        self._sync_gpu()

    def _sync_gpu(self) -> None:
        """Upload the CPU obs to the exported GPU buffer when they changed since the last time."""
        gpu = self.transport.gpu_obs
        if gpu is not None and self._obs_dirty:
            gpu.upload(self.transport.obs)
            self._obs_dirty = False

    def _step_batch(self) -> None:
        t = self.transport
        flags = t.resets
        resets = np.flatnonzero(flags)
        for r in resets:
            self._reset_env(int(r))
        flags[:] = 0
        if self.mode == "pause":
            t.rewards[:] = 0.0
            return
        was_reset = set(resets.tolist())
        active = [i for i in range(self.num_envs) if i not in was_reset]
        if not active:
            return
        ctrl = np.clip(t.actions[active].astype(np.float64), self.ctrl_low, self.ctrl_high)
        for k, i in enumerate(active):
            self.datas[i].ctrl[:] = ctrl[k]
        self._physics(active)
        self._observe(active, ctrl)

    def _observe(self, active: list[int], ctrl: np.ndarray) -> None:
        """Observations, rewards and truncations of ``active`` after a step (``ctrl``: theirs)."""
        self._obs_dirty = True
        t, m = self.transport, self.model
        obs, datas = t.obs, self.datas
        nq, nqv, mocap, tip = m.nq, m.nq + m.nv, self._mocap, self._tip
        tips = np.zeros((len(active), 2))
        targets = np.zeros((len(active), 2))
        for k, i in enumerate(active):  # one pass over the MjData: rows and the tip positions
            d = datas[i]
            row = obs[i]
            row[:nq] = d.qpos
            row[nq:nqv] = d.qvel
            if mocap >= 0:
                targets[k] = d.mocap_pos[mocap, :2]
                row[nqv:] = targets[k]
                if tip >= 0:
                    tips[k] = d.site_xpos[tip, :2]
        ids = np.asarray(active)
        if mocap >= 0 and tip >= 0:
            dist = np.linalg.norm(tips - targets, axis=1)
            t.rewards[ids] = -dist - self.ctrl_cost * np.einsum("ij,ij->i", ctrl, ctrl)
        else:
            t.rewards[ids] = 0.0
        self._steps[ids] += 1
        t.terminated[ids] = 0
        t.truncated[ids] = self._steps[ids] >= self.max_episode_steps

    # -- the loop ---------------------------------------------------------------------------
    def serve_forever(self) -> None:
        """Serve steps, commands and streams until the client sends ``Close``.

        Raises ``PeerGoneError`` when the client (or a watched launcher) exits.
        """
        seg = self.transport.seg
        load = seg.words.load_u64
        action_off = seg.action.seq_off
        pending = seg.c2e.pending
        served = False
        while not self._closing:
            target = self._frame + 1

            def ready(target: int = target) -> bool:
                return bool(load(action_off) >= target or pending() > 0)

            self._wait(ready, self._next_due(), after_command=served)
            served = bool(pending())
            if served:
                self._serve_commands()
            if not self._closing and load(action_off) >= target:
                self.step_batch()
                self._frame = target
                self.transport.publish_frame(target)
            self._background()

    def _wait(self, ready: Any, until: float | None, after_command: bool = False) -> None:
        """Sleep on the action line until ``ready()`` or the monotonic time ``until``
        (right after a command, spinning first as long as a command wait does)."""
        t = self.transport
        line = t.seg.action
        if until is None:
            if after_command:
                t.seg.requests.wait_until(ready, t.command_spin, None, t._check)
            else:
                line.wait_until(ready, t.spin, None, t._check)
            return
        w = t.seg.words
        while not ready():
            left = until - time.monotonic()
            if left <= 0:
                return
            w.fetch_add_u64(line.waiters_off, 1)
            try:
                w.fence()
                bell = w.load_u32(line.bell_off)
                if ready():
                    return
                w.futex_wait(line.bell_off, bell, min(left, SLICE))
            finally:
                w.fetch_add_u64(line.waiters_off, (1 << 64) - 1)
            t._check()

    def _next_due(self) -> float | None:
        due: list[float] = []
        # A due frame waits while the client has not read the last ones: then look again in a
        # millisecond (an overdue stream's time would make a busy loop).
        unread = bool(self._images) and self.transport.seg.e2c.pending() > 0
        if self._outbox or unread:
            due.append(time.monotonic() + 0.001)
        else:
            due.extend(s.next_due for s in self._images.values())
        if self.mode == "run":
            due.append(self._run_due())
        return min(due) if due else None

    def _run_due(self) -> float:
        """When run mode's next control step is due (now, when not paced to real time)."""
        if not self.realtime:
            return time.monotonic()
        wall, tick = self._run_start
        control_dt = float(self.model.opt.timestep) * self.frame_skip
        return wall + ((self._tick - tick) // self.frame_skip + 1) * control_dt

    def _background(self) -> None:
        if self.mode == "run" and (not self.realtime or time.monotonic() >= self._run_due()):
            self._physics(list(range(self.num_envs)))
        self._flush()
        if self._images:
            self._image_ticks()

    # -- commands ---------------------------------------------------------------------------
    def _serve_commands(self) -> None:
        t = self.transport
        while True:
            try:
                data = t.seg.c2e.try_read()
            except MessageTooLargeError as exc:  # dropped: its sender gets the error
                cid, method = cmd.envelope_ids(exc.head)
                t.send_error(ValueError(f"{exc}: send less per command"), cid, method)
                continue
            if data is None:
                return
            try:
                request = cmd.decode(data)
            except cmd.CommandError as exc:
                cid, method = cmd.envelope_ids(data)
                t.send(None, cid, error=str(exc), method=method)
                continue
            method = int(getattr(cmd.fb.Method, request.method, 0))
            try:
                if request.message is None:
                    raise cmd.CommandError(
                        f"method {request.method} came without a request payload: this engine "
                        "serves the requests of schema/shm_commands.fbs"
                    )
                response = self.answer(request.message)
            except PeerGoneError:  # a long command saw its client go: no one to answer
                raise
            except Exception as exc:  # the error goes back to the caller; the engine lives on
                t.send_error(exc, request.correlation_id, method)
                continue
            t.send(response, request.correlation_id, method=method)
            if isinstance(request.message, cmd.CloseRequest):
                self._closing = True

    def answer(self, m: Any) -> Any:
        """The response to request ``m`` (raises on a bad request)."""
        self._version += 1  # a command may move, reset, recolour or redraw any env
        handler = self._handlers.get(type(m))
        if handler is None:
            handler = getattr(self, f"_on_{type(m).__name__}", None)
            if handler is not None:
                self._handlers[type(m)] = handler
        if handler is None:
            raise NotImplementedError(
                f"the MuJoCo engine does not serve {type(m).__name__}; it serves GetSchema, "
                "Reset, Ping, Close and the engine services"
            )
        response = handler(m)
        self._sync_gpu()  # a reset rewrites observations
        return response

    def _env_ids(self, ids: list[int]) -> list[int]:
        if not ids:
            return list(range(self.num_envs))
        bad = [i for i in ids if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"env ids {bad} outside 0..{self.num_envs - 1}")
        return list(ids)

    def _env(self, i: int) -> int:
        if 0 <= i < self.num_envs:
            return i
        return self._env_ids([i])[0]  # raises, naming the valid ids

    # generic transport commands
    def _on_PingRequest(self, m: cmd.PingRequest) -> cmd.PingResponse:
        return cmd.PingResponse(nonce=m.nonce, frame_seq=self._frame)

    def _on_GetSchemaRequest(self, m: cmd.GetSchemaRequest) -> cmd.GetSchemaResponse:
        assert self.transport.schema is not None
        return self.transport.schema

    def _on_CloseRequest(self, m: cmd.CloseRequest) -> cmd.CloseResponse:
        return cmd.CloseResponse()

    def _on_ResetRequest(self, m: cmd.ResetRequest) -> cmd.ResetResponse:
        contract = (m.options or {}).get("contract")
        if contract is not None:  # the seed's reset(env_ids, contract): the Agent service's
            answer = self._on_AgentResetRequest(
                sv.AgentResetRequest(list(m.env_ids), _contract(contract))
            )
            return cmd.ResetResponse(env_ids=answer.env_ids, infos=[{} for _ in answer.env_ids])
        ids = self._env_ids(m.env_ids)
        seeds = m.seeds or [None] * len(ids)
        for i, seed in zip(ids, seeds, strict=True):
            if seed is not None:
                self.rngs[i] = np.random.default_rng(seed)
            self._reset_env(i)
        return cmd.ResetResponse(env_ids=ids, infos=[{} for _ in ids])

    # Agent
    def _on_AgentSchemaRequest(self, m: sv.AgentSchemaRequest) -> sv.AgentSchemaResponse:
        model = self.model
        obs: list[str] = []
        for prefix, dims, adr_of in (
            ("qpos", model.nq, model.jnt_qposadr),
            ("qvel", model.nv, model.jnt_dofadr),
        ):
            names = [""] * dims
            for j in range(model.njnt):
                jname = self._name(mujoco.mjtObj.mjOBJ_JOINT, j, "joint")
                end = adr_of[j + 1] if j + 1 < model.njnt else dims
                for k in range(adr_of[j], end):
                    names[k] = f"{prefix}:{jname}[{k - adr_of[j]}]"
            obs += names
        if self._mocap >= 0:
            obs += ["target:x", "target:y"]
        return sv.AgentSchemaResponse(
            num_envs=self.num_envs,
            model_name=self.model_name,
            obs_names=obs,
            act_names=[
                self._name(mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator") for a in range(model.nu)
            ],
            act_low=[float(x) for x in self.ctrl_low],
            act_high=[float(x) for x in self.ctrl_high],
            timestep=float(model.opt.timestep),
            frame_skip=self.frame_skip,
            max_episode_steps=self.max_episode_steps,
        )

    def _on_AgentResetRequest(self, m: sv.AgentResetRequest) -> sv.AgentResetResponse:
        ids = self._env_ids(m.env_ids)
        c = m.contract
        if c is not None and not c.restore_defaults:
            _check_contract(c)  # before any env is reset: a refused contract changes nothing
        for i in ids:
            rng_state = self.rngs[i]
            if c is not None and c.restore_defaults:
                self.models[i] = self.model  # the shared model again
                self.envs[i].noise = _EnvState().noise
                if c.seed >= 0:
                    rng_state = np.random.default_rng([c.seed, i, 0])
            elif c is not None:
                if c.seed >= 0:  # one stream for the state, another for the parameters
                    rng_state = np.random.default_rng([c.seed, i, 0])
                    rng_params = np.random.default_rng([c.seed, i, 1])
                else:
                    rng_params = self.rngs[i]
                self._randomise(i, c, rng_params)
            self._reset_env(i, rng_state)
        return sv.AgentResetResponse(
            env_ids=ids,
            body_mass=[float(self.models[i].body_mass.sum()) for i in ids],
            gravity_z=[float(self.models[i].opt.gravity[2]) for i in ids],
        )

    def _randomise(self, i: int, c: sv.SimulationContract, rng: np.random.Generator) -> None:
        base = self.model
        if self.models[i] is base:
            self.models[i] = copy.copy(base)  # this env's own parameters from now on
        own = self.models[i]
        mass = rng.uniform(c.mass_scale_low, c.mass_scale_high)
        friction = rng.uniform(c.friction_scale_low, c.friction_scale_high)
        gain = rng.uniform(c.gain_scale_low, c.gain_scale_high)
        own.body_mass[:] = base.body_mass * mass
        own.body_inertia[:] = base.body_inertia * mass
        own.geom_friction[:] = base.geom_friction * friction
        own.actuator_gainprm[:, 0] = base.actuator_gainprm[:, 0] * gain
        affine = base.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE
        own.actuator_biasprm[affine, 1:3] = base.actuator_biasprm[affine, 1:3] * gain
        own.opt.gravity[:] = c.gravity if c.gravity else base.opt.gravity
        self.envs[i].noise = (c.qpos_noise, c.qvel_noise)

    # MuJoCo
    def _joint(self, name: str) -> int:
        j = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            raise KeyError(f"no joint named {name!r} (model {self.model_name})")
        return int(j)

    def _joint_layout(self, names: tuple[str, ...]) -> _JointLayout:
        """Names, sizes and qpos/qvel addresses of the joints ``names`` (() = every joint),
        looked up once per set of names."""
        layout = self._joint_layouts.get(names)
        if layout is not None:
            return layout
        model = self.model
        ids = [self._joint(n) for n in names] if names else list(range(model.njnt))
        dims = {0: (7, 6), 1: (4, 3), 2: (1, 1), 3: (1, 1)}  # free, ball, slide, hinge
        layout = _JointLayout([], [], [], [], [])
        for j in ids:
            dq, dv = dims[int(model.jnt_type[j])]
            qa, va = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
            layout.names.append(self._name(mujoco.mjtObj.mjOBJ_JOINT, j, "joint"))
            layout.qpos_dims.append(dq)
            layout.qvel_dims.append(dv)
            layout.qpos_at.extend(range(qa, qa + dq))
            layout.qvel_at.extend(range(va, va + dv))
        if len(self._joint_layouts) >= 256:  # clients asking for ever new sets: keep it small
            self._joint_layouts.clear()
        self._joint_layouts[names] = layout
        return layout

    def _on_JointStateRequest(self, m: sv.JointStateRequest) -> sv.JointStateResponse:
        d = self.datas[self._env(m.env_id)]
        j = self._joint_layout(tuple(m.names))
        qpos, qvel = d.qpos, d.qvel
        return sv.JointStateResponse(
            list(j.names),
            list(j.qpos_dims),
            list(j.qvel_dims),
            [float(qpos[k]) for k in j.qpos_at],
            [float(qvel[k]) for k in j.qvel_at],
            float(d.time),
        )

    def _on_SendControlRequest(self, m: sv.SendControlRequest) -> sv.SendControlResponse:
        ids = self._env_ids(m.env_ids)
        nu = self.model.nu
        if len(m.ctrl) != len(ids) * nu:
            raise ValueError(
                f"control: {len(m.ctrl)} values for {len(ids)} envs x {nu} actuators "
                f"(give {len(ids) * nu})"
            )
        _check_steps("control", m.steps)
        ctrl = np.clip(np.asarray(m.ctrl).reshape(len(ids), nu), self.ctrl_low, self.ctrl_high)
        done = 0
        for k, i in enumerate(ids):
            model, data = self.models[i], self.datas[i]
            data.ctrl[:] = ctrl[k]
            for _ in range(m.steps):
                mujoco.mj_step(model, data)
                done += 1
                if not done % CHECK_EVERY:
                    self.transport._check()  # PeerGoneError: the client is gone, stop here
            mujoco.mj_kinematics(model, data)
        return sv.SendControlResponse(env_ids=ids, time=[float(self.datas[i].time) for i in ids])

    def _names(self, kind: Any, count: int, fallback: str) -> list[str]:
        return [self._name(kind, k, fallback) for k in range(count)]

    def _on_MujocoInfoRequest(self, m: sv.MujocoInfoRequest) -> sv.MujocoInfoResponse:
        model, obj = self.model, mujoco.mjtObj
        return sv.MujocoInfoResponse(
            version=mujoco.__version__,
            nq=model.nq,
            nv=model.nv,
            nu=model.nu,
            nbody=model.nbody,
            njnt=model.njnt,
            ngeom=model.ngeom,
            ncam=model.ncam,
            timestep=float(model.opt.timestep),
            joint_names=self._names(obj.mjOBJ_JOINT, model.njnt, "joint"),
            actuator_names=self._names(obj.mjOBJ_ACTUATOR, model.nu, "actuator"),
            body_names=self._names(obj.mjOBJ_BODY, model.nbody, "body"),
            camera_names=self._names(obj.mjOBJ_CAMERA, model.ncam, "camera"),
        )

    # Telemetry
    def _telemetry_sizes(self) -> dict[str, int]:
        model = self.model
        return {
            "sim_time": 1,
            "contact_count": 1,
            "contact_force": 1,
            "body_linvel": 3 * model.nbody,
            "body_angvel": 3 * model.nbody,
            "qpos": model.nq,
            "qvel": model.nv,
            "ctrl": model.nu,
        }

    def _on_TelemetrySchemaRequest(
        self, m: sv.TelemetrySchemaRequest
    ) -> sv.TelemetrySchemaResponse:
        sizes = self._telemetry_sizes()
        return sv.TelemetrySchemaResponse(
            names=[n for n, _ in TELEMETRY],
            sizes=[sizes[n] for n, _ in TELEMETRY],
            descriptions=[text for _, text in TELEMETRY],
        )

    def _on_TelemetryStreamRequest(self, m: sv.TelemetryStreamRequest) -> sv.StreamResponse:
        ids = self._env_ids(m.env_ids)
        sizes = self._telemetry_sizes()
        names = list(m.names) or [n for n, _ in TELEMETRY]
        unknown = [n for n in names if n not in sizes]
        if unknown:
            raise KeyError(f"unknown telemetry quantities {unknown}; known: {list(sizes)}")
        if m.rate_hz < 0:
            raise ValueError(f"rate_hz must be >= 0 (0 = every physics step), got {m.rate_hz}")
        dt = float(self.model.opt.timestep)
        every = 1 if m.rate_hz == 0 else max(1, round(1.0 / (m.rate_hz * dt)))
        self._ids += 1
        self._telemetry[self._ids] = _TelemetryStream(
            self._ids, ids, names, every, m.max_frames, self._tick + every
        )
        return sv.StreamResponse(self._ids, names, [sizes[n] for n in names])

    def _quantity(self, i: int, name: str) -> np.ndarray:
        m, d = self.models[i], self.datas[i]
        if name == "sim_time":
            return np.array([d.time])
        if name == "contact_count":
            return np.array([d.ncon], dtype=float)
        if name == "contact_force":
            total, force = 0.0, np.zeros(6)
            for c in range(d.ncon):
                mujoco.mj_contactForce(m, d, c, force)
                total += force[0]
            return np.array([total])
        if name in ("body_linvel", "body_angvel"):
            out, vel = np.zeros((m.nbody, 3)), np.zeros(6)
            for b in range(m.nbody):
                mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b, vel, 0)
                out[b] = vel[3:] if name == "body_linvel" else vel[:3]
            return out.ravel()
        return np.asarray(getattr(d, name), dtype=float).ravel()

    def _telemetry_tick(self) -> None:
        for s in list(self._telemetry.values()):
            if self._tick < s.next_tick:
                continue
            s.next_tick += s.every
            values = np.concatenate(
                [self._quantity(i, n) for i in s.env_ids for n in s.names]
            ).tolist()
            frame = sv.TelemetryFrame(
                stream_id=s.stream_id,
                seq=s.sent,
                sim_time=float(self.datas[s.env_ids[0]].time),
                frame_seq=self._frame,
                env_ids=s.env_ids,
                values=values,
            )
            self._push(cmd.encode(frame, s.stream_id))
            s.sent += 1
            if s.max_frames and s.sent >= s.max_frames:
                del self._telemetry[s.stream_id]
            elif len(self._outbox) > OUTBOX_LIMIT:
                del self._telemetry[s.stream_id]
                self._outbox.append(
                    cmd.encode(
                        None,
                        s.stream_id,
                        method=int(cmd.fb.Method.TelemetryFrame),
                        error=f"telemetry stream {s.stream_id} stopped: the client read none of "
                        f"its last {OUTBOX_LIMIT} frames",
                    )
                )

    def _push(self, data: bytes) -> None:
        """Send a pushed frame now if the ring has room, else keep it (in order) for later."""
        if not self._outbox and self.transport.seg.e2c.try_write(data):
            self.transport.seg.frame.ring()
            return
        self._outbox.append(data)

    def _flush(self) -> None:
        ring = self.transport.seg.e2c
        sent = False
        while self._outbox and ring.try_write(self._outbox[0]):
            self._outbox.popleft()
            sent = True
        if sent:
            self.transport.seg.frame.ring()

    def _on_StreamStopRequest(self, m: sv.StreamStopRequest) -> sv.StreamStopResponse:
        stream = self._telemetry.pop(m.stream_id, None) or self._images.pop(m.stream_id, None)
        return sv.StreamStopResponse(m.stream_id, stream.sent if stream else 0)

    # Scene
    def _on_SceneInfoRequest(self, m: sv.SceneInfoRequest) -> sv.SceneInfoResponse:
        return sv.SceneInfoResponse(
            model_name=self.model_name,
            num_envs=self.num_envs,
            timestep=float(self.model.opt.timestep),
            mode=self.mode,
            realtime=self.realtime,
            sim_time=[float(d.time) for d in self.datas],
            nbody=self.model.nbody,
            ngeom=self.model.ngeom,
            ncam=self.model.ncam,
        )

    def _on_ListEntitiesRequest(self, m: sv.ListEntitiesRequest) -> sv.ListEntitiesResponse:
        if m.kind not in ("", "body", "geom"):
            raise ValueError(f"entity kind {m.kind!r}: use 'body', 'geom' or '' for both")
        model, obj = self.model, mujoco.mjtObj
        out: list[sv.Entity] = []
        if m.kind in ("", "body"):
            for b in range(model.nbody):
                parent = self._name(obj.mjOBJ_BODY, int(model.body_parentid[b]), "body")
                out.append(sv.Entity(b, "body", self._name(obj.mjOBJ_BODY, b, "body"), parent))
        if m.kind in ("", "geom"):
            for g in range(model.ngeom):
                body = self._name(obj.mjOBJ_BODY, int(model.geom_bodyid[g]), "body")
                out.append(sv.Entity(g, "geom", self._name(obj.mjOBJ_GEOM, g, "geom"), body))
        return sv.ListEntitiesResponse(out)

    def _entity(self, kind: str, name: str) -> int:
        index = self._entities.get((kind, name))
        if index is not None:
            return index
        kinds = {"body": mujoco.mjtObj.mjOBJ_BODY, "geom": mujoco.mjtObj.mjOBJ_GEOM}
        if kind not in kinds:
            raise ValueError(f"entity kind {kind!r}: use 'body' or 'geom'")
        index = mujoco.mj_name2id(self.model, kinds[kind], name)
        if index < 0:
            raise KeyError(f"no {kind} named {name!r} (list them with scene.entities())")
        if len(self._entities) < 4096:  # names of the model only, so this stays small
            self._entities[(kind, name)] = int(index)
        return int(index)

    def _pose(self, env: int, kind: str, name: str) -> sv.EntityPose:
        d = self.datas[env]
        index = self._entity(kind, name)
        if kind == "body":
            pos, quat = d.xpos[index], d.xquat[index]
        else:
            pos, quat = d.geom_xpos[index], np.zeros(4)
            mujoco.mju_mat2Quat(quat, d.geom_xmat[index])
        return sv.EntityPose(env, kind, name, tuple(map(float, pos)), tuple(map(float, quat)))  # type: ignore[arg-type]

    def _on_GetEntityPoseRequest(self, m: sv.GetEntityPoseRequest) -> sv.EntityPose:
        return self._pose(self._env(m.env_id), m.kind, m.name)

    def _on_SetEntityPoseRequest(self, m: sv.SetEntityPoseRequest) -> sv.SetEntityPoseResponse:
        p = m.pose
        env = self._env(p.env_id)
        if p.kind != "body":
            raise ValueError("only bodies can be moved (kind 'body'); a geom moves with its body")
        b = self._entity("body", p.name)
        model, d = self.models[env], self.datas[env]
        quat = np.asarray(p.quat, dtype=float)
        quat /= np.linalg.norm(quat) or 1.0
        jnt = int(model.body_jntadr[b])
        if model.body_mocapid[b] >= 0:
            d.mocap_pos[model.body_mocapid[b]] = p.pos
            d.mocap_quat[model.body_mocapid[b]] = quat
        elif jnt >= 0 and model.jnt_type[jnt] == mujoco.mjtJoint.mjJNT_FREE:
            adr = model.jnt_qposadr[jnt]
            d.qpos[adr : adr + 3] = p.pos
            d.qpos[adr + 3 : adr + 7] = quat
            d.qvel[model.jnt_dofadr[jnt] : model.jnt_dofadr[jnt] + 6] = 0.0
        else:
            raise ValueError(
                f"body {p.name!r} has neither a free joint nor mocap: its pose follows its "
                "joints (set those with mujoco.control or a reset)"
            )
        mujoco.mj_forward(model, d)
        return sv.SetEntityPoseResponse(self._pose(env, "body", p.name))

    def _on_SetSimModeRequest(self, m: sv.SetSimModeRequest) -> sv.SetSimModeResponse:
        if m.mode == "step":
            _check_steps("scene step mode", m.steps)
            self._physics(list(range(self.num_envs)), max(1, m.steps))
            self.mode = "pause"
        else:
            self.mode = m.mode
        self.realtime = m.realtime
        self._run_start = (time.monotonic(), self._tick)
        return sv.SetSimModeResponse(self.mode, self.realtime, float(self.datas[0].time))

    # Camera, viewport
    def _image_shape(self) -> tuple[int, int, int]:
        shape = self.transport.layout.image_shape
        if shape is None:
            raise ValueError(
                "this engine has no image region: start it with an image size "
                "(mosaic engine mujoco --image 64x64)"
            )
        return shape

    def _on_ListCamerasRequest(self, m: sv.ListCamerasRequest) -> sv.ListCamerasResponse:
        model = self.model
        height, width, channels = self.transport.layout.image_shape or (0, 0, 0)
        cams = [
            sv.CameraInfo(c, self._name(mujoco.mjtObj.mjOBJ_CAMERA, c, "camera"), model.cam_fovy[c])
            for c in range(model.ncam)
        ]
        return sv.ListCamerasResponse(cams, width, height, channels)

    def _start_images(self, camera: str, ids: list[int], rate: float, max_frames: int) -> int:
        self._image_shape()
        if camera and mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
            names = self._names(mujoco.mjtObj.mjOBJ_CAMERA, self.model.ncam, "camera")
            raise KeyError(f"no camera named {camera!r}; the model has {names}")
        if rate <= 0:
            raise ValueError(f"rate_hz must be > 0 frames per second, got {rate}")
        self._make_renderer()  # a missing GL is the request's error, not the engine's end
        self._ids += 1
        self._images[self._ids] = _ImageStream(
            self._ids, camera, ids, 1.0 / rate, max_frames, time.monotonic()
        )
        return self._ids

    def _on_CameraStreamRequest(self, m: sv.CameraStreamRequest) -> sv.StreamResponse:
        sid = self._start_images(m.camera, self._env_ids(m.env_ids), m.rate_hz, m.max_frames)
        return sv.StreamResponse(sid, [m.camera], list(self._image_shape()))

    def _on_ViewportInfoRequest(self, m: sv.ViewportInfoRequest) -> sv.ViewportInfoResponse:
        height, width, _ = self.transport.layout.image_shape or (0, 0, 0)
        v = self._viewport
        return sv.ViewportInfoResponse(
            width,
            height,
            tuple(map(float, v.lookat)),  # type: ignore[arg-type]
            float(v.distance),
            float(v.azimuth),
            float(v.elevation),
        )

    def _on_ViewportStreamRequest(self, m: sv.ViewportStreamRequest) -> sv.StreamResponse:
        env = self._env(m.env_id)
        if m.distance > 0:
            self._viewport.lookat[:] = m.lookat
            self._viewport.distance = m.distance
            self._viewport.azimuth = m.azimuth
            self._viewport.elevation = m.elevation
        sid = self._start_images("", [env], m.rate_hz, m.max_frames)
        return sv.StreamResponse(sid, ["viewport"], list(self._image_shape()))

    def render_batch(self, env_ids: list[int], camera: str | Any, out: np.ndarray) -> None:
        """Render ``env_ids`` from ``camera`` (a name, "" for the free camera, or an
        ``MjvCamera``) with their debug shapes into ``out[i]`` for each env ``i``."""
        debug = [e.debug for e in self.envs]
        self._make_renderer().render(self.models, self.datas, env_ids, camera, out, debug)

    def _make_renderer(self) -> BatchRenderer:
        if self._renderer is None:
            height, width, _ = self._image_shape()
            if engines.GL_UNAVAILABLE is not None:
                raise RuntimeError(f"cannot render offscreen: {engines.GL_UNAVAILABLE}")
            try:
                self._renderer = BatchRenderer(self.model, width, height, self.render_threads)
            except Exception as exc:
                raise RuntimeError(
                    f"cannot render offscreen with MUJOCO_GL={os.environ.get('MUJOCO_GL')} "
                    f"({type(exc).__name__}: {exc}); install EGL (libegl1, libgl1-mesa-dri) or "
                    "set MUJOCO_GL=osmesa with libosmesa6"
                ) from exc
        return self._renderer

    def _image_ticks(self) -> None:
        now = time.monotonic()
        ring = self.transport.seg.e2c
        for s in list(self._images.values()):
            if now < s.next_due or ring.pending() or self._outbox:
                continue  # not yet, or the client still reads the frames sent before
            image = self.transport.image
            assert image is not None
            key = s.camera or (
                "viewport",
                *self._viewport.lookat,
                self._viewport.distance,
                self._viewport.azimuth,
                self._viewport.elevation,
            )
            stale = [i for i in s.env_ids if self._drawn[i] != (key, self._version)]
            try:
                if stale:
                    for i in stale:
                        self._drawn[i] = None  # half drawn if the batch fails
                    self.render_batch(stale, s.camera or self._viewport, image)
                    for i in stale:
                        self._drawn[i] = (key, self._version)
            except Exception as exc:  # the stream ends with its error; the engine lives on
                del self._images[s.stream_id]
                self._push(
                    cmd.encode(
                        None,
                        s.stream_id,
                        method=int(cmd.fb.Method.ImageFrame),
                        error=f"image stream {s.stream_id} stopped: {type(exc).__name__}: {exc}",
                    )
                )
                continue
            height, width, channels = self._image_shape()
            frame = sv.ImageFrame(
                s.stream_id,
                s.sent,
                s.camera or "viewport",
                s.env_ids,
                width,
                height,
                channels,
                float(self.datas[s.env_ids[0]].time),
                self._frame,
            )
            self._push(cmd.encode(frame, s.stream_id))
            s.sent += 1
            s.next_due = max(s.next_due + s.period, now)
            if s.max_frames and s.sent >= s.max_frames:
                del self._images[s.stream_id]

    # Debug
    def _on_DebugDrawRequest(self, m: sv.DebugDrawRequest) -> sv.DebugDrawResponse:
        for shape in m.shapes:
            if len(shape.rgba) != 4:
                raise ValueError(f"debug shape rgba needs 4 values, got {len(shape.rgba)}")
        ids = self._env_ids(m.env_ids)
        for i in ids:
            if m.clear:
                self.envs[i].debug = []
            self.envs[i].debug.extend(m.shapes)
        return sv.DebugDrawResponse(max(len(self.envs[i].debug) for i in ids))

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the transport (unlinks the segment) and the renderer."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self.transport.close_gpu_obs()
        self.transport.close()

    def __enter__(self) -> MujocoEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _size(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def machine_memory() -> int | None:
    """Bytes of physical memory of this machine (None where the system does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def shm_free() -> int | None:
    """Bytes free in /dev/shm, where segments live (None where there is none)."""
    try:
        fs = os.statvfs("/dev/shm")
    except (AttributeError, OSError):
        return None
    return int(fs.f_bavail) * int(fs.f_frsize)


def _check_memory(
    num_envs: int,
    obs_size: int,
    act_size: int,
    image: tuple[int, int, int] | None,
    layout: str,
    data: Any,
) -> None:
    """``ValueError`` saying the size when the engine cannot fit this machine: the segment (its
    image region above all) and ``num_envs`` MjData like ``data`` (its buffer and the arena it
    uses), a lower bound, against the physical memory and the room in /dev/shm."""
    segment = Layout.compute(
        num_envs, obs_size, act_size, image_shape=image, kind=layout
    ).total_size
    pixels = num_envs * math.prod(image) if image else 0
    physics = num_envs * (int(data.nbuffer) + int(data.maxuse_arena))
    what = f"{num_envs} envs" + (f" with {image[1]}x{image[0]} images" if image else "")
    hint = (
        "ask for a smaller image (--image WxH, or none)"
        if 2 * pixels >= segment + physics
        else "ask for fewer envs (--envs)"
    )
    need = (
        f"{what} need at least {_size(segment + physics)} of memory (the shared segment "
        f"{_size(segment)}"
        + (f", its image region {_size(pixels)}" if pixels else "")
        + f"; MuJoCo's data {_size(physics)})"
    )
    memory = machine_memory()
    if memory is not None and segment + physics > memory:
        raise ValueError(f"{need}, more than this machine's {_size(memory)}: {hint}")
    free = shm_free()
    if free is not None and segment > free:
        raise ValueError(
            f"{need}: the shared segment does not fit the {_size(free)} of shared memory free in "
            f"/dev/shm: {hint}"
        )


def _check_contract(c: sv.SimulationContract) -> None:
    """``ValueError`` naming the first value of ``c`` the engine cannot simulate."""
    for f in dataclasses.fields(c):
        value = getattr(c, f.name)
        values = value if isinstance(value, list) else [value]
        if f.name != "seed" and not all(math.isfinite(v) for v in values):
            raise ValueError(
                f"contract {f.name}: {value} holds a value that is not a finite number"
            )
    for label, low, high in (
        ("mass_scale", c.mass_scale_low, c.mass_scale_high),
        ("friction_scale", c.friction_scale_low, c.friction_scale_high),
        ("gain_scale", c.gain_scale_low, c.gain_scale_high),
    ):
        if not 0 < low <= high:
            raise ValueError(f"contract {label}: need 0 < low <= high, got [{low}, {high}]")
    if c.gravity and len(c.gravity) != 3:
        raise ValueError(f"contract gravity needs 3 values (x, y, z), got {len(c.gravity)}")
    if c.qpos_noise < 0 or c.qvel_noise < 0:
        raise ValueError("contract qpos_noise and qvel_noise must be >= 0")


def _check_steps(what: str, steps: int) -> None:
    if steps > MAX_COMMAND_STEPS:
        raise ValueError(
            f"{what}: {steps} steps in one command; a command advances at most "
            f"{MAX_COMMAND_STEPS} (MAX_COMMAND_STEPS): send several commands"
        )


def _contract(fields: Any) -> sv.SimulationContract:
    """A ``SimulationContract`` from the JSON dict a seed-shaped client sends (``LuckyClient``'s
    ``reset(env_ids, contract)``); unknown keys are refused with the known ones."""
    if not isinstance(fields, dict):
        raise ValueError(f"contract must be an object of SimulationContract fields, got {fields!r}")
    known = {f.name for f in dataclasses.fields(sv.SimulationContract)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"contract: unknown keys {unknown}; known: {', '.join(sorted(known))}")
    return sv.SimulationContract(**fields)
