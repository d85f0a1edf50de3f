#!/usr/bin/env python3
"""How often a package says ``Any``: uses of ``typing.Any`` per 1,000 lines of Python.

Usage: python scripts/any_density.py [DIR ...]. Without arguments it measures ``mosaic_sdk``,
its sub-packages ``runner``, ``watch``, ``plots`` and ``plugins``, and the repository's
``plugins/`` (the worker distributions). Beside them it prints the anchors issue 23 names,
pluggy and pytest's ``_pytest``, when they are importable (located with importlib, so the
figures are those of the versions installed next to ours).

A use is a name ``Any`` in an expression or annotation (``dict[str, Any]``, ``cast(Any, x)``,
``typing.Any``), including inside string annotations; the import of the name is not a use, nor
a comment or docstring that mentions it. Lines are physical lines of every ``*.py`` file under
the directory (``wc -l``), generated code included; directories called ``generated``, the
scaffold's cookiecutter template (its files are not Python until rendered) and the ``build``
and ``dist`` copies a wheel build leaves beside a plugin's sources are skipped.

The ``words`` column counts every word ``Any`` instead (imports, comments and docstrings too),
as ``grep -rwo Any`` does: that is how issue 23 counted (pluggy 10, ``_pytest`` 8 per 1,000).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP_PARTS = {"generated", "__pycache__", "template", "build", "dist"}
OURS = (
    "mosaic_sdk",
    "mosaic_sdk/runner",
    "mosaic_sdk/watch",
    "mosaic_sdk/plots",
    "mosaic_sdk/plugins",
    "plugins",
)
ANCHORS = ("pluggy", "_pytest")
WORD = re.compile(r"\bAny\b")


def _typing_aliases(tree: ast.Module) -> set[str]:
    """Names the module binds to the ``typing`` module (``import typing as t``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("typing", "typing_extensions"):
                    out.add(alias.asname or alias.name)
    return out


def _uses(node: ast.AST, typing_names: set[str]) -> int:
    count = 0
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "Any":
            count += 1
        elif (
            isinstance(sub, ast.Attribute)
            and sub.attr == "Any"
            and isinstance(sub.value, ast.Name)
            and sub.value.id in typing_names
        ):
            count += 1
    return count


def _string_annotations(tree: ast.Module) -> list[ast.expr]:
    """Annotations written as strings (``x: "dict[str, Any]"``), parsed."""
    found: list[ast.expr] = []

    def add(annotation: ast.expr | None) -> None:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                found.append(ast.parse(annotation.value, mode="eval").body)
            except SyntaxError:
                pass

    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            add(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node.returns)
        elif isinstance(node, ast.AnnAssign):
            add(node.annotation)
    return found


def count_file(path: Path) -> tuple[int, int, int]:
    """(uses of Any, words Any, lines) of one file; a file that does not parse has no uses."""
    source = path.read_text(encoding="utf-8", errors="replace")
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    words = len(WORD.findall(source))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0, words, lines
    typing_names = _typing_aliases(tree)
    uses = _uses(tree, typing_names)
    uses += sum(_uses(expr, typing_names) for expr in _string_annotations(tree))
    return uses, words, lines


def measure(directory: Path) -> tuple[int, int, int, int]:
    """(uses of Any, words Any, lines, files) of every Python file under ``directory``."""
    uses = words = lines = files = 0
    for path in sorted(directory.rglob("*.py")):
        if SKIP_PARTS.intersection(path.relative_to(directory).parts):
            continue
        u, w, n = count_file(path)
        uses, words, lines, files = uses + u, words + w, lines + n, files + 1
    return uses, words, lines, files


def anchor_directory(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", help="package directories (default: ours, see above)")
    args = parser.parse_args(argv)
    targets: list[tuple[str, Path]] = []
    for given in args.dirs or OURS:
        path = Path(given)
        if not path.is_absolute() and not path.exists():
            path = ROOT / given
        if not path.is_dir():
            parser.error(f"{given} is not a directory; give a package directory such as mosaic_sdk")
        targets.append((given, path))
    for name in ANCHORS:
        found = anchor_directory(name)
        if found is None:
            print(f"(anchor {name} is not importable here: pip install pytest)", file=sys.stderr)
        else:
            targets.append((f"{name} (anchor)", found))
    width = max(len(label) for label, _ in targets)
    print(
        f"{'package':<{width}}  {'files':>5}  {'lines':>7}  {'uses':>5}  {'per 1,000':>9}"
        f"  {'words':>5}  {'per 1,000':>9}"
    )
    for label, path in targets:
        uses, words, lines, files = measure(path)
        per = 1000 / lines if lines else 0.0
        print(
            f"{label:<{width}}  {files:>5}  {lines:>7}  {uses:>5}  {uses * per:>9.1f}"
            f"  {words:>5}  {words * per:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
