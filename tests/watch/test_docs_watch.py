"""The `mosaic watch` blocks of README.md and docs/guides/watch.md run as written: each
``mosaic watch`` line starts the app on its store, which then answers (the ``pip install``
line is what scripts/test already did)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.docs_snippets.blocks import blocks
from tests.watch.processes import stop
from tests.watch.storefill import FilledRun

PAGES = ["README.md", "docs/guides/watch.md"]


def watch_lines(page: str) -> list[str]:
    [block] = [b for b in blocks(page) if b.reason == "tests/watch/test_docs_watch.py"]
    lines = [line.split("#", 1)[0].strip() for line in block.code.splitlines()]
    assert any(line.startswith("pip install -e '.[watch]'") for line in lines)
    found = [line for line in lines if line.startswith("mosaic watch")]
    assert found, f"{page}: the block has no mosaic watch line"
    return found


@pytest.mark.parametrize("page", PAGES)
def test_the_documented_command_serves_its_store(page: str, tmp_path: Path) -> None:
    for line in watch_lines(page):
        args = shlex.split(line)[1:]
        store = Path(args[args.index("--store") + 1])
        FilledRun(tmp_path / store, "DOC-RUN")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mosaic_sdk.cli", *args, "--port", "0"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = ""
            for out in proc.stdout:
                if "open http://127.0.0.1:" in out:
                    url = out.split("open ", 1)[1].strip()
                    break
            assert "/?token=" in url, "mosaic watch printed no URL with its token"
            base = url.split("/?token=")[0]
            with urllib.request.urlopen(base + "/api/runs", timeout=10) as response:
                assert b'"DOC-RUN"' in response.read()
        finally:
            stop(proc)
