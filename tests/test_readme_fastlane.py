"""README step 5 (watch frames) runs as written: the run lasts long enough to be watched."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink

README = Path(__file__).resolve().parents[1] / "README.md"


def step_five() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("**5. Watch frames.**") :]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match is not None, "README step 5 has no bash block"
    return match.group(1)


def test_readme_step_five_shows_a_live_segment(tmp_path: Path) -> None:
    run_id = f"readme-{uuid.uuid4().hex[:8]}"
    script = step_five().replace("r43", run_id)
    assert run_id in script  # the snippet names its run, so it can be watched
    env = {k: v for k, v in os.environ.items() if "FASTLANE" not in k}
    env["MOSAIC_HOME"] = str(tmp_path / "home")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    try:
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        shm_unlink(segment_name(run_id))  # by exact name, if the run left it
    assert done.returncode == 0, done.stdout + done.stderr
    assert "frames published" in done.stdout and "no FastLane segment" not in done.stderr
    assert (tmp_path / "frame.png").read_bytes().startswith(b"\x89PNG")
    assert f"run {run_id} completed" in done.stderr + (tmp_path / f"{run_id}.log").read_text()
