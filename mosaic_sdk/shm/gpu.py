"""GPU observations: the header's CUDA IPC fields, written by the engine, opened by the client.

An engine whose observations live on a CUDA device exports them (``EngineSide.export_gpu_obs``)::

    gpu = transport.export_gpu_obs(device=0)   # cudaMalloc + cudaIpcGetMemHandle, header mode 1
    ...                                        # each step, after writing transport.obs:
    gpu.upload(transport.obs)                  # CPU obs region -> device buffer (synchronised)
    # or, when the engine computes on the GPU:  gpu.publish(tensor, transport.obs)

and the client (another process) views that device buffer without a copy::

    obs = client.obs_tensor()                  # torch float32 (num_envs, obs_size) on cuda:N

The buffer is float32 ``(num_envs, obs_size)``, C order, at the start of its own
``cudaMalloc`` allocation (an IPC handle maps a whole allocation); the CPU obs region stays
filled. ``libcudart`` is reached through ``ctypes`` (the one PyTorch's CUDA build loads), so
torch stays optional. CUDA refuses to open a handle in the process that exported it: engine
and client must be two processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import glob
import os
import struct
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from mosaic_sdk.shm.layout import GPU_HANDLE_SIZE, Layout

GPU_MODE_CPU = 0
GPU_MODE_CUDA_IPC = 1
GPU_MODE_VULKAN = 2
GPU_MODES = {GPU_MODE_CPU: "CPU", GPU_MODE_CUDA_IPC: "CUDA IPC", GPU_MODE_VULKAN: "Vulkan"}

_IPC_LAZY_ENABLE_PEER_ACCESS = 1  # cudaIpcMemLazyEnablePeerAccess
_MEMCPY_HOST_TO_DEVICE = 1  # cudaMemcpyKind
_MEMCPY_DEVICE_TO_HOST = 2

INSTALL_HINT = (
    "install a CUDA build of PyTorch (pip install torch, see pytorch.org for the CUDA wheels) "
    "on a machine with an NVIDIA GPU and driver"
)


class GpuUnavailableError(RuntimeError):
    """PyTorch or CUDA (the runtime, a driver, a device) is missing in this process."""


class GpuModeError(RuntimeError):
    """The header's GPU mode is one this SDK cannot open (Vulkan), or is not a known mode."""


class CudaError(RuntimeError):
    """A CUDA runtime call failed."""


@dataclass(frozen=True)
class GpuFields:
    """The header's GPU fields."""

    available: int
    mode: int
    device: int
    handle: bytes

    @property
    def mode_name(self) -> str:
        """``"CPU"``, ``"CUDA IPC"``, ``"Vulkan"`` (or ``"unknown (N)"``)."""
        return GPU_MODES.get(self.mode, f"unknown ({self.mode})")


def read_gpu_fields(buf: Any, layout: Layout) -> GpuFields:
    """The GPU fields of the header in ``buf`` (either layout)."""
    off = layout.off
    available, mode = struct.unpack_from("<BB", buf, off["gpu_available"])
    device = struct.unpack_from("<I", buf, off["gpu_device_id"])[0]
    handle = struct.unpack_from(f"<{GPU_HANDLE_SIZE}s", buf, off["gpu_obs_handle"])[0]
    return GpuFields(available, mode, device, bytes(handle))


def write_gpu_fields(buf: Any, layout: Layout, fields: GpuFields) -> None:
    """Write the GPU fields: handle and device first, ``gpu_available``, then the mode last
    (a client that reads mode 1 finds the rest written; x86 keeps stores in order)."""
    if len(fields.handle) != GPU_HANDLE_SIZE:
        raise ValueError(f"a CUDA IPC handle has {GPU_HANDLE_SIZE} bytes, got {len(fields.handle)}")
    if fields.mode not in GPU_MODES:
        raise ValueError(f"gpu_obs_mode must be one of {sorted(GPU_MODES)}, got {fields.mode}")
    off = layout.off
    struct.pack_into("<B", buf, off["gpu_obs_mode"], GPU_MODE_CPU)
    struct.pack_into(f"<{GPU_HANDLE_SIZE}s", buf, off["gpu_obs_handle"], fields.handle)
    struct.pack_into("<I", buf, off["gpu_device_id"], fields.device)
    struct.pack_into("<B", buf, off["gpu_available"], fields.available)
    struct.pack_into("<B", buf, off["gpu_obs_mode"], fields.mode)


