"""The layers of ARCHITECTURE.md, checked from the source: a lower floor never imports a higher one.

Floor 1 (pure libraries a worker imports), floor 2 (the plugin framework), floor 3 (tools),
floor 4 (the CLI). Every ``import``/``from ... import`` in a module, at any depth (functions
included), and every ``importlib.import_module("mosaic_sdk...")`` with a literal name, is read
with :mod:`ast`.
"""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

import mosaic_sdk

ROOT = Path(mosaic_sdk.__file__).parent
FLOORS = {
    "contract": 1,
    "telemetry": 1,
    "fastlane": 1,
    "shm": 1,
    "control": 1,
    "worker_cli": 1,
    "run_context": 1,
    "lazy_exports": 1,
    "analytics": 1,
    "extras": 1,
    "home": 1,
    "job_descriptor": 1,
    "json_types": 1,
    "exit_status": 1,
    "instrument": 1,
    "script": 1,
    "hookspecs": 2,
    "plugins": 2,
    "runner": 3,
    "conformance": 3,
    "scaffold": 3,
    "watch": 3,
    "sweeps": 3,
    "plots": 3,
    "submit": 3,
    "cli": 4,
}


def floor_of(dotted: str) -> int | None:
    parts = dotted.split(".")
    if parts[0] != "mosaic_sdk" or len(parts) < 2:
        return None
    return FLOORS.get(parts[1])


def imported_names(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "template" not in p.parts)


def upward_imports(path: Path) -> list[str]:
    rel = path.relative_to(ROOT)
    top = rel.parts[0].removesuffix(".py")
    own = FLOORS.get(top)
    if own is None:
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for lineno, name in imported_names(tree):
        target = floor_of(name)
        if target is not None and target > own:
            bad.append(f"{rel}:{lineno} (floor {own}) imports {name} (floor {target})")
    return bad


def test_every_package_has_a_floor() -> None:
    tops = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in modules()}
    tops -= {"__init__", "__main__", "py.typed"}
    assert tops <= set(FLOORS), f"give these a floor in FLOORS: {sorted(tops - set(FLOORS))}"


def test_no_lower_floor_imports_a_higher_one() -> None:
    bad = [line for path in modules() for line in upward_imports(path)]
    assert bad == []


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    source = "def f():\n    from mosaic_sdk.plugins.wrapping import maybe_wrap_env\n"
    names = [name for _, name in imported_names(ast.parse(source))]
    assert floor_of(names[0]) == 2 and FLOORS["fastlane"] == 1
    call = "import importlib\nimportlib.import_module('mosaic_sdk.runner.storage.store')\n"
    assert ("mosaic_sdk.runner.storage.store") in [n for _, n in imported_names(ast.parse(call))]


def test_the_moved_fastlane_name_fails_with_its_new_import() -> None:
    fastlane = importlib.import_module("mosaic_sdk.fastlane")
    from mosaic_sdk.plugins import maybe_wrap_env

    with pytest.raises(AttributeError, match="from mosaic_sdk.plugins import maybe_wrap_env"):
        fastlane.maybe_wrap_env  # noqa: B018
    assert "maybe_wrap_env" not in fastlane.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import mosaic_sdk as top

        assert top.maybe_wrap_env is maybe_wrap_env


# -- no private name crosses a module boundary ------------------------------------------------

#: Private names another module may still import, as (importing file, imported name): none.
PRIVATE_IMPORTS_ALLOWED: set[tuple[str, str]] = set()


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def module_name(rel: Path) -> str:
    parts = ["mosaic_sdk", *rel.with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(source: str, importer: str) -> list[tuple[int, str]]:
    """``from mosaic_sdk.X import _name`` (and ``mosaic_sdk.X._mod`` paths) in the source of
    module ``importer``, other than its own names and the private modules of its own package
    (a C extension such as ``mosaic_sdk.shm._atomics`` is its package's business)."""
    package = importer if importer.count(".") == 0 else importer.rsplit(".", 1)[0]
    found = []
    for lineno, name in imported_names(ast.parse(source)):
        parts = name.split(".")
        if parts[0] != "mosaic_sdk" or not any(_private(p) for p in parts):
            continue
        first = next(i for i, p in enumerate(parts) if _private(p))
        owner = ".".join(parts[:first])
        if owner in (importer, package) and first == len(parts) - 1:
            if owner == importer or importlib.util.find_spec(name) is not None:
                continue  # its own name, or a private module of its own package
        found.append((lineno, name))
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    bad = []
    for path in modules():
        rel = path.relative_to(ROOT)
        importer = module_name(rel)
        for lineno, name in private_imports(path.read_text(encoding="utf-8"), importer):
            if (rel.as_posix(), name) not in PRIVATE_IMPORTS_ALLOWED:
                bad.append(f"{rel}:{lineno} imports the private {name}")
    assert bad == [], "make these public (with a docstring) or move them"


def test_the_private_import_checker_sees_one() -> None:
    source = "def f():\n    from mosaic_sdk.cli.runs import _open, open_store\n"
    assert private_imports(source, "mosaic_sdk.cli.sweep") == [(2, "mosaic_sdk.cli.runs._open")]
    own = "from mosaic_sdk.shm import _atomics\n"
    assert private_imports(own, "mosaic_sdk.shm.atomics") == []
    assert private_imports(own, "mosaic_sdk.fastlane.ring") == [(1, "mosaic_sdk.shm._atomics")]
