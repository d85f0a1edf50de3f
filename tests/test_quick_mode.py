"""``./scripts/test --quick``: the tests it leaves out are the heavy ones, and it installs none of
the heavy packages; the full run (``./scripts/test``, what CI runs) leaves nothing out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import HEAVY, TESTS_DIR, deselects_heavy, heavy_reason

ROOT = TESTS_DIR.parent
SCRIPT = (ROOT / "scripts" / "test").read_text(encoding="utf-8")


def test_every_heavy_path_exists() -> None:
    # a renamed heavy file would otherwise run in quick mode without torch or Ray
    for prefix in HEAVY:
        assert (TESTS_DIR / prefix).exists(), f"tests/conftest.py HEAVY names {prefix}: gone"


def test_heavy_files_are_recognised() -> None:
    assert heavy_reason(TESTS_DIR / "sweeps" / "test_ray.py") is not None
    assert heavy_reason(TESTS_DIR / "worker_cleanrl" / "test_agents.py") is not None
    assert heavy_reason(Path(__file__)) is None


def test_only_a_selection_that_leaves_out_every_heavy_test_skips_their_files() -> None:
    assert deselects_heavy("not heavy") and deselects_heavy("not slow and not  heavy")
    for kept in ("", "heavy", "slow", "not heavy or ray", "not (heavy)", "not heavyish"):
        assert not deselects_heavy(kept), kept


def test_quick_mode_installs_no_heavy_package_and_deselects_heavy_tests() -> None:
    quick = SCRIPT.split('if [ "$QUICK" = "1" ]; then', 1)[1].split("\nfi\n", 1)[0]
    for heavy in ("torch", "ray", "cleanrl", "stable-baselines3"):
        assert heavy not in quick
    assert '-m "not heavy"' in quick
    full = SCRIPT.split("\nfi\n", 1)[1]
    assert "not heavy" not in full and "torch==" in full


def test_the_quick_selection_leaves_out_exactly_the_heavy_tests(tmp_path: Path) -> None:
    def collected(*args: str) -> set[str]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *args]
            + [str(TESTS_DIR / "sweeps"), str(TESTS_DIR / "test_contract.py")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        return {line for line in done.stdout.splitlines() if "::" in line}

    everything, quick = collected(), collected("-m", "not heavy")
    left_out = everything - quick
    # the Ray files: test_ray.py by its path, the others by their ``ray`` marker
    assert left_out and all("/test_ray" in nodeid.split("::")[0] for nodeid in left_out)
    assert any("test_ray.py" in nodeid for nodeid in left_out)
    assert any("test_contract.py" in nodeid for nodeid in quick)


def test_a_quick_run_imports_no_heavy_test_file(tmp_path: Path) -> None:
    # quick mode installs no torch, Ray or CleanRL: stand-ins for them that fail on import,
    # first on the path; tests/worker_cleanrl imports the CleanRL worker at module level
    for name in ("torch", "ray", "cleanrl", "mosaic_worker_cleanrl"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            "raise ModuleNotFoundError(f'No module named {__name__!r}', name=__name__)\n"
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    # the CleanRL worker's folder (heavy as a whole) and one that holds a heavy file
    heavy_dirs = [str(TESTS_DIR / "worker_cleanrl"), str(TESTS_DIR / "shm")]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
        + ["-m", "not heavy", *heavy_dirs],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "ERROR" not in out, out[-3000:]  # a collection error (test names are lower case)
    # the heavy files are not collected at all; the others of their folders are
    collected = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    assert collected and not any(heavy_reason(ROOT / path) for path in collected)
    assert "tests/shm/test_shm_ring.py" in collected