def segment_header(seg: Any) -> Any:
    """The writable mapping of a ``MappedSegment`` (the GPU fields are read and written raw)."""
    mm = seg._mm  # MappedSegment keeps its mapping private; None once released
    if mm is None:
        raise ValueError(f"shm transport {seg.name!r} was already released")
    return mm


# -- the CUDA runtime ---------------------------------------------------------------------------
class CudaRuntime:
    """The few CUDA runtime calls the IPC path needs, through ``ctypes`` on ``libcudart``.

    Every pointer is an ``int``; every failure raises ``CudaError`` with CUDA's own message.
    """

    def __init__(self, lib: Any) -> None:
        self._lib = lib
        vp, sz, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        for name, args in (
            ("cudaGetDeviceCount", [ctypes.POINTER(i)]),
            ("cudaSetDevice", [i]),
            ("cudaGetDevice", [ctypes.POINTER(i)]),
            ("cudaMalloc", [ctypes.POINTER(vp), sz]),
            ("cudaFree", [vp]),
            ("cudaMemcpy", [vp, vp, sz, i]),
            ("cudaDeviceSynchronize", []),
            ("cudaIpcGetMemHandle", [ctypes.c_char_p, vp]),
            ("cudaIpcOpenMemHandle", [ctypes.POINTER(vp), _IpcHandle, ctypes.c_uint]),
            ("cudaIpcCloseMemHandle", [vp]),
        ):
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = i
        lib.cudaGetErrorString.argtypes = [i]
        lib.cudaGetErrorString.restype = ctypes.c_char_p

    def _check(self, code: int, call: str) -> None:
        if code:
            text = self._lib.cudaGetErrorString(code).decode(errors="replace")
            raise CudaError(f"{call} failed: {text} (CUDA error {code})")

    def device_count(self) -> int:
        count = ctypes.c_int(0)
        code = self._lib.cudaGetDeviceCount(ctypes.byref(count))
        return 0 if code else int(count.value)

    def set_device(self, device: int) -> None:
        self._check(self._lib.cudaSetDevice(device), f"cudaSetDevice({device})")

    def get_device(self) -> int:
        current = ctypes.c_int(0)
        self._check(self._lib.cudaGetDevice(ctypes.byref(current)), "cudaGetDevice")
        return int(current.value)

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        self._check(self._lib.cudaMalloc(ctypes.byref(ptr), nbytes), f"cudaMalloc({nbytes})")
        return int(ptr.value or 0)

    def free(self, ptr: int) -> None:
        self._check(self._lib.cudaFree(ptr), "cudaFree")

    def copy_to_device(self, dst: int, src: int, nbytes: int) -> None:
        """Host ``src`` -> device ``dst``, complete when this returns."""
        self._check(
            self._lib.cudaMemcpy(dst, src, nbytes, _MEMCPY_HOST_TO_DEVICE), "cudaMemcpy(H2D)"
        )
        self.synchronize()  # from pageable memory the copy may still be in flight

    def synchronize(self) -> None:
        """Wait for every stream of the current device."""
        self._check(self._lib.cudaDeviceSynchronize(), "cudaDeviceSynchronize")

    def copy_to_host(self, dst: int, src: int, nbytes: int) -> None:
        """Device ``src`` -> host ``dst`` (synchronous for pageable host memory)."""
        self._check(
            self._lib.cudaMemcpy(dst, src, nbytes, _MEMCPY_DEVICE_TO_HOST), "cudaMemcpy(D2H)"
        )

    def ipc_get_handle(self, ptr: int) -> bytes:
        out = ctypes.create_string_buffer(GPU_HANDLE_SIZE)
        self._check(self._lib.cudaIpcGetMemHandle(out, ptr), "cudaIpcGetMemHandle")
        return out.raw

    def ipc_open(self, handle: bytes) -> int:
        ptr = ctypes.c_void_p()
        raw = _IpcHandle.from_buffer_copy(handle)
        code = self._lib.cudaIpcOpenMemHandle(ctypes.byref(ptr), raw, _IPC_LAZY_ENABLE_PEER_ACCESS)
        self._check(code, "cudaIpcOpenMemHandle")
        return int(ptr.value or 0)

    def ipc_close(self, ptr: int) -> None:
        self._check(self._lib.cudaIpcCloseMemHandle(ptr), "cudaIpcCloseMemHandle")


