"""Console transcripts: the ``$ `` commands of a ``console`` block and the output shown under each,
compared with what the command really prints.

A shown line matches a real line when they are equal except for the parts that change from one
run to the next, which match loosely:

- a number with a decimal point (``4.4 ms``, ``0.00s``, ``60.1 frames/s``) matches any number;
- an integer of 7 digits or more (timestamps, ``ts_unix_ns``) matches any integer;
- ``pid 4242`` matches any pid; a run id of 26 capitals and digits (a ULID) matches any ULID;
- an absolute path (``/home/me/...``) matches any absolute path;
- in a JSON line, the number after ``"seq"``, ``"ts"``, ``"ts_unix_ns"``, ``"timestamp"``,
  ``"pid"`` or ``"worker_pid"`` matches any number;
- a run of two or more spaces (column alignment) matches any run of spaces.

Small integers (counts, ``schema_version=3``, exit codes) and every word must be equal. A line
``...`` stands for any number of real lines (none included); a line that ends in `` ...``
matches a real line that starts with the text before it. A command shown with no output under
it is run but its output is not compared. Output is stdout and stderr as one stream, in order
(``2>&1``).
"""

from __future__ import annotations

import re

ELLIPSIS = "..."
# (pattern of a variable part in a shown line, regex that the real part must match)
LOOSE = [
    (re.compile(r'"(?:seq|ts|ts_unix_ns|timestamp|pid|worker_pid)": -?\d+(?:\.\d+)?'), "json"),
    (re.compile(r"\b[0-9A-Z]{26}\b"), r"[0-9A-Z]{26}"),
    (re.compile(r"\bpid \d+"), r"pid \d+"),
    (re.compile(r"(?<![\w./])/[\w.\-/]+"), r"/[^\s'\"]*"),
    (re.compile(r"\d+\.\d+"), r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"),
    (re.compile(r"\b\d{7,}\b"), r"\d+"),
    (re.compile(r"  +"), r" +"),
]
LOOSE_ANY = re.compile("|".join(f"(?:{p.pattern})" for p, _ in LOOSE))


def steps(code: str) -> list[tuple[str, list[str]]]:
    """(command, shown output lines) for each ``$ `` line; ``\\`` continues a command."""
    found: list[tuple[str, list[str]]] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            found.append((command, []))
        elif found:
            found[-1][1].append(line)
        i += 1
    return found


def line_pattern(shown: str) -> re.Pattern[str]:
    """The regex a real line must match (fully) to match the shown line."""
    shown = shown.rstrip()
    prefix = shown.endswith(" " + ELLIPSIS)
    if prefix:
        shown = shown[: -len(ELLIPSIS)].rstrip()
    parts: list[str] = []
    at = 0
    for m in LOOSE_ANY.finditer(shown):
        parts.append(re.escape(shown[at : m.start()]))
        loose = next(r for p, r in LOOSE if p.fullmatch(m.group()))
        if loose == "json":  # the key stays exact, its number is free
            loose = re.escape(m.group().split(":")[0]) + r": -?\d+(?:\.\d+)?"
        parts.append(loose)
        at = m.end()
    parts.append(re.escape(shown[at:]))
    return re.compile("".join(parts) + (".*" if prefix else r"\s*"))


def mismatch(shown: list[str], real: list[str]) -> str | None:
    """None when the real lines match the shown ones, else what differs, for a message."""
    real = [r.rstrip() for r in real]
    while real and not real[-1]:
        real.pop()
    shown = [s.rstrip() for s in shown]
    while shown and not shown[-1]:
        shown.pop()

    def match(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(real)
        if shown[i] == ELLIPSIS:
            return any(match(i + 1, k) for k in range(j, len(real) + 1))
        return (
            j < len(real)
            and bool(line_pattern(shown[i]).fullmatch(real[j]))
            and match(i + 1, j + 1)
        )

    if match(0, 0):
        return None
    return "shown:\n  " + "\n  ".join(shown) + "\nreal:\n  " + "\n  ".join(real)


def compare(command: str, shown: list[str], real: str) -> str | None:
    """None when ``real`` (the command's output) matches; else a message naming the command."""
    if not shown:
        return None
    problem = mismatch(shown, real.splitlines())
    return None if problem is None else f"`{command}` does not print what the page shows\n{problem}"
