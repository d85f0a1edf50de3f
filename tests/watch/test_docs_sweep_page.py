"""The sweep page's blocks of docs/guides/watch.md run as written: the spec (``sweep.toml``) is
swept by the documented ``mosaic sweep`` line, and the documented ``mosaic watch`` line then
serves that sweep, its trials and its importance (the ``pip install`` line is what
scripts/test already did)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.docs_snippets.blocks import blocks
from tests.watch.processes import stop

PAGE = "docs/guides/watch.md"


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def test_the_documented_sweep_is_served_on_the_sweep_page(tmp_path: Path) -> None:
    pytest.importorskip("optuna", reason="the spec's sampler is Optuna's (the search extra)")
    found = blocks(PAGE)
    [spec] = [b for b in found if b.marker == "sweep-page-spec"]
    [block] = [b for b in found if b.reason == "tests/watch/test_docs_sweep_page.py"]
    (tmp_path / "sweep.toml").write_text(spec.code, encoding="utf-8")
    lines = [line.split("#", 1)[0].strip() for line in block.code.splitlines()]
    assert lines[0].startswith("pip install -e '.[watch,search]'")
    [sweep_line] = [line for line in lines if line.startswith("mosaic sweep ")]
    [watch_line] = [line for line in lines if line.startswith("mosaic watch ")]
    swept = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *shlex.split(sweep_line)[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert swept.returncode == 0, swept.stdout + swept.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", *shlex.split(watch_line)[1:], "--port", "0"],
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
        base = url.split("/?token=")[0]
        assert base, "mosaic watch printed no URL"
        [sweep] = get(base + "/api/sweeps")["sweeps"]
        assert sweep["worker"] == "example" and sweep["trials"] == sweep["completed"] == 4
        detail = get(f"{base}/api/sweeps/{sweep['sweep_id']}")
        assert [t["status"] for t in detail["trials"]] == ["completed"] * 4
        assert [p["name"] for p in detail["params"]] == ["gamma", "learning_rate"]
        importance = get(f"{base}/api/sweeps/{sweep['sweep_id']}/importance")
        assert importance["finished_sets"] == 4
        assert set(importance["importances"][0]) == {"gamma", "learning_rate"}
        with urllib.request.urlopen(f"{base}/sweeps/{sweep['sweep_id']}", timeout=30) as page:
            assert b"/static/sweep.js" in page.read()
    finally:
        stop(proc)
