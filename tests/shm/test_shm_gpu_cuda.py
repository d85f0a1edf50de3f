"""GPU observations with PyTorch (heavy: imports torch): the error without CUDA, and the real
CUDA IPC round trip between an engine process and a client process, which runs only where
``torch.cuda.is_available()`` (never needed by CI; ``benchmarks/shm/gpu_ipc_check.py`` runs
the same check by hand on a GPU machine).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mosaic_sdk.shm import gpu
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.gpu import GpuUnavailableError
from mosaic_sdk.shm.segment import segment_exists
from mosaic_sdk.shm.transport import SharedMemoryTransport

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_without_cuda_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.setattr(gpu, "_runtime", None)
    with SharedMemoryTransport(2, 2, 1) as transport:
        with pytest.raises(GpuUnavailableError, match=r"is_available\(\) is False.*CUDA build"):
            transport.export_gpu_obs("cuda:0")
        assert transport.gpu_obs is None


# -- the real thing (a CUDA GPU only; never needed by CI) -----------------------------------
ENGINE = textwrap.dedent(
    """
    import sys
    from mosaic_sdk.shm.transport import SharedMemoryTransport

    t = SharedMemoryTransport(4, 6, 1, name=sys.argv[1], timeout=60)
    gpu = t.export_gpu_obs(0)
    t.obs[:] = 0.0
    gpu.upload(t.obs)
    print("ready", flush=True)
    while (seq := t.wait_for_actions()) is not None:
        gpu.download(t.obs)          # what the client wrote into the device buffer
        t.obs[:] += t.actions[:, :1]
        gpu.upload(t.obs)
        t.publish_frame(seq)
    t.close_gpu_obs()
    t.close()
    """
)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs torch with CUDA and a GPU")
def test_cuda_ipc_round_trip_between_processes(tmp_path: Path) -> None:
    name = f"gpu-test-{tmp_path.name[-8:]}"
    engine = subprocess.Popen(
        [sys.executable, "-c", ENGINE, name], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert engine.stdout is not None and engine.stdout.readline().strip() == "ready"
        client = SharedMemoryClient(name, timeout=60)
        obs = None
        try:
            obs = client.obs_tensor()
            assert obs.is_cuda and obs.dtype == torch.float32 and tuple(obs.shape) == (4, 6)
            view = client.obs_cuda_array()
            assert view is not None and obs.data_ptr() == view.ptr  # a view, not a copy
            client.step(np.ones((4, 1)))
            assert client.obs_tensor() is obs
            torch.testing.assert_close(obs.cpu(), torch.ones(4, 6))
            torch.testing.assert_close(obs.cpu(), torch.from_numpy(client.obs.copy()))
            obs.fill_(10.0)  # the client's write lands in the engine's buffer
            torch.cuda.synchronize()
            client.step(np.ones((4, 1)))
            np.testing.assert_array_equal(client.obs, np.full((4, 6), 11.0, dtype=np.float32))
            torch.testing.assert_close(obs.cpu(), torch.full((4, 6), 11.0))
        finally:
            del obs
            client.close(shutdown_engine=True)
        assert engine.wait(30) == 0
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    assert not segment_exists(f"mosaic.shm.{name}")
