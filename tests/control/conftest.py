"""Fixtures for the control-protocol tests: example-worker sessions that leave nothing behind."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.control.session import Session
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink


@pytest.fixture
def example_session(tmp_path: Path) -> Iterator[Callable[..., Session]]:
    """``start(config, fastlane=False)``: the example worker under a Session, killed and its
    FastLane segment unlinked at the end of the test whatever happened."""
    made: list[tuple[Session, str]] = []

    def start(config: dict[str, Any] | None = None, *, fastlane: bool = False) -> Session:
        run_id = f"ctl-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        run_dir = tmp_path / run_id
        run_dir.mkdir()
        path = run_dir / "config.json"
        path.write_text(json.dumps({"run_id": run_id, **(config or {})}))
        env = {**os.environ, "MOSAIC_RUN_ID": run_id, "MOSAIC_RUN_DIR": str(run_dir)}
        env["MOSAIC_FASTLANE"] = "1" if fastlane else "0"
        argv = [sys.executable, "-m", "mosaic_worker_example", "--config", str(path)]
        session = Session.launch(argv, env=env, run_id=run_id, run_dir=run_dir, timeout=20.0)
        made.append((session, run_id))
        return session

    try:
        yield start
    finally:
        for session, run_id in made:
            session.kill()
            shm_unlink(segment_name(run_id))
