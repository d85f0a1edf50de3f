"""The reference page lists every check, and both doc pages exist (a check without docs fails);
the guide's level table matches the registry, and every snippet of the guide runs."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from docs_snippets.blocks import blocks
from docs_snippets.transcript import compare, steps

from mosaic_sdk.cli import conformance as cli_conformance
from mosaic_sdk.conformance import all_checks, pytest_plugin
from mosaic_sdk.conformance.config_source import check_table, tomllib

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_reference_lists_every_check_with_its_hint() -> None:
    text = (DOCS / "reference" / "conformance.md").read_text(encoding="utf-8")
    for check in all_checks():
        assert f"`{check.name}`" in text, f"{check.name} is missing from the reference"
        assert check.hint in text, f"the hint of {check.name} in the reference is stale"


def test_guide_shows_every_front_door() -> None:
    text = (DOCS / "guides" / "conformance.md").read_text(encoding="utf-8")
    for door in (
        "mosaic conformance",
        "--pyargs mosaic_sdk.conformance",
        "parametrize_with_checks",
        "check_worker",
        "mosaic_worker_conformance_config",
        "--expect-fail",
    ):
        assert door in text


# --- levels, the config without the SDK, and every snippet of the guide -------------------

GUIDE = DOCS / "guides" / "conformance.md"
REFERENCE = DOCS / "reference" / "conformance.md"


def levels_table() -> str:
    """The guide's per-check level table, as the registry says."""
    rows = ["| check | platform | sdk |", "|---|---|---|"]
    for c in all_checks():
        if "platform" in c.levels:
            platform = "required, platform rule" if c.takes_level else "required"
        else:
            platform = "advisory"
        rows.append(f"| `{c.name}` | {platform} | required |")
    return "\n".join(rows)


def platform_hints_table() -> str:
    """The reference's table of the hints the platform rules give."""
    rows = ["| check | platform rule's hint |", "|---|---|"]
    for c in all_checks():
        if "platform" in c.levels and c.hint_for("platform") != c.hint_for("sdk"):
            rows.append(f"| `{c.name}` | {c.hint_for('platform')} |")
    return "\n".join(rows)


def between(text: str, marker: str) -> str:
    start, end = f"<!-- {marker}:start -->\n", f"\n<!-- {marker}:end -->"
    assert start in text and end in text, f"the {marker} markers are missing"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_guide_levels_table_matches_the_registry() -> None:
    expected = levels_table()
    assert between(GUIDE.read_text(encoding="utf-8"), "levels-table") == expected, (
        "regenerate the table in docs/guides/conformance.md:\n" + expected
    )


def test_reference_has_every_level_hint() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    expected = platform_hints_table()
    assert between(text, "platform-hints") == expected, (
        "regenerate the table in docs/reference/conformance.md:\n" + expected
    )
    for check in all_checks():
        for level in check.levels:
            assert check.hint_for(level) in text, f"{check.name}: {level} hint not documented"


def test_guide_shows_levels_and_the_config_without_the_sdk() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for needle in (
        "--level sdk",
        "--mosaic-level platform",
        'level="sdk"',
        'level="platform"',
        "advisory",
        "[tool.mosaic.conformance]",
        '[project.entry-points."mosaic.conformance"]',
        "direct_url.json",
    ):
        assert needle in text, needle


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)


def commands(block: str) -> list[list[str]]:
    """The ``$ ...`` command lines of a console block (continuations joined), split."""
    joined = block.replace("\\\n", " ")
    return [shlex.split(line[2:]) for line in joined.splitlines() if line.startswith("$ ")]


def plugin_options() -> dict[str, dict]:
    recorded: dict[str, dict] = {}

    class Group:
        def addoption(self, name: str, **kwargs) -> None:
            recorded[name] = kwargs

    class Parser:
        def getgroup(self, *args) -> Group:
            return Group()

    pytest_plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    return recorded


def test_every_snippet_of_the_guide_runs() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    python = fenced(text, "python")
    assert len(python) >= 6
    namespace: dict = {"__name__": "guide_snippet"}  # in order, as a reader runs them
    for block in python:
        exec(compile(block, str(GUIDE), "exec"), namespace)
    tables = [tomllib.loads(block) for block in fenced(text, "toml")]
    conformance = [t["tool"]["mosaic"]["conformance"] for t in tables if "tool" in t]
    assert conformance and all(check_table(c, "guide") == c for c in conformance)
    entry_points = [t["project"]["entry-points"] for t in tables if "project" in t]
    assert any("mosaic.conformance" in e for e in entry_points)
    # the entry point's dict says what the table says; the hook returns a config
    assert namespace["CONFORMANCE_CONFIG"] == conformance[0]
    assert isinstance(namespace["mosaic_worker_conformance_config"](), dict)
    parser = argparse.ArgumentParser(prog="mosaic")
    cli_conformance.register(parser.add_subparsers())
    options = plugin_options()
    seen = set()
    for block in fenced(text, "console"):
        for argv in commands(block):
            seen.add(argv[0])
            if argv[:2] == ["mosaic", "conformance"]:
                parser.parse_args(argv[1:])  # SystemExit on an unknown flag or level
            elif argv[0] == "pytest":
                for i, arg in enumerate(argv):
                    name, _, value = arg.partition("=")
                    if name.startswith("--mosaic-"):
                        assert name in options, f"{name} is not an option of the plugin"
                        choices = options[name].get("choices")
                        given = value or argv[i + 1]
                        assert not choices or given in choices, arg
    assert {"mosaic", "pytest"} <= seen


# --- the transcripts of the guide are what `mosaic conformance` prints --------------------

#: The guide's workers, as fixtures: my-worker (no heartbeats) and my-upstream-worker.
GUIDE_WORKERS = (
    "my-worker=my_worker:plugin,my-upstream-worker=my_upstream_worker:get_worker_metadata"
)


def shown_transcripts() -> list[tuple[str, list[str]]]:
    page = "docs/guides/conformance.md"
    return [
        (command, shown)
        for b in blocks(page)
        if b.language == "console"
        for command, shown in steps(b.code)
        if shown
    ]


@pytest.mark.parametrize(("command", "shown"), shown_transcripts())
def test_guide_transcripts_match_real_output(
    command: str, shown: list[str], use_workers, tmp_path: Path
) -> None:
    use_workers(GUIDE_WORKERS)
    argv = shlex.split(command)
    assert argv[:2] == ["mosaic", "conformance"], command
    done = subprocess.run(
        [sys.executable, "-m", "mosaic_sdk.cli", *argv[1:]],
        env={**os.environ, "MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1", "MOSAIC_HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    problem = compare(command, shown, done.stdout)
    assert problem is None, problem