class _IpcHandle(ctypes.Structure):
    """``cudaIpcMemHandle_t``: 64 opaque bytes, passed by value."""

    _fields_ = [("reserved", ctypes.c_char * GPU_HANDLE_SIZE)]


_runtime: CudaRuntime | None = None
_runtime_lock = threading.Lock()


def _loaded_cudart() -> list[str]:
    """Paths of the ``libcudart`` this process has mapped already (torch's), Linux only."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if "libcudart" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def _cudart_candidates() -> list[str]:
    names = _loaded_cudart()  # the very library torch uses, when it is linked dynamically
    names += ["libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"]
    for base in sys.path:  # the nvidia-cuda-runtime wheels torch depends on, torch's own lib
        for pattern in ("nvidia/*/lib/libcudart.so*", "torch/lib/libcudart*.so*"):
            names += sorted(glob.glob(os.path.join(base, pattern)))
    found = ctypes.util.find_library("cudart")
    if found:
        names.append(found)
    return names


def cuda_runtime() -> CudaRuntime:
    """The process's ``CudaRuntime``, loaded once; ``GpuUnavailableError`` saying what to
    install when PyTorch, its CUDA build or a GPU is missing."""
    global _runtime
    with _runtime_lock:
        if _runtime is not None:
            return _runtime
        try:
            # torch is optional (not a core dependency): only GPU observations need it.
            import torch
        except ImportError:
            raise GpuUnavailableError(
                f"GPU observations need PyTorch with CUDA, which is not installed: {INSTALL_HINT}"
            ) from None
        if not torch.cuda.is_available():
            raise GpuUnavailableError(
                f"GPU observations need CUDA, but torch.cuda.is_available() is False (torch "
                f"{torch.__version__}, CUDA build: {torch.version.cuda or 'no'}): {INSTALL_HINT}"
            )
        torch.cuda.init()  # loads torch's libcudart, which the first candidates then find
        tried = []
        for name in _cudart_candidates():
            try:
                runtime = CudaRuntime(ctypes.CDLL(name))
            except (OSError, AttributeError):
                tried.append(name)
                continue
            if runtime.device_count() > 0:
                _runtime = runtime
                return runtime
            tried.append(name)
        raise GpuUnavailableError(
            "GPU observations need the CUDA runtime library (libcudart) with a visible device; "
            f"none of {', '.join(tried) or 'no candidates'} worked: {INSTALL_HINT}"
        )


def cuda_device(device: int | str | Any) -> int:
    """The ordinal of ``device`` (``0``, ``"cuda:1"``, ``torch.device("cuda", 0)``)."""
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        index = int(device)
    else:
        text = str(device)
        if text == "cuda":
            index = 0
        elif text.startswith("cuda:") and text[5:].isdigit():
            index = int(text[5:])
        else:
            raise ValueError(f"a GPU observation device is a CUDA ordinal or 'cuda:N': {text!r}")
    if index < 0:
        raise ValueError(f"a CUDA device ordinal is >= 0, got {index}")
    return index


def _torch_view(holder: Any, device: int) -> Any:
    """A torch tensor over the device memory ``holder`` describes (no copy)."""
    try:
        # torch is optional (not a core dependency): only the tensor form needs it.
        import torch
    except ImportError:
        raise GpuUnavailableError(
            f"a GPU observation tensor needs PyTorch, which is not installed: {INSTALL_HINT}"
        ) from None
    # torch keeps ``holder`` alive as long as the tensor (its deleter holds a reference).
    return torch.as_tensor(holder, device=f"cuda:{device}")


def _cai(ptr: int, shape: tuple[int, ...]) -> dict[str, Any]:
    """``__cuda_array_interface__`` (v3) of float32 C-order device memory at ``ptr``.
    No stream: the engine synchronised before publishing the frame."""
    return {
        "shape": shape,
        "typestr": "<f4",
        "data": (ptr, False),
        "strides": None,
        "version": 3,
        "stream": None,
    }


@contextlib.contextmanager
def on_device(runtime: CudaRuntime, device: int) -> Iterator[CudaRuntime]:
    """Make ``device`` the calling thread's current CUDA device, and restore the one that was
    current (the engine's or trainer's own CUDA work keeps its device)."""
    before = runtime.get_device()
    if before != device:
        runtime.set_device(device)
    try:
        yield runtime
    finally:
        if before != device:
            runtime.set_device(before)


def _release(release: Callable[[int], None], runtime: CudaRuntime, device: int, ptr: int) -> None:
    """``release(ptr)`` (free or close a mapping) on ``device``; quiet about CUDA errors: at
    exit the CUDA context may already be gone, and the memory with it."""
    try:
        with on_device(runtime, device):
            release(ptr)
    except CudaError:
        pass


# -- engine side --------------------------------------------------------------------------------


class GpuObsExport:
    """The engine's exported device buffer: float32 ``(num_envs, obs_size)`` on ``device``,
    brought up to date (``upload``, ``publish``, or writing ``tensor()`` then ``download``)
    before each frame is published."""

    def __init__(self, buf: Any, layout: Layout, device: int | str | Any = 0) -> None:
        self.device = cuda_device(device)
        self.shape = (layout.num_envs, layout.obs_size)
        self.nbytes = 4 * layout.num_envs * layout.obs_size
        self._buf, self._layout = buf, layout
        self._runtime = rt = cuda_runtime()
        with on_device(rt, self.device):
            self.ptr = rt.malloc(self.nbytes)  # the allocation's start: what the handle maps
            self._finalizer = weakref.finalize(self, _release, rt.free, rt, self.device, self.ptr)
            self.handle = rt.ipc_get_handle(self.ptr)
        self._tensor: Any = None
        write_gpu_fields(buf, layout, GpuFields(1, GPU_MODE_CUDA_IPC, self.device, self.handle))

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return _cai(self.ptr, self.shape)

    def tensor(self) -> Any:
        """The buffer as a torch float32 CUDA tensor (a view: no copy)."""
        if self._tensor is None:
            self._tensor = _torch_view(self, self.device)
        return self._tensor

    def _host(self, obs: np.ndarray) -> int:
        if obs.dtype != np.float32 or obs.nbytes != self.nbytes or not obs.flags.c_contiguous:
            raise ValueError(
                f"the CPU observations must be C-contiguous float32 of shape {self.shape}, got "
                f"{obs.dtype} {obs.shape}"
            )
        return int(obs.ctypes.data)

    def upload(self, obs: np.ndarray) -> None:
        """Copy the CPU observations ``obs`` (the obs region) into the device buffer."""
        self._check_open()
        host = self._host(obs)
        with on_device(self._runtime, self.device) as rt:
            rt.copy_to_device(self.ptr, host, self.nbytes)

    def download(self, obs: np.ndarray) -> None:
        """Copy the device buffer into the CPU observations ``obs`` (the obs region)."""
        self._check_open()
        host = self._host(obs)
        with on_device(self._runtime, self.device) as rt:
            rt.copy_to_host(host, self.ptr, self.nbytes)

    def publish(self, source: Any, obs: np.ndarray) -> None:
        """An engine's own CUDA tensor ``source`` (float32 ``(num_envs, obs_size)``): copied
        into the exported buffer (device to device) and into the CPU region ``obs``."""
        shape = tuple(getattr(source, "shape", ()))
        if shape != self.shape or str(getattr(source, "dtype", "")) != "torch.float32":
            raise ValueError(
                f"publish: the source must be a float32 torch tensor of shape {self.shape}, "
                f"got {getattr(source, 'dtype', type(source).__name__)} {shape}"
            )
        self._check_open()
        target = self.tensor()
        target.copy_(source)  # on torch's current stream, perhaps not the legacy one:
        with on_device(self._runtime, self.device) as rt:
            rt.synchronize()  # the copy is complete before the frame goes out
        self.download(obs)

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise ValueError("this GPU observation buffer was closed")

    def close(self) -> None:
        """Header back to mode 0 (CPU), then free the device buffer."""
        if not self._finalizer.alive:
            return
        try:
            zero = GpuFields(0, GPU_MODE_CPU, 0, bytes(GPU_HANDLE_SIZE))
            write_gpu_fields(self._buf, self._layout, zero)
        except (ValueError, TypeError):
            pass  # the segment is already unmapped: no client can read the fields any more
        self._tensor = None
        self._finalizer()


# -- client side --------------------------------------------------------------------------------


class CudaIpcObs:
    """The engine's observation buffer opened from the header's IPC handle; torch, CuPy or
    Numba view it without a copy (``__cuda_array_interface__``). The mapping closes with
    ``close()``, or once this object and every tensor made from it are gone."""

    def __init__(self, fields: GpuFields, shape: tuple[int, int]) -> None:
        self.fields = fields
        self.device = fields.device
        self.shape = shape
        self._runtime = rt = cuda_runtime()
        with on_device(rt, self.device):
            self.ptr = rt.ipc_open(fields.handle)
        self._finalizer = weakref.finalize(self, _release, rt.ipc_close, rt, self.device, self.ptr)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return _cai(self.ptr, self.shape)

    @property
    def closed(self) -> bool:
        """True once the mapping is closed."""
        return not self._finalizer.alive

    def tensor(self) -> Any:
        """A torch float32 CUDA tensor viewing the buffer (no copy)."""
        return _torch_view(self, self.device)

    def close(self) -> None:
        """Close the mapping now (tensors made from it must not be used afterwards)."""
        self._finalizer()


def open_gpu_obs(buf: Any, layout: Layout) -> CudaIpcObs | None:
    """Open the header's GPU observations: None in mode 0 (no GPU buffer: read the CPU obs),
    ``GpuModeError`` in mode 2 (Vulkan) or an unknown mode, ``GpuUnavailableError`` when
    torch or CUDA is missing."""
    fields = read_gpu_fields(buf, layout)
    if fields.mode == GPU_MODE_CPU:
        return None
    if fields.mode == GPU_MODE_VULKAN:
        raise GpuModeError(
            "the engine exports its observations as Vulkan external memory (gpu_obs_mode 2), "
            "which this client does not support: start the engine with CUDA IPC observations "
            "(gpu_obs_mode 1) or read the CPU obs region (client.obs)"
        )
    if fields.mode != GPU_MODE_CUDA_IPC:
        raise GpuModeError(
            f"gpu_obs_mode {fields.mode} is not a known mode (0 CPU, 1 CUDA IPC, 2 Vulkan): the "
            "engine wrote a header this SDK does not understand"
        )
    shape = (layout.num_envs, layout.obs_size)
    key = (fields.handle, fields.device)
    with _opened_lock:
        # CUDA maps a handle once per process: a mapping still alive (a tensor a caller kept
        # from an earlier client of the same engine) is shared, not opened again.
        view = _opened.get(key)
        if view is None or view.closed or view.shape != shape:
            view = CudaIpcObs(fields, shape)
            _opened[key] = view
        return view


_opened: weakref.WeakValueDictionary[tuple[bytes, int], CudaIpcObs] = weakref.WeakValueDictionary()
_opened_lock = threading.Lock()
