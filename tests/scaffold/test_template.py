"""Baking the worker template: defaults, hostile inputs, refused inputs, `mosaic new`.

Every bake here is checked statically (it compiles, its pyproject parses and carries the
answers exactly, it is ruff-clean); tests/scaffold/test_end_to_end.py installs and runs them.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from mosaic_sdk.cli import main as mosaic_main
from mosaic_sdk.contract import ENV_FAMILIES, PARADIGMS
from mosaic_sdk.scaffold import (
    TEMPLATE_DIR,
    ScaffoldError,
    bake,
    parse_assignments,
    template_variables,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MOSAIC = str(Path(sys.executable).with_name("mosaic"))  # the console script of this environment

HOSTILE_TEXT = {
    "worker_name": 'L\'Agent "Zo\u00eb" \u4e16\u754c \\ {{ cookiecutter.author }}',
    "author": 'O"Brien """triple""" \'\'\'single\'\'\' back\\slash Jos\u00e9 \U0001f600',
    "description": 'Says "hi" \\n not a newline; {% raw %} ${{ matrix.x }} # [x] \u2013 ok',
}


def baked_files(project: Path) -> dict[str, Path]:
    return {str(p.relative_to(project)): p for p in project.rglob("*") if p.is_file()}


def assert_valid_project(project: Path) -> dict[str, object]:
    """Every .py compiles, pyproject.toml parses; returns the parsed pyproject."""
    files = baked_files(project)
    assert not [f for f in files if "{{" in f or "{%" in f], "unrendered file names"
    for name, path in files.items():
        if name.endswith(".py"):
            compile(path.read_bytes(), str(path), "exec")  # what py_compile checks
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))


def literal_assignments(path: Path) -> dict[str, object]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant):
            found[str(node.arg)] = node.value.value
    return found


def test_choices_are_the_sdk_vocabularies() -> None:
    variables = template_variables()
    assert tuple(variables["paradigm"]) == PARADIGMS
    assert tuple(variables["env_family"]) == ENV_FAMILIES
    assert variables["paradigm"][0] == "sequential" and variables["env_family"][0] == "gymnasium"
    prompts = variables["__prompts__"]
    assert set(prompts) == {k for k in variables if not k.startswith("_")}


def test_templates_worker_is_the_packaged_template() -> None:
    assert (REPO_ROOT / "templates" / "worker").resolve() == TEMPLATE_DIR


def test_defaults_bake_a_complete_worker(tmp_path: Path, cookiecutter_config: Path) -> None:
    result = bake(tmp_path, {}, config_file=cookiecutter_config)
    project = result.project_dir
    assert project == tmp_path / "mosaic-worker-my-agent"
    pyproject = assert_valid_project(project)
    pkg = project / "mosaic_worker_my_agent"
    for module in (
        "__init__",
        "__main__",
        "plugin",
        "config",
        "runtime",
        "telemetry",
        "cli",
        "fastlane",
    ):
        assert (pkg / f"{module}.py").is_file(), module
    for extra in (
        "README.md",
        ".gitignore",
        ".github/workflows/ci.yml",
        "tests/test_worker.py",
        "tests/test_conformance.py",
    ):
        assert (project / extra).is_file(), extra
    project_table = pyproject["project"]
    assert project_table["name"] == "mosaic-worker-my-agent"
    assert "mosaic-worker-sdk>=0.1" in project_table["dependencies"]
    entry_points = project_table["entry-points"]["mosaic.workers"]
    assert entry_points == {"my_agent": "mosaic_worker_my_agent.plugin:get_worker_metadata"}
    assert "parametrize_with_checks" in (project / "tests/test_conformance.py").read_text()
    ci = (project / ".github/workflows/ci.yml").read_text()
    assert "${{ matrix.python-version }}" in ci and "pytest" in ci
    assert result.next_commands() == [
        f"cd {project}",
        "pip install -e '.[test]'",
        "mosaic conformance my_agent",
    ]


def test_a_toy_text_worker_gets_the_toy_text_extra_and_discrete_observations(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    """A FrozenLake worker (issue 26) was baked with gymnasium[classic-control] and "vector"."""
    answers = {"env_family": "toy_text", "env_id": "FrozenLake-v1"}
    project = bake(tmp_path, answers, config_file=cookiecutter_config).project_dir
    pyproject = assert_valid_project(project)
    assert "gymnasium[toy-text]>=1.0,<2" in pyproject["project"]["dependencies"]  # type: ignore[index]
    plugin = (project / "mosaic_worker_my_agent" / "plugin.py").read_text(encoding="utf-8")
    assert 'env_families=("toy_text",)' in plugin
    assert 'observation_spaces=("discrete",)' in plugin


def test_nothing_is_written_to_the_home_directory(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [MOSAIC, "new", "-o", str(tmp_path / "out"), "--no-input"],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert list(home.iterdir()) == []
    assert (tmp_path / "replay").is_dir()  # cookiecutter's replay went to the private config


def test_hostile_text_lands_exactly(tmp_path: Path, cookiecutter_config: Path) -> None:
    answers = {
        **HOSTILE_TEXT,
        "package_name": "jos\u00e9_worker".replace("\u00e9", "e"),
        "distribution_name": "Jose.Worker-2",
        "worker_type": "jose-worker.v2",
        "email": "jos\u00e9@example.org",
        "include_fastlane": "no",
    }
    result = bake(tmp_path, answers, config_file=cookiecutter_config)
    project = result.project_dir
    pyproject = assert_valid_project(project)
    table = pyproject["project"]
    assert table["name"] == "Jose.Worker-2"
    assert table["description"] == HOSTILE_TEXT["description"]
    assert table["authors"] == [{"name": HOSTILE_TEXT["author"], "email": "jos\u00e9@example.org"}]
    assert table["entry-points"]["mosaic.workers"] == {
        "jose-worker.v2": "jose_worker.plugin:get_worker_metadata"
    }
    described = literal_assignments(project / "jose_worker" / "plugin.py")
    assert described["name"] == HOSTILE_TEXT["worker_name"]
    assert described["author"] == HOSTILE_TEXT["author"]
    assert described["description"] == HOSTILE_TEXT["description"]
    assert not (project / "jose_worker" / "fastlane.py").exists()
    assert "fastlane" not in (project / "jose_worker" / "config.py").read_text()
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert readme.splitlines()[0].startswith('# L\'Agent "Zo\u00eb"')


def ruff(project: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_bakes_are_ruff_clean(tmp_path: Path, cookiecutter_config: Path) -> None:
    # Lint with the baked project's own ruff settings, with and without FastLane, with
    # hostile (and long) names; the formatter agrees with the default bake byte for byte.
    for fastlane in ("yes", "no"):
        default = bake(
            tmp_path / fastlane, {"include_fastlane": fastlane}, config_file=cookiecutter_config
        )
        ruff(default.project_dir, "check", ".")
        ruff(default.project_dir, "format", "--check", ".")
        hostile = bake(
            tmp_path / fastlane,
            {"include_fastlane": fastlane, **HOSTILE_TEXT},
            config_file=cookiecutter_config,
        )
        ruff(hostile.project_dir, "check", ".")


@pytest.mark.parametrize(
    ("paradigm", "env_id", "loop", "fastlane"),
    [
        ("turn_based", "pettingzoo.classic.tictactoe_v3", "env.agent_iter()", True),
        ("simultaneous", "pettingzoo.classic.rps_v2", "env.step(chosen)", False),
    ],
)
def test_a_pettingzoo_worker_is_baked_for_its_paradigm(
    tmp_path: Path,
    cookiecutter_config: Path,
    paradigm: str,
    env_id: str,
    loop: str,
    fastlane: bool,
) -> None:
    """env_family=pettingzoo bakes a PettingZoo worker (issue 33 baked a gymnasium one that
    called gymnasium.make on a PettingZoo id): its dependency, its env module, its loop, a
    multi-agent description that declares its step numbering, FastLane (the board) for a
    turn-based game only; ruff-clean."""
    answers = {"env_family": "pettingzoo", "paradigm": paradigm}
    result = bake(tmp_path, answers, config_file=cookiecutter_config)
    project = result.project_dir
    pyproject = assert_valid_project(project)
    deps = pyproject["project"]["dependencies"]  # type: ignore[index]
    assert "pettingzoo>=1.25,<2" in deps and not [d for d in deps if "gymnasium" in d]
    package = project / "mosaic_worker_my_agent"
    assert result.answers["env_id"] == env_id
    assert bool(result.answers["include_fastlane"]) is fastlane
    assert "PettingZoo game" in pyproject["project"]["description"]  # type: ignore[index]
    assert f"DEFAULT_ENV_ID = {env_id!r}".replace("'", '"') in (package / "config.py").read_text()
    runtime = (package / "runtime.py").read_text(encoding="utf-8")
    assert loop in runtime and "gymnasium.make" not in runtime
    described = literal_assignments(package / "plugin.py")
    assert (
        described["step_numbering"] == "per_agent" and described["upstream_library"] == "pettingzoo"
    )
    plugin = (package / "plugin.py").read_text(encoding="utf-8")
    assert f'supported_paradigms=("{paradigm}",)' in plugin and "max_agents=MAX_AGENTS" in plugin
    assert (package / "fastlane.py").exists() is fastlane
    assert ("supports_fastlane=True" in plugin) is fastlane
    # a turn-based worker serves interactive mode: a person plays one agent (mosaic play)
    cli = (package / "cli.py").read_text(encoding="utf-8")
    assert ("interactive=interactive_session" in cli) == (paradigm == "turn_based")
    ruff(project, "check", ".")
    ruff(project, "format", "--check", ".")


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"env_family": "minigrid"}, "cannot bake env_family=minigrid with paradigm=sequential"),
        (
            {"env_family": "pettingzoo"},
            "paradigm=turn_based or simultaneous with env_family=pettingzoo",
        ),
        ({"paradigm": "turn_based"}, "cannot bake env_family=gymnasium with paradigm=turn_based"),
        (
            {"env_family": "pettingzoo", "paradigm": "simultaneous", "include_fastlane": "yes"},
            "include_fastlane=yes cannot be baked with env_family=pettingzoo and "
            "paradigm=simultaneous",
        ),
        (
            {"env_family": "pettingzoo", "paradigm": "turn_based", "env_id": "TicTacToe-v3"},
            "is not the module of a PettingZoo env",
        ),
        ({"package_name": "class"}, "package_name 'class' is a Python keyword"),
        ({"package_name": "my-worker"}, "use lowercase ASCII letters"),
        ({"package_name": "caf\u00e9"}, "is not a valid import name"),
        ({"distribution_name": "mosaic-sdk"}, "taken on PyPI by an unrelated project"),
        ({"distribution_name": "torch"}, "popular package 'torch'"),
        ({"package_name": "mosaic_sdk"}, "package of the MOSAIC SDK"),
        ({"worker_type": "example"}, "worker of the MOSAIC SDK"),
        ({"author": "two\nlines"}, "author (the author) must be a single line"),
        ({"email": "nobody"}, "does not look like an address"),
        ({"env_id": "not an id"}, "not a gymnasium env id"),
        ({"license": "WTFPL"}, "license 'WTFPL' is not one of MIT"),
        ({"include_fastlane": "perhaps"}, "include_fastlane 'perhaps' is not yes/no"),
        ({"worker_name": "!!!"}, "worker_type is empty"),
    ],
)
def test_refused_answers_leave_nothing_behind(
    tmp_path: Path, cookiecutter_config: Path, answers: dict[str, str], message: str
) -> None:
    out = tmp_path / "out"
    with pytest.raises(ScaffoldError, match=None) as info:
        bake(out, answers, config_file=cookiecutter_config)
    assert message in str(info.value)
    assert not out.exists()


def test_a_keyword_worker_name_still_bakes(tmp_path: Path, cookiecutter_config: Path) -> None:
    # "import" becomes part of the derived package name, which is fine.
    result = bake(tmp_path, {"worker_name": "class"}, config_file=cookiecutter_config)
    assert result.answers["package_name"] == "mosaic_worker_class"
    assert result.worker_type == "class"  # an entry-point name may be a keyword
    assert_valid_project(result.project_dir)


def test_an_existing_directory_is_left_alone(tmp_path: Path, cookiecutter_config: Path) -> None:
    existing = tmp_path / "mosaic-worker-my-agent"
    existing.mkdir()
    (existing / "mine.txt").write_text("keep me")
    with pytest.raises(ScaffoldError, match="already exists"):
        bake(tmp_path, {}, config_file=cookiecutter_config)
    assert [p.name for p in existing.iterdir()] == ["mine.txt"]


def test_the_template_hook_refuses_when_cookiecutter_is_used_directly(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    from cookiecutter.exceptions import FailedHookException
    from cookiecutter.main import cookiecutter

    out = tmp_path / "direct"
    with pytest.raises(FailedHookException):
        cookiecutter(
            str(REPO_ROOT / "templates" / "worker"),
            no_input=True,
            extra_context={"package_name": "class", "distribution_name": "numpy"},
            output_dir=str(out),
            config_file=str(cookiecutter_config),
        )
    assert list(out.iterdir()) == []  # the project directory was removed


def test_parse_assignments() -> None:
    assert parse_assignments(["author=a=b", "email="]) == {"author": "a=b", "email": ""}
    with pytest.raises(ScaffoldError, match="did you mean 'license'"):
        parse_assignments(["licence=MIT"])
    with pytest.raises(ScaffoldError, match="not of the form key=value"):
        parse_assignments(["author"])


def test_mosaic_new_prints_the_next_commands(
    tmp_path: Path, cookiecutter_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = mosaic_main(["new", "-o", str(tmp_path), "--no-input", "worker_name=Grid Walker"])
    out = capsys.readouterr().out
    assert code == 0
    project = tmp_path / "mosaic-worker-grid-walker"
    assert out.splitlines()[-3:] == [
        f"  cd {project}",
        "  pip install -e '.[test]'",
        "  mosaic conformance grid_walker",
    ]
    assert json.loads(json.dumps(template_variables()))  # the template is readable JSON


def test_mosaic_new_errors_are_one_line(
    tmp_path: Path, cookiecutter_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = mosaic_main(["new", "-o", str(out), "--no-input", "package_name=def"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("mosaic: error: package_name 'def'")
    assert not out.exists()


def test_mosaic_new_prompts_for_what_is_not_given(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    # Interactive: answer the first prompt (display name), accept every other default.
    done = subprocess.run(
        [MOSAIC, "new", "-o", str(tmp_path), "author=Ada"],
        input="Pixel Pusher\n" + "\n" * 20,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    project = tmp_path / "mosaic-worker-pixel-pusher"
    table = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert table["authors"][0]["name"] == "Ada"
    assert table["entry-points"]["mosaic.workers"] == {
        "pixel_pusher": "mosaic_worker_pixel_pusher.plugin:get_worker_metadata"
    }
