"""Every fenced block of README.md and docs/**/*.md runs here, or says why not.

The rules (languages, markers) are in ``tests/docs_snippets/blocks.py``. Each page runs in a
fresh interpreter, in a temporary directory, with HOME and MOSAIC_HOME of its own and the
installed ``mosaic`` first on the PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_snippets.blocks import CODE, KINDS, OUTPUT, ROOT, Block, blocks, pages
from docs_snippets.transcript import mismatch, steps

DRIVER = Path(__file__).resolve().parent / "docs_snippets" / "driver.py"
PAGES = pages()
RUN_KINDS = ("run", "fragment", "signature")
# pages with a block this test runs (the others hold only output or blocks tested elsewhere)
RUN_PAGES = [p for p in PAGES if any(b.kind in RUN_KINDS for b in blocks(p))]


def every_block() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def test_every_block_is_code_output_or_says_why_not() -> None:
    problems = []
    for b in every_block():
        if b.language not in CODE | OUTPUT:
            problems.append(
                f"{b.where}: language {b.language!r}; use one of {sorted(CODE | OUTPUT)} "
                "(text for output)"
            )
        elif b.kind in KINDS and not b.reason:
            problems.append(f"{b.where}: `snippet: {b.kind}` needs a reason after it")
        elif b.kind == "tested-by":
            test = ROOT / b.reason.split()[0]
            if not test.is_file():
                problems.append(f"{b.where}: tested-by {test.name}, which does not exist")
            elif Path(b.page).name not in test.read_text(encoding="utf-8"):
                problems.append(f"{b.where}: {test.name} never reads {b.page}")
        elif b.kind == "named":
            if not any(
                f'"{b.marker}"' in t.read_text(encoding="utf-8")
                and Path(b.page).name in t.read_text(encoding="utf-8")
                for t in (ROOT / "tests").rglob("test_*.py")
            ):
                problems.append(f"{b.where}: no test reads {b.page} and runs '{b.marker}'")
    assert not problems, "\n".join(problems)


def shows_output(b: Block) -> bool:
    return b.language == "console" and any(shown for _, shown in steps(b.code))


def test_every_console_transcript_is_compared_with_real_output() -> None:
    """A console block that shows what a command prints is run here and compared (``run``), or
    by a test that compares it with ``docs_snippets.transcript`` (``tested-by``); never shown
    unchecked (``fragment``, ``skip``)."""
    problems = []
    for b in every_block():
        if not shows_output(b) or b.kind == "run":
            continue
        if b.kind == "tested-by":
            test = ROOT / b.reason.split()[0]
            if test.is_file() and "docs_snippets.transcript" in test.read_text(encoding="utf-8"):
                continue
            problems.append(
                f"{b.where}: shows output, but {test.name} does not compare it "
                "(use docs_snippets.transcript)"
            )
        else:
            problems.append(
                f"{b.where}: shows output in a `{b.kind}` console block that nothing runs; run "
                "it, have a test compare it (tested-by), or show the output as `text`"
            )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("shown", "real", "same"),
    [
        (["ping: ok in 0.6 ms"], ["ping: ok in 14.25 ms"], True),
        (["ping: ok in 0.6 ms"], ["ping: ok (paused=False) in 0.6 ms"], False),
        (["schema_version=2 in 1.0 ms"], ["schema_version=3 in 1.0 ms"], False),
        (['{"seq": 1, "ts_unix_ns": 1763850000000000000}'], ['{"seq": 1, "ts_unix_ns": 17}'], True),
        (['{"seq": 1, "v": 1}'], ['{"seq": 296, "v": 1}'], True),
        (['{"seq": 1, "v": 1}'], ['{"seq": 1, "v": 2}'], False),
        (['{"seq": 1}'], ['{"sequence": 1}'], False),
        (["writer: pid 4242 (alive)"], ["writer: pid 17 (alive)"], True),
        (["run 01JD3K7Q8ZB5R2N6XJ4WQ0CTRL: ok"], ["run 01KAAAAAAAAAAAAAAAAAAAAAAA: ok"], True),
        (["store /home/me/runs.sqlite"], ["store /tmp/x/y/runs.sqlite"], True),
        (["a", "...", "z"], ["a", "b", "c", "z"], True),
        (["a", "...", "z"], ["a", "z"], True),
        (["a", "z"], ["a", "b", "z"], False),
        (["hint: Run a ..."], ["hint: Run a Heartbeat"], True),
        (["frame:  84x84x3"], ["frame: 84x84x3"], True),
        (["bad_state: already paused"], ["out_of_order: already paused"], False),
    ],
)
def test_transcript_matching_is_loose_only_where_runs_differ(
    shown: list[str], real: list[str], same: bool
) -> None:
    assert (mismatch(shown, real) is None) is same


def snippet_environment(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if "FASTLANE" not in k and not k.startswith(("MOSAIC_", "PYTEST_"))
    }
    (tmp_path / "home").mkdir()
    env["HOME"] = str(tmp_path / "home")
    env["MOSAIC_HOME"] = str(tmp_path / "mosaic-home")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_snippets_run(page: str, tmp_path: Path) -> None:
    runnable = [b for b in blocks(page) if b.kind in RUN_KINDS]
    work = tmp_path / "work"
    work.mkdir()
    listing = tmp_path / "blocks.json"
    listing.write_text(
        json.dumps(
            [
                {
                    "where": b.where,
                    "language": b.language,
                    "kind": b.kind,
                    "reason": b.reason,
                    "code": b.code,
                }
                for b in runnable
            ]
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(listing)],
        cwd=work,
        env=snippet_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
