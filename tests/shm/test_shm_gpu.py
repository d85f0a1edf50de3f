"""GPU observations over the header's CUDA IPC fields (``mosaic_sdk.shm.gpu``), without torch.

These run everywhere: the fields through both header layouts, modes 0 and 2, the error without
torch, and the engine-to-client plumbing through a stand-in CUDA runtime (host memory playing
device memory, a handle naming the allocation). ``test_shm_gpu_cuda.py`` has the tests that
import torch, and the real round trip between two processes (a GPU only).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import gpu
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.gpu import (
    GPU_MODE_CPU,
    GPU_MODE_CUDA_IPC,
    GPU_MODE_VULKAN,
    GpuFields,
    GpuModeError,
    GpuUnavailableError,
    segment_header,
    write_gpu_fields,
)
from mosaic_sdk.shm.layout import LAYOUT_LRBC, LAYOUT_MSHM
from mosaic_sdk.shm.lucky import LuckyClient
from mosaic_sdk.shm.segment import segment_exists
from mosaic_sdk.shm.transport import SharedMemoryTransport

ROOT = Path(__file__).resolve().parents[2]
HANDLE = bytes(range(64))
# Where the design's table (and ours) put the GPU fields: (mode, device, handle, available).
OFFSETS = {LAYOUT_MSHM: (193, 196, 200, 192), LAYOUT_LRBC: (133, 200, 134, 132)}


@pytest.fixture(params=[LAYOUT_MSHM, LAYOUT_LRBC])
def pair(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[SharedMemoryTransport, SharedMemoryClient]]:
    transport = SharedMemoryTransport(3, 5, 2, layout=request.param)
    client = SharedMemoryClient(transport.name, exact_name=request.param == LAYOUT_LRBC)
    try:
        yield transport, client
    finally:
        client.close()
        transport.close()
        assert not segment_exists(transport.name)


def test_fields_written_at_the_layouts_offsets_and_read_by_the_client(pair) -> None:
    transport, client = pair
    kind = transport.layout.kind
    buf = segment_header(transport.seg)
    write_gpu_fields(buf, transport.layout, GpuFields(1, GPU_MODE_CUDA_IPC, 3, HANDLE))
    mode_at, device_at, handle_at, available_at = OFFSETS[kind]
    assert buf[mode_at] == GPU_MODE_CUDA_IPC and buf[available_at] == 1
    assert struct.unpack_from("<I", buf, device_at)[0] == 3
    assert bytes(buf[handle_at : handle_at + 64]) == HANDLE
    assert client.gpu_fields == GpuFields(1, GPU_MODE_CUDA_IPC, 3, HANDLE)
    # written after both sides mapped the segment (an engine may export late): neither side's
    # header check takes it for another process's write
    transport.seg.verify_header()
    client._seg.verify_header()


def test_mode_zero_means_no_gpu_buffer(pair) -> None:
    _, client = pair
    assert client.gpu_fields.mode == GPU_MODE_CPU
    assert client.obs_cuda_array() is None
    assert client.obs_tensor() is None


def test_lucky_client_reads_the_design_fields() -> None:
    with SharedMemoryTransport(2, 4, 1, layout=LAYOUT_LRBC) as transport:
        with LuckyClient(transport.name) as lucky:
            assert lucky.gpu_obs_mode == 0 and lucky.obs_tensor() is None
            buf = segment_header(transport.seg)
            buf[133] = GPU_MODE_VULKAN  # as a design engine exporting Vulkan memory writes it
            assert lucky.gpu_obs_mode == GPU_MODE_VULKAN
            with pytest.raises(GpuModeError, match="Vulkan.*not support"):
                lucky.obs_tensor()


def test_vulkan_and_unknown_modes_are_refused(pair) -> None:
    transport, client = pair
    buf = segment_header(transport.seg)
    write_gpu_fields(buf, transport.layout, GpuFields(1, GPU_MODE_VULKAN, 0, HANDLE))
    with pytest.raises(GpuModeError, match="Vulkan external memory .*not support"):
        client.obs_tensor()
    buf[transport.layout.off["gpu_obs_mode"]] = 7
    with pytest.raises(GpuModeError, match="gpu_obs_mode 7 is not a known mode"):
        client.obs_cuda_array()


def test_bad_fields_are_refused() -> None:
    with SharedMemoryTransport(1, 1, 1) as transport:
        buf, layout = segment_header(transport.seg), transport.layout
        with pytest.raises(ValueError, match="64 bytes, got 3"):
            write_gpu_fields(buf, layout, GpuFields(1, 1, 0, b"abc"))
        with pytest.raises(ValueError, match="gpu_obs_mode must be one of"):
            write_gpu_fields(buf, layout, GpuFields(1, 5, 0, HANDLE))
    with pytest.raises(ValueError, match="CUDA ordinal or 'cuda:N'"):
        gpu.cuda_device("cpu")
    assert gpu.cuda_device("cuda:2") == 2 and gpu.cuda_device("cuda") == 0


# -- without torch or CUDA ------------------------------------------------------------------
@pytest.fixture
def no_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "_runtime", None)


def test_without_torch_the_error_says_what_to_install(
    pair, monkeypatch: pytest.MonkeyPatch, no_runtime: None
) -> None:
    transport, client = pair
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(GpuUnavailableError, match=r"not installed: install .*pip install torch"):
        transport.export_gpu_obs(0)
    assert transport.gpu_obs is None and client.gpu_fields.mode == GPU_MODE_CPU
    write_gpu_fields(segment_header(transport.seg), transport.layout, GpuFields(1, 1, 0, HANDLE))
    with pytest.raises(GpuUnavailableError, match="PyTorch") as err:
        client.obs_tensor()
    assert "\n" not in str(err.value)


# -- the plumbing, through a stand-in CUDA runtime ------------------------------------------
class HostRuntime:
    """``CudaRuntime``'s calls on host memory: an allocation is a numpy buffer, its handle
    names it, opening the handle maps the same memory (as IPC maps the same device memory)."""

    def __init__(self) -> None:
        self.buffers: dict[int, np.ndarray] = {}
        self.device = 0  # the calling thread's current device
        self.devices: list[int] = []  # the device current at each allocation and opening
        self.calls: list[tuple[str, int]] = []
        self.uploads = 0

    def set_device(self, device: int) -> None:
        self.device = device

    def get_device(self) -> int:
        return self.device

    def malloc(self, nbytes: int) -> int:
        data = np.full(nbytes, 0xEE, dtype=np.uint8)
        ptr = int(data.ctypes.data)
        self.buffers[ptr] = data
        self.calls.append(("malloc", nbytes))
        self.devices.append(self.device)
        return ptr

    def free(self, ptr: int) -> None:
        self.calls.append(("free", ptr))
        del self.buffers[ptr]

    def copy_to_device(self, dst: int, src: int, nbytes: int) -> None:
        self.uploads += 1
        ctypes.memmove(dst, src, nbytes)

    def copy_to_host(self, dst: int, src: int, nbytes: int) -> None:
        ctypes.memmove(dst, src, nbytes)

    def synchronize(self) -> None:
        pass

    def ipc_get_handle(self, ptr: int) -> bytes:
        return b"HOST" + struct.pack("<Q", ptr) + bytes(52)

    def ipc_open(self, handle: bytes) -> int:
        assert handle[:4] == b"HOST", "the client opened a handle the engine never wrote"
        ptr = struct.unpack_from("<Q", handle, 4)[0]
        self.calls.append(("open", ptr))
        self.devices.append(self.device)
        return int(ptr)

    def ipc_close(self, ptr: int) -> None:
        self.calls.append(("close", ptr))


def _device_array(ptr: int, shape: tuple[int, int]) -> np.ndarray:
    count = shape[0] * shape[1]
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(ptr)).reshape(shape)


@pytest.fixture
def host_runtime(monkeypatch: pytest.MonkeyPatch) -> HostRuntime:
    runtime = HostRuntime()
    monkeypatch.setattr(gpu, "cuda_runtime", lambda: runtime)
    return runtime


def test_export_and_open_through_the_header(pair, host_runtime: HostRuntime) -> None:
    transport, client = pair
    export = transport.export_gpu_obs("cuda:1")
    assert host_runtime.calls == [("malloc", 3 * 5 * 4)]
    assert host_runtime.devices == [1] and host_runtime.device == 0  # on cuda:1, then back
    fields = client.gpu_fields
    assert (fields.mode, fields.available, fields.device) == (GPU_MODE_CUDA_IPC, 1, 1)
    assert fields.handle == host_runtime.ipc_get_handle(export.ptr)

    transport.obs[:] = np.arange(15, dtype=np.float32).reshape(3, 5)
    export.upload(transport.obs)
    view = client.obs_cuda_array()
    assert view is not None and client.obs_cuda_array() is view  # opened once
    cai = view.__cuda_array_interface__
    assert cai["shape"] == (3, 5) and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["data"] == (export.ptr, False) and host_runtime.calls[-1] == ("open", export.ptr)
    assert host_runtime.devices == [1, 1] and host_runtime.device == 0
    device = _device_array(cai["data"][0], cai["shape"])
    np.testing.assert_array_equal(device, transport.obs)

    device[1, :] = -1.0  # the client writes into the device buffer: the engine reads it
    export.download(transport.obs)
    np.testing.assert_array_equal(transport.obs[1], np.full(5, -1.0, dtype=np.float32))
    with pytest.raises(ValueError, match="float32 of shape"):
        export.upload(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="already exports GPU observations on cuda:1"):
        transport.export_gpu_obs(0)

    del device, cai
    client.close()  # a view still held (as a tensor would hold it) keeps the mapping open
    assert ("close", export.ptr) not in host_runtime.calls and not view.closed
    del view  # the last reference: the mapping closes
    assert ("close", export.ptr) in host_runtime.calls
    transport.close_gpu_obs()
    assert host_runtime.calls[-1] == ("free", export.ptr)
    assert gpu.read_gpu_fields(segment_header(transport.seg), transport.layout).mode == 0
    with pytest.raises(ValueError, match="was closed"):
        export.upload(transport.obs)


def test_a_new_export_is_opened_again(pair, host_runtime: HostRuntime) -> None:
    transport, client = pair
    first = transport.export_gpu_obs(0)
    view = client.obs_cuda_array()
    assert view is not None and view.ptr == first.ptr
    del view
    transport.close_gpu_obs()
    assert client.obs_cuda_array() is None  # back to mode 0: the old mapping is dropped
    assert ("close", first.ptr) in host_runtime.calls
    second = transport.export_gpu_obs(0)
    again = client.obs_cuda_array()
    assert again is not None and again.ptr == second.ptr
    again.close()  # closing at once, whoever holds it
    assert again.closed and host_runtime.calls[-1] == ("close", second.ptr)


def test_a_handle_still_mapped_is_shared_not_opened_twice(host_runtime: HostRuntime) -> None:
    with SharedMemoryTransport(2, 3, 1) as transport:
        export = transport.export_gpu_obs(0)
        first = SharedMemoryClient(transport.name)
        kept = first.obs_cuda_array()  # as a tensor a trainer keeps would hold it
        first.close()
        second = SharedMemoryClient(transport.name)
        try:
            assert second.obs_cuda_array() is kept and not kept.closed
            assert host_runtime.calls.count(("open", export.ptr)) == 1  # CUDA maps it once
        finally:
            second.close()
        del kept
        assert ("close", export.ptr) in host_runtime.calls
        transport.close_gpu_obs()


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="mujoco is not installed")
def test_mujoco_engine_keeps_the_gpu_buffer_current(host_runtime: HostRuntime) -> None:
    from mosaic_sdk.shm.engines.mujoco_engine import MujocoEngine

    engine = MujocoEngine(3, "reacher", gpu_obs="cuda:0", image_size=(0, 0))
    try:
        t = engine.transport
        export = t.gpu_obs
        assert export is not None
        device = _device_array(export.ptr, export.shape)
        np.testing.assert_array_equal(device, t.obs)  # the first observations, at start
        t.actions[:] = 0.5
        for _ in range(3):
            engine.step_batch()
        assert np.abs(t.obs).sum() > 0
        np.testing.assert_array_equal(device, t.obs)
        t.resets[1] = 1
        engine.step_batch()
        np.testing.assert_array_equal(device, t.obs)
        uploads = host_runtime.uploads
        engine.answer(cmd.PingRequest(nonce=1))  # changes no observation: nothing to upload
        assert host_runtime.uploads == uploads
        engine.answer(cmd.ResetRequest(env_ids=[2], seeds=[7]))
        assert host_runtime.uploads == uploads + 1
        np.testing.assert_array_equal(device, t.obs)
    finally:
        engine.close()
    assert host_runtime.calls[-1] == ("free", export.ptr)


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="mujoco is not installed")
def test_mujoco_engine_without_cuda_leaves_no_segment(no_runtime: None, monkeypatch) -> None:
    from mosaic_sdk.shm.engines.mujoco_engine import MujocoEngine

    monkeypatch.setitem(sys.modules, "torch", None)
    name = f"gpu-none-{os.getpid()}"
    with pytest.raises(GpuUnavailableError, match="pip install torch"):
        MujocoEngine(2, "reacher", name=name, gpu_obs=0, image_size=(0, 0))
    assert not segment_exists(f"mosaic.shm.{name}")


# -- the ctypes declarations, against a C library with CUDA's signatures ----------------------
@pytest.fixture(scope="module")
def fake_cudart(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc or gcc) on PATH: the stand-in libcudart cannot be built")
    out = tmp_path_factory.mktemp("fake-cudart") / "libfakecudart.so"
    source = Path(__file__).with_name("fake_cudart.c")
    subprocess.run(
        [
            compiler,
            "-O2",
            "-std=c11",
            "-Wall",
            "-Werror",
            "-shared",
            "-fPIC",
            "-o",
            str(out),
            str(source),
        ],
        check=True,
    )
    return ctypes.CDLL(str(out))


def test_ctypes_calls_pass_what_cuda_expects(
    pair, fake_cudart: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = gpu.CudaRuntime(fake_cudart)
    monkeypatch.setattr(gpu, "cuda_runtime", lambda: runtime)
    counter = ctypes.c_int.in_dll
    transport, client = pair
    assert runtime.device_count() == 2
    export = transport.export_gpu_obs("cuda:1")
    handle = client.gpu_fields.handle
    assert handle[:8] == b"FAKECUDA" and handle[63] == 0x41  # made on device 1, all 64 bytes
    assert struct.unpack_from("<Q", handle, 8)[0] == export.ptr
    assert runtime.get_device() == 0  # the caller's device is current again

    transport.obs[:] = np.arange(15, dtype=np.float32).reshape(3, 5) / 4
    syncs = counter(fake_cudart, "fake_syncs").value
    export.upload(transport.obs)
    assert counter(fake_cudart, "fake_last_memcpy_kind").value == 1  # host to device
    assert counter(fake_cudart, "fake_syncs").value == syncs + 1  # complete before the frame
    view = client.obs_cuda_array()  # the handle went by value; the device was 1 at opening
    assert view is not None and view.ptr == export.ptr
    assert counter(fake_cudart, "fake_last_open_flags").value == 1  # lazy peer access
    np.testing.assert_array_equal(_device_array(view.ptr, view.shape), transport.obs)
    _device_array(view.ptr, view.shape)[2] = 9.0
    export.download(transport.obs)
    assert counter(fake_cudart, "fake_last_memcpy_kind").value == 2  # device to host
    np.testing.assert_array_equal(transport.obs[2], np.full(5, 9.0, dtype=np.float32))

    closes = counter(fake_cudart, "fake_close_count").value
    del view
    client.close()
    assert counter(fake_cudart, "fake_close_count").value == closes + 1
    transport.close_gpu_obs()
    with pytest.raises(gpu.CudaError, match=r"cudaSetDevice\(5\) failed: invalid device"):
        runtime.set_device(5)
    with pytest.raises(gpu.CudaError, match="cudaIpcOpenMemHandle failed: invalid argument"):
        runtime.ipc_open(bytes(64))
