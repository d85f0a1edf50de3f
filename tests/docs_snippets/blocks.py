"""The fenced blocks of README.md and docs/**/*.md, each with the marker that precedes it.

A block is code by its language: ``python`` runs, ``bash``/``sh`` runs with bash, ``console``
runs its ``$ `` lines and compares what each prints with the output shown under it (loosely
where runs differ: times, ids, pids, paths; rules in ``transcript.py``), ``json``/``toml`` are
parsed, ``sql`` is prepared against the run store's
schema. ``text`` (and the other output languages below) is output, not code. A block without a
language is an error: say ``text`` if it is output.

An HTML comment on the line before a block changes what happens to it:

- ``<!-- snippet: skip REASON -->``: not run (installs, network, long demos); REASON required.
- ``<!-- snippet: fragment REASON -->``: a piece of a program whose names the reader supplies;
  python is compiled and its imports run, bash is syntax-checked (``bash -n``).
- ``<!-- snippet: signature MODULE -->``: one or more ``name(params)`` lines; each must have
  the parameters of ``MODULE.name``, in order.
- ``<!-- snippet: tested-by tests/FILE.py -->``: another test runs it; that file must exist and
  read this page. A console block that shows output must be run here or compared by its test
  with ``docs_snippets.transcript``: output shown under a ``skip`` or ``fragment`` is refused.
- ``<!-- snippet: NAME -->``: a named snippet another test runs by that name (the test file that
  reads this page quotes ``"NAME"``).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"^\s*<!-- snippet: (.*?) -->\s*$")

CODE = {"python", "bash", "sh", "console", "json", "toml", "sql"}
OUTPUT = {"text", "output", "jsonl"}
KINDS = ("skip", "fragment", "signature", "tested-by")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    marker: str | None  # the marker's text after "snippet: ", if any

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """run, skip, fragment, tested-by or named (or output)."""
        if self.language in OUTPUT:
            return "output"
        if self.marker is None:
            return "run"
        first = self.marker.split(None, 1)[0]
        return first if first in KINDS else "named"

    @property
    def reason(self) -> str:
        parts = (self.marker or "").split(None, 1)
        return parts[1].strip() if len(parts) > 1 else ""


def pages() -> list[str]:
    docs = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
    return ["README.md", *docs]


def blocks(page: str) -> list[Block]:
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page}:{i + 1}: the fenced block is never closed")
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(previous)
        code = textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n"
        found.append(Block(page, i + 1, fence.group(2), code, marker and marker.group(1)))
        i = end + 1
    return found
