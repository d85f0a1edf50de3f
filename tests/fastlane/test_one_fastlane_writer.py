"""FastLane's environment variables have one writer: ``apply_fastlane_environment``.

Every module of ``mosaic_sdk`` and ``plugins/`` is read with :mod:`ast` (as tests/test_layers.py
reads imports): outside ``mosaic_sdk/fastlane/environment.py``, no string literal that names a
FastLane variable (``MOSAIC_FASTLANE...``, ``GYM_GUI_FASTLANE_...``, ``CLEANRL_FASTLANE_...``)
may be written into an environment: as the key of an item assignment (``env["X"] = ...``), of a
dict literal or ``dict(X=...)``, or as the name given to ``setdefault``/``setenv``/``putenv``/
``update``; nor may a module keep a FastLane prefix (``"MOSAIC_FASTLANE_"``) to build names
with. Reading them (``environ.get("MOSAIC_FASTLANE")``, docstrings) is everyone's business.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mosaic_sdk

SDK = Path(mosaic_sdk.__file__).resolve().parent
REPO = SDK.parent
OWNER = SDK / "fastlane" / "environment.py"
NAME = re.compile(r"\b(MOSAIC|GYM_GUI|CLEANRL)_FASTLANE(_[A-Z_]*)?$")
PREFIX = re.compile(r"^(MOSAIC|GYM_GUI|CLEANRL)_FASTLANE_$")
WRITING_CALLS = {"setdefault", "setenv", "putenv", "update"}


def _names_in(node: ast.AST) -> list[str]:
    """The string constants in ``node`` (at any depth) that name a FastLane variable."""
    return [
        sub.value
        for sub in ast.walk(node)
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and NAME.search(sub.value)
    ]


def fastlane_writes(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` of every place in ``source`` that writes a FastLane variable by its
    literal name, or keeps a FastLane prefix to build names from."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript):
                    found += [(node.lineno, f"[{n!r}] = ...") for n in _names_in(target.slice)]
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None:
                    found += [(node.lineno, f"{{{n!r}: ...}}") for n in _names_in(key)]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in WRITING_CALLS and node.args:
                found += [(node.lineno, f"{called}({n!r}, ...)") for n in _names_in(node.args[0])]
            if called in WRITING_CALLS | {"dict"}:
                found += [
                    (node.lineno, f"{called}({kw.arg}=...)")
                    for kw in node.keywords
                    if kw.arg is not None and NAME.search(kw.arg)
                ]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and PREFIX.match(node.value)
        ):
            found.append((node.lineno, f"the prefix {node.value!r}"))
    return found


def modules(root: Path) -> list[Path]:
    """The Python modules of ``mosaic_sdk`` and ``plugins/`` under ``root`` (a checkout),
    without the scaffold's template (not Python until rendered), tests, and the copies a
    wheel build leaves in a plugin's ``build/`` directory."""
    paths = [*(root / "mosaic_sdk").rglob("*.py"), *(root / "plugins").rglob("*.py")]
    skipped = {"template", "tests", "__pycache__", "build", "dist"}
    return sorted(p for p in paths if not skipped.intersection(p.relative_to(root).parts))


def writers(root: Path) -> list[str]:
    owner = OWNER.relative_to(REPO)
    bad = []
    for path in modules(root):
        rel = path.relative_to(root)
        if rel == owner:
            continue
        for line, what in fastlane_writes(path.read_text(encoding="utf-8")):
            bad.append(f"{rel}:{line} writes {what}")
    return bad


def test_only_apply_fastlane_environment_writes_fastlane_variables() -> None:
    bad = writers(REPO)
    assert bad == [], "write FastLane's variables with apply_fastlane_environment (one writer)"


def test_the_owner_is_scanned_and_writes_them() -> None:
    """The scan reads the owner too: it is the one place that writes (so the rule is not
    vacuous), and the modules of the plugins are among those read."""
    assert fastlane_writes(OWNER.read_text(encoding="utf-8"))
    scanned = {p.relative_to(REPO).parts[0] for p in modules(REPO)}
    assert scanned == {"mosaic_sdk", "plugins"}
    assert REPO / "plugins" / "cleanrl" / "mosaic_worker_cleanrl" / "fastlane_settings.py" in (
        modules(REPO)
    )


def test_the_scan_sees_each_way_of_writing() -> None:
    sources = {
        'env["MOSAIC_FASTLANE"] = "1"\n': 1,
        'os.environ["GYM_GUI_FASTLANE_SLOT"] = str(slot)\n': 1,
        'ENV = {"MOSAIC_FASTLANE_ONLY": "1", "GYM_GUI_FASTLANE_ONLY": "1"}\n': 2,
        'env.setdefault("CLEANRL_FASTLANE_MAX_DIM", "0")\n': 1,
        'monkeypatch.setenv("MOSAIC_FASTLANE_SLOT", "2")\n': 1,
        "env.update(MOSAIC_FASTLANE_ONLY='1')\n": 1,
        "extra = dict(GYM_GUI_FASTLANE_VIDEO_MODE='grid')\n": 1,
        '_PREFIXES = ("MOSAIC_FASTLANE_", "GYM_GUI_FASTLANE_")\n': 2,
        'env["MOSAIC_FASTLANE_" + key] = value\n': 2,  # the key, and the prefix
    }
    for source, count in sources.items():
        assert len(fastlane_writes(source)) == count, source
    reading = (
        'on = environ.get("MOSAIC_FASTLANE") == "1"\n'
        'mode = os.environ["GYM_GUI_FASTLANE_VIDEO_MODE"]\n'
        '"""Set MOSAIC_FASTLANE=1 to switch it on."""\n'
        'VAR = "GYM_GUI_FASTLANE_ONLY"\n'
    )
    assert fastlane_writes(reading) == []
