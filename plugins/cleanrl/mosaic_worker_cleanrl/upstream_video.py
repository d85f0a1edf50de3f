"""Videos of an upstream script: recorded when moviepy is installed, skipped (saying so) when not.

CleanRL's scripts record episodes with ``gymnasium.wrappers.RecordVideo`` (``gym.wrappers.
RecordVideo`` through the worker's gym layer), which writes its files with moviepy. They do
so when asked (``--capture-video``) and also unasked: with ``--save-model``, dqn, c51 and
their variants evaluate the saved model with ``cleanrl_utils.evals.<name>.evaluate``, whose
``capture_video`` is on by default. On a Python without moviepy that evaluation would crash
after the checkpoint is written, and the run would end as failed.

So while an upstream script runs without moviepy, :func:`skip_recording` puts a stand-in in
``RecordVideo``'s place: it passes the env through unchanged, and the first one made writes a
single warning line on stderr naming the video folder that stays empty and the extra that
brings moviepy. Asking for video explicitly (``algo_params.capture_video``) without moviepy
is refused before launch (:func:`mosaic_worker_cleanrl.cli.check_config`), so the stand-in only
replaces recordings the user did not ask for. With moviepy installed nothing is replaced and
the videos land in the run directory's ``videos/<run_name>-eval/`` (the scripts' relative
``videos/...`` paths, resolved against the run directory the script runs in).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import gymnasium

#: How to get what recording needs.
VIDEO_INSTALL = "pip install 'mosaic-worker-cleanrl[video]'"


def video_available() -> bool:
    """Whether ``RecordVideo`` can write files here (moviepy is importable)."""
    try:
        return importlib.util.find_spec("moviepy") is not None
    except (ImportError, ValueError):
        return False


def not_recorded_message(video_folder: Any) -> str:
    return (
        f"warning: videos were not recorded (into {video_folder}): moviepy is not installed; "
        f"the run goes on without them ({VIDEO_INSTALL} records them)"
    )


def _stderr_line(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def skip_recording(warn: Callable[[str], None] | None = None) -> Callable[[], None]:
    """Without moviepy, replace ``gymnasium.wrappers.RecordVideo`` by a pass-through that
    warns once (through ``warn``, default: a line on stderr); returns the function that puts
    the original back. With moviepy, changes nothing."""
    if video_available():
        return lambda: None
    say = warn or _stderr_line
    warned: list[str] = []

    class VideoNotRecorded(gymnasium.Wrapper):  # type: ignore[type-arg]
        """``RecordVideo``'s stand-in: the env unchanged, one warning per run."""

        def __init__(self, env: Any, video_folder: Any = "videos", *args: Any, **kwargs: Any):
            super().__init__(env)
            self.video_folder = video_folder
            if not warned:
                warned.append(str(video_folder))
                say(not_recorded_message(video_folder))

    wrappers = gymnasium.wrappers
    original = wrappers.RecordVideo
    wrappers.RecordVideo = VideoNotRecorded  # type: ignore[misc,assignment]

    def restore() -> None:
        wrappers.RecordVideo = original  # type: ignore[misc]

    return restore


__all__ = ["VIDEO_INSTALL", "not_recorded_message", "skip_recording", "video_available"]
