"""``BatchRenderer``: the frames of many envs per call, with the pixels of ``mujoco.Renderer``.

    renderer = BatchRenderer(model, width=64, height=64, threads=2)
    renderer.render(models, datas, env_ids, "overhead", out=image, debug=shapes_per_env)
    job = renderer.submit(models, snapshots, env_ids, "overhead", out=image)  # returns at once
    job.wait()
    renderer.close()

Each env is drawn as ``mujoco.Renderer`` draws it, so the pixels are the same bytes.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import numpy as np

from mosaic_sdk.shm import engines
from mosaic_sdk.shm import services as sv
from mosaic_sdk.shm.processes import cpus

mujoco = engines.load_mujoco()  # an optional dependency (the `mujoco` extra), offscreen GL

MAX_GEOM = 10_000  # scene capacity, as mujoco.Renderer's


def camera_for(model: Any, camera: str | Any) -> Any:
    """An ``MjvCamera`` for ``camera``: a camera name ("" for the free camera) or an
    ``MjvCamera`` (returned as is), set up as ``mujoco.Renderer.update_scene`` sets it up."""
    if isinstance(camera, mujoco.MjvCamera):
        return camera
    cam = mujoco.MjvCamera()
    if camera in ("", None, -1):
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.fixedcamid = -1
        mujoco.mjv_defaultFreeCamera(model, cam)
        return cam
    index = camera if isinstance(camera, int) else -1
    if isinstance(camera, str):
        index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
    if not 0 <= index < model.ncam:
        raise ValueError(f"camera {camera!r} does not exist (the model has {model.ncam} cameras)")
    cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
    cam.fixedcamid = index
    return cam


def draw_debug(scene: Any, shapes: list[sv.DebugShape]) -> None:
    """Append ``shapes`` to a ``MjvScene`` as MuJoCo geoms (lines, spheres, labels)."""
    eye = np.eye(3).ravel()
    for shape in shapes:
        if scene.ngeom >= scene.maxgeom:
            return
        g = scene.geoms[scene.ngeom]
        rgba = np.asarray(shape.rgba, dtype=np.float32)
        pos = np.asarray(shape.pos, dtype=np.float64)
        if shape.kind == "line":
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LINE, np.zeros(3), pos, eye, rgba)
            mujoco.mjv_connector(
                g, mujoco.mjtGeom.mjGEOM_LINE, shape.size, pos, np.asarray(shape.end, float)
            )
        elif shape.kind == "sphere":
            size = np.array([shape.size, shape.size, shape.size])
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_SPHERE, size, pos, eye, rgba)
        else:
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LABEL, np.zeros(3), pos, eye, rgba)
            g.label = shape.text
        scene.ngeom += 1


class Drawer:
    """One GL context and its MuJoCo objects; used only by the thread that made it."""

    def __init__(self, model: Any, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.gl: Any = None
        self.con: Any = None
        try:
            # imported when a renderer is made: under the physics-only fallback
            # (MUJOCO_GL=glfw, no offscreen GL here) importing it would need glfw itself
            from mujoco import gl_context

            if gl_context.GLContext is not None:
                self.gl = gl_context.GLContext(width, height)
                self.gl.make_current()
            self.con = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.con)
            if self.con.offWidth < width or self.con.offHeight < height:
                mujoco.mjr_resizeOffscreen(
                    max(width, self.con.offWidth), max(height, self.con.offHeight), self.con
                )
                mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.con)
        except BaseException:
            self.close()
            raise
        self.scene = mujoco.MjvScene(model, MAX_GEOM)
        self.option = mujoco.MjvOption()
        self.rect = mujoco.MjrRect(0, 0, width, height)
        self.rows = np.empty((height, width, 3), dtype=np.uint8)

    def draw(
        self,
        models: list[Any],
        datas: list[Any],
        env_ids: list[int],
        camera: Any,
        out: np.ndarray,
        debug: list[list[sv.DebugShape]] | None,
    ) -> None:
        scene, option, con, rect, rows = self.scene, self.option, self.con, self.rect, self.rows
        update, render, read = mujoco.mjv_updateScene, mujoco.mjr_render, mujoco.mjr_readPixels
        cat = mujoco.mjtCatBit.mjCAT_ALL
        for i in env_ids:
            m, d = models[i], datas[i]
            mujoco.mj_kinematics(m, d)  # poses of the current qpos, as a step leaves them
            mujoco.mj_camlight(m, d)
            update(m, d, option, None, camera, cat, scene)
            if debug is not None and debug[i]:
                draw_debug(scene, debug[i])
            render(rect, scene, con)
            read(rows, None, rect, con)
            out[i] = rows[::-1]  # GL's first row is the bottom one

    def close(self) -> None:
        if self.con is not None:
            self.con.free()
            self.con = None
        if self.gl is not None:
            self.gl.free()
            self.gl = None


class RenderJob:
    """A batch handed to the render threads: ``done()`` says whether it is drawn, ``wait()``
    blocks until it is and raises the first error a thread met."""

    def __init__(self, parts: int) -> None:
        self._left = parts
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._event = threading.Event()
        if parts == 0:
            self._event.set()

    def _finish(self, error: BaseException | None) -> None:
        with self._lock:
            if error is not None:
                self._errors.append(error)
            self._left -= 1
            if self._left == 0:
                self._event.set()

    def done(self) -> bool:
        return self._event.is_set()

    def wait(self) -> None:
        self._event.wait()
        if self._errors:
            raise self._errors[0]


class _Worker(threading.Thread):
    """A thread that owns a ``Drawer`` and draws the parts of jobs it is handed, in order."""

    def __init__(self, model: Any, width: int, height: int) -> None:
        super().__init__(name="mosaic-render", daemon=True)
        self.jobs: queue.SimpleQueue[tuple[RenderJob, tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._ready: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self._args = (model, width, height)
        self.start()
        error = self._ready.get()  # the context is made (or failed) in this thread
        if error is not None:
            self.join()
            raise error

    def run(self) -> None:
        try:
            drawer = Drawer(*self._args)
        except BaseException as exc:
            self._ready.put(exc)
            return
        self._ready.put(None)
        try:
            while (item := self.jobs.get()) is not None:
                job, args = item
                try:
                    drawer.draw(*args)
                except BaseException as exc:  # handed to the caller, the worker lives on
                    job._finish(exc)
                else:
                    job._finish(None)
        finally:
            drawer.close()


class BatchRenderer:
    """Render many envs' frames per call, each equal to ``mujoco.Renderer``'s for its state.

    ``model`` provides the meshes, textures and fonts (an env's own ``MjModel`` copy may differ
    in physics but must share them). ``threads`` render threads, each with its own GL context,
    draw a batch in parallel (default: one per CPU, at most 2). ``render`` returns once the
    batch is drawn; ``submit`` returns at once. Envs are drawn one at a time, not as tiles of
    one large viewport: llvmpipe's colours depend on a triangle's absolute position.
    """

    def __init__(self, model: Any, width: int, height: int, threads: int | None = None) -> None:
        if width < 1 or height < 1:
            raise ValueError(f"image size must be positive, got {width}x{height}")
        if engines.GL_UNAVAILABLE is not None:
            raise RuntimeError(f"cannot render offscreen: {engines.GL_UNAVAILABLE}")
        if threads is None:
            threads = max(1, min(2, cpus()))  # one per CPU this process may use, at most 2
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.model, self.width, self.height = model, width, height
        self._workers: list[_Worker] = []
        try:
            for _ in range(threads):
                self._workers.append(_Worker(model, width, height))
        except BaseException:
            self.close()
            raise

    @property
    def threads(self) -> int:
        return len(self._workers)

    def submit(
        self,
        models: list[Any],
        datas: list[Any],
        env_ids: list[int],
        camera: str | Any,
        out: np.ndarray,
        debug: list[list[sv.DebugShape]] | None = None,
    ) -> RenderJob:
        """Start drawing env ``i`` (``models[i]``, ``datas[i]``, its ``debug[i]`` shapes) from
        ``camera`` (a camera name, "" for the free camera, or an ``MjvCamera``) into ``out[i]``
        (uint8, height x width x 3) for each ``i`` in ``env_ids``. The datas, the shapes and
        the camera are read while the job runs: leave them alone until it is done."""
        if not self._workers:
            raise RuntimeError("this BatchRenderer is closed")
        if out.shape[1:] != (self.height, self.width, 3) or out.dtype != np.uint8:
            raise ValueError(
                f"out must be uint8 of shape (envs, {self.height}, {self.width}, 3), got "
                f"{out.dtype} {out.shape}"
            )
        cam = camera_for(self.model, camera)
        ids = list(env_ids)
        parts = [p for p in (ids[k :: len(self._workers)] for k in range(self.threads)) if p]
        job = RenderJob(len(parts))
        for worker, part in zip(self._workers, parts, strict=False):
            worker.jobs.put((job, (models, datas, part, cam, out, debug)))
        return job

    def render(
        self,
        models: list[Any],
        datas: list[Any],
        env_ids: list[int],
        camera: str | Any,
        out: np.ndarray,
        debug: list[list[sv.DebugShape]] | None = None,
    ) -> None:
        """``submit`` and wait until the frames are drawn (raises a render thread's error)."""
        self.submit(models, datas, env_ids, camera, out, debug).wait()

    def close(self) -> None:
        """End the render threads (after the jobs handed to them) and free their GL contexts."""
        for worker in self._workers:
            if worker.is_alive():
                worker.jobs.put(None)
        for worker in self._workers:
            worker.join()
        self._workers = []

    def __enter__(self) -> BatchRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
