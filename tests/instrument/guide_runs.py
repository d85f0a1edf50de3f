"""Running the blocks of docs/guides/bring-your-own-code.md as a reader would: the page's
scripts written to files, its commands run with bash in that directory, the store read back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from docs_snippets.blocks import blocks

from mosaic_sdk.runner.storage.store import RunStore

PAGE = "docs/guides/bring-your-own-code.md"


def snippet(name: str) -> str:
    """The code of the block the page marks ``<!-- snippet: NAME -->``."""
    [found] = [b for b in blocks(PAGE) if b.marker == name]
    return found.code


def reader_environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOSAIC_", "PYTEST_"))}
    env["MOSAIC_HOME"] = str(tmp_path / "mosaic-home")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_commands(name: str, work: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-e", "-c", snippet(name)],
        cwd=work,
        env=reader_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done


def stored_run(tmp_path: Path, run_id: str) -> dict[str, Any]:
    """The run, its episode returns (finished ones) and its series, from the default store."""
    import json

    with RunStore(tmp_path / "mosaic-home" / "runs.sqlite", readonly=True) as store:
        run = store.get_run(run_id)
        episodes = [json.loads(raw) for raw in store.episode_lines(run_id, "")]
        series = {
            info.name: store.series_points(run_id, info.name).values
            for info in store.series(run_id)
        }
    finished = [e["total_reward"] for e in episodes if not e["metadata"].get("unfinished")]
    return {"run": run, "returns": finished, "episodes": episodes, "series": series}
