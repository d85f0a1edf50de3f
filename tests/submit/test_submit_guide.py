"""docs/guides/platform.md: its `mosaic submit` transcripts are what the command prints against a
server shaped like the MOSAIC trainer daemon (daemon_double.py), run as the page shows them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_snippets.blocks import blocks
from docs_snippets.transcript import compare, steps

pytest.importorskip("grpc")

from tests.submit.daemon_double import DaemonDouble  # noqa: E402

PAGE = "docs/guides/platform.md"
SHOWN_ADDRESS = "127.0.0.1:50055"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonDouble]:
    double = DaemonDouble(tmp_path)
    double.start()
    yield double
    double.stop()


def test_the_guides_transcripts_are_what_mosaic_submit_prints(
    daemon: DaemonDouble, tmp_path: Path
) -> None:
    transcripts = [b for b in blocks(PAGE) if b.language == "console"]
    assert len(transcripts) == 2
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for block in transcripts:
        code = block.code.replace(SHOWN_ADDRESS, daemon.address)
        for command, shown in steps(code):
            done = subprocess.run(
                ["bash", "-c", command + " 2>&1"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
            problem = compare(command, shown, done.stdout)
            assert problem is None, problem
    assert [run.status for run in daemon.runs.values()] == ["TERM", "TERM"]
