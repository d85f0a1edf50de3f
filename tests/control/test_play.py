"""`mosaic play`: an interactive terminal session, driven here through its stdin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink


def mosaic_play(args: list[str], script: str, env: dict[str, str] | None = None) -> tuple:
    result = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", "play", *args],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    found = re.search(r"\(run (\S+)\)", result.stdout)
    if found:
        shm_unlink(segment_name(found.group(1)))
    return result.returncode, result.stdout, result.stderr


def test_a_scripted_session(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"env_id": "CartPole-v1", "policy": "balance"}')
    png = tmp_path / "frame.png"
    script = f"step\nreset 3\ns\ns 1\nrun 4\nframe {png}\nrun x\ns 9\ndance\nping\nquit\n"
    code, out, err = mosaic_play(
        ["example", "--config", str(config), "--runs-dir", str(tmp_path / "runs")], script
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("playing example (run ")
    assert "[out_of_order]" in lines[1] and "reset" in lines[1]
    assert lines[2].startswith("episode 0 (seed 3): [")
    assert lines[3] == "step 1 (episode 0): action 1, reward 1, return 1"
    assert lines[4] == "step 2 (episode 0): action 1, reward 1, return 2"
    assert lines[5].startswith("step 6 (episode 0): ")
    assert lines[6].startswith(f"wrote {png} (600x400x3")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert lines[7] == "error: N must be a non-negative integer, got 'x'"
    assert "[failed]" in lines[8] and "Discrete(2)" in lines[8]
    assert lines[9].startswith("unknown command 'dance'")
    assert lines[10:] == ["pong", "closed: True", "session ended (exit code 0)"]


def test_end_of_input_closes_the_session(tmp_path: Path) -> None:
    code, out, err = mosaic_play(
        ["example", "--set", "seed=2", "--runs-dir", str(tmp_path)], "r 1\nn 3\n"
    )
    assert code == 0, err
    assert out.splitlines()[-1] == "session ended (exit code 0)"


@pytest.mark.usefixtures("plugin_fixtures")
def test_a_worker_without_the_protocol_is_refused() -> None:
    code, out, err = mosaic_play(
        ["good"],
        "",
        env={"MOSAIC_PLUGINS": "good=fixture_workers:GoodWorker"},
    )
    assert code == 2 and out == ""
    assert "does not speak the control protocol" in err


def test_an_unknown_worker_is_refused() -> None:
    code, _, err = mosaic_play(["no-such-worker"], "")
    assert code == 2 and "no-such-worker" in err


def test_frame_without_pillow_says_which_extra_to_install(tmp_path: Path) -> None:
    """The frame command needs Pillow (the images extra); it said "(reset first; FastLane must
    be on)" instead, which sends the reader after the wrong thing."""
    hidden = tmp_path / "no-pillow" / "PIL"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError(\"No module named 'PIL'\")\n")
    pythonpath = os.pathsep.join(p for p in (str(hidden.parent), os.environ.get("PYTHONPATH")) if p)
    code, out, err = mosaic_play(
        ["example", "--set", "seed=2", "--runs-dir", str(tmp_path / "runs")],
        f"reset 1\nframe {tmp_path / 'f.png'}\nping\nquit\n",
        env={"PYTHONPATH": pythonpath},
    )
    assert code == 0, err
    [line] = [x for x in out.splitlines() if x.startswith("error:")]
    assert "mosaic play's frame command needs Pillow" in line
    assert "pip install 'mosaic-worker-sdk[images]'" in line
    assert "reset first" not in line and "FastLane must be on" not in line
    assert not (tmp_path / "f.png").exists()


def test_frame_before_reset_says_reset_first(tmp_path: Path) -> None:
    code, out, err = mosaic_play(
        ["example", "--set", "seed=2", "--runs-dir", str(tmp_path / "runs")],
        f"frame {tmp_path / 'f.png'}\nquit\n",
    )
    assert code == 0, err
    [line] = [x for x in out.splitlines() if x.startswith("error:")]
    assert "reset first" in line and "FastLane must be on" not in line


def test_an_action_nested_too_deep_is_an_error_line_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    deepest = "[" * 100_000 + "]" * 100_000  # past the parser's stack
    deep = "[" * 101 + "1" + "]" * 101  # parses, but past MAX_JSON_DEPTH
    script = f"r 1\ns {deepest}\ns {deep}\ns 1\nquit\n"
    code, out, err = mosaic_play(["example", "--runs-dir", str(tmp_path)], script)
    assert code == 0, err
    assert "Traceback" not in err and "RecursionError" not in out + err
    lines = out.splitlines()
    assert lines[2] == (
        "error: ACTION nests deeper than 100 levels, got '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
        "'... (200,000 characters)"
    )
    assert lines[3].startswith("error: ACTION nests deeper than 100 levels, got '[[[")
    assert lines[4] == "step 1 (episode 0): action 1, reward 1, return 1"
    assert lines[-1] == "session ended (exit code 0)"
