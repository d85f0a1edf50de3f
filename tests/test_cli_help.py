"""What ``mosaic ... --help`` prints is for people: plain text, never the reST markup of a
docstring (``` ``mosaic play`` ```, ``:class:`...```), for every command and sub-command."""

from __future__ import annotations

import argparse
import re

from mosaic_sdk.cli import build_parser

MARKUP = re.compile(r"``|:(?:class|func|meth|mod|attr|data|exc|obj):`")


def parsers(parser: argparse.ArgumentParser, path: str = "mosaic"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from parsers(child, f"{path} {name}")


def test_no_help_text_shows_docstring_markup() -> None:
    found = list(parsers(build_parser()))
    assert len(found) > 15, [p for p, _ in found]  # every command and its sub-commands
    leaks = {
        path: MARKUP.findall(parser.format_help())
        for path, parser in found
        if MARKUP.search(parser.format_help())
    }
    assert leaks == {}, leaks


def test_play_says_what_it_does_and_its_commands() -> None:
    (play,) = [p for path, p in parsers(build_parser()) if path == "mosaic play"]
    text = " ".join(play.format_help().split())
    assert "Step a worker by hand" in text
    assert "reset [SEED] (r)" in text and "quit (q)" in text
