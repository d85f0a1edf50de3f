"""The template's ``plugin.py`` and ``cli.py`` stay in step with the example worker's.

They differ where a baked worker must (its names, texts and answers) and must agree where the
SDK's contract is concerned: the hooks a worker implements and their parameters, how the
launch command starts the worker, what the CLI hands to ``worker_main``, and how the env the
suite checks is made. A change to one that is not made to the other fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mosaic_sdk.scaffold import bake

EXAMPLE = Path(__file__).resolve().parents[2] / "plugins" / "example" / "mosaic_worker_example"


@pytest.fixture(scope="module")
def baked_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("in-step")
    config = root / "cookiecutter-config.yaml"
    config.write_text(f'replay_dir: "{root / "replay"}"\n', encoding="utf-8")
    project = bake(root / "out", {"worker_name": "In Step"}, config_file=config).project_dir
    return project / "mosaic_worker_in_step"


def functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def hooks(path: Path) -> dict[str, list[str]]:
    """Each ``@hookimpl`` function: its parameter names."""
    found = {}
    for name, node in functions(path).items():
        decorators = [ast.unparse(d) for d in node.decorator_list]
        if any(d.startswith("hookimpl") for d in decorators):
            found[name] = [a.arg for a in node.args.args + node.args.kwonlyargs]
    return found


def calls(node: ast.AST, callee: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == callee
    ]


def test_the_same_hooks_with_the_same_parameters(baked_package: Path) -> None:
    assert hooks(baked_package / "plugin.py") == hooks(EXAMPLE / "plugin.py")


def test_the_launch_command_starts_the_package_the_same_way(baked_package: Path) -> None:
    def argv(path: Path, package: str) -> str:
        (call,) = calls(functions(path)["mosaic_worker_launch_command"], "LaunchCommand")
        return ast.unparse(call).replace(repr(package), "PACKAGE")

    assert argv(baked_package / "plugin.py", "mosaic_worker_in_step") == argv(
        EXAMPLE / "plugin.py", "mosaic_worker_example"
    )


def test_the_conformance_config_has_the_same_keys(baked_package: Path) -> None:
    def keys(path: Path) -> list[str]:
        # the keys of every dict literal the hook builds its answer from (the template builds
        # a base dict, then adds the step delay it sizes from a measured run)
        node = functions(path)["mosaic_worker_conformance_config"]
        (ret,) = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
        assert isinstance(ret.value, ast.Dict)
        dicts = [n for n in ast.walk(node) if isinstance(n, ast.Dict)]
        return sorted({ast.literal_eval(k) for d in dicts for k in d.keys if k is not None})

    assert keys(baked_package / "plugin.py") == keys(EXAMPLE / "plugin.py")


def test_the_env_for_the_suite_renders_frames_in_both(baked_package: Path) -> None:
    def make(path: Path) -> list[str]:
        node = functions(path)["mosaic_worker_make_env"]
        return [kw.arg or "" for call in calls(node, "make") for kw in call.keywords]

    assert make(baked_package / "plugin.py") == make(EXAMPLE / "plugin.py") == ["render_mode"]


def test_the_cli_hands_worker_main_the_same_things(baked_package: Path) -> None:
    def shape(path: Path) -> tuple[list[str], list[str]]:
        defs = functions(path)
        (call,) = calls(defs["main"], "worker_main")
        return sorted(defs), [kw.arg or "" for kw in call.keywords]

    assert shape(baked_package / "cli.py") == shape(EXAMPLE / "cli.py")
