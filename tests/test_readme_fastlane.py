"""README step 5 (watch frames) runs as written: the run lasts long enough to be watched; the
transcript of docs/guides/fastlane.md is what `mosaic fastlane` prints during such a run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from docs_snippets.blocks import blocks
from docs_snippets.transcript import compare, steps

from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink

README = Path(__file__).resolve().parents[1] / "README.md"


def step_five() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("**5. Watch frames.**") :]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match is not None, "README step 5 has no bash block"
    return match.group(1)


def shell_environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "FASTLANE" not in k}
    env["MOSAIC_HOME"] = str(tmp_path / "home")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_readme_step_five_shows_a_live_segment(tmp_path: Path) -> None:
    run_id = f"readme-{uuid.uuid4().hex[:8]}"
    script = step_five().replace("r43", run_id)
    assert run_id in script  # the snippet names its run, so it can be watched
    env = shell_environment(tmp_path)
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


def test_the_guide_transcript_is_what_a_live_run_shows(tmp_path: Path) -> None:
    """docs/guides/fastlane.md: `mosaic fastlane stat` and `snapshot` of the example's run."""
    [block] = [
        b
        for b in blocks("docs/guides/fastlane.md")
        if b.language == "console" and "fastlane stat" in b.code
    ]
    run_id = f"guide-{uuid.uuid4().hex[:8]}"  # not run-42: other runs may share this machine
    env = shell_environment(tmp_path)
    (tmp_path / "slow.json").write_text('{"episodes": 2, "step_delay_ms": 10}', encoding="utf-8")
    run = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "run", "example", "--config", "slow.json"]
        + ["--run-id", run_id, "--quiet"],
        cwd=tmp_path,
        env={**env, "MOSAIC_FASTLANE_ONLY": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for command, shown in steps(block.code.replace("run-42", run_id)):
            done = subprocess.run(
                ["bash", "-e", "-c", command],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stdout
            problem = compare(command, shown, done.stdout)
            assert problem is None, problem
    finally:
        run.terminate()
        run.wait(timeout=60)
        shm_unlink(segment_name(run_id))
