"""The worker author's road through the scaffold: licence, imports, refused answers, SDK source."""

from __future__ import annotations

import ast
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mosaic_sdk.scaffold import TEMPLATE_DIR, bake, template_variables

MOSAIC = str(Path(sys.executable).with_name("mosaic"))
COOKIECUTTER = str(Path(sys.executable).with_name("cookiecutter"))

# A phrase of each licence's own text, to know the right one was written.
LICENSE_PHRASES = {
    "MIT": "Permission is hereby granted, free of charge",
    "Apache-2.0": "Apache License\n                           Version 2.0, January 2004",
    "BSD-3-Clause": "Neither the name of the copyright holder",
    "BSD-2-Clause": "BSD 2-Clause License",
    "MPL-2.0": "Mozilla Public License Version 2.0",
    "GPL-3.0-or-later": "GNU GENERAL PUBLIC LICENSE\n                       Version 3",
    "LGPL-3.0-or-later": "GNU LESSER GENERAL PUBLIC LICENSE",
    "ISC": "Permission to use, copy, modify, and/or distribute this software",
}


def test_every_offered_licence_has_a_text() -> None:
    assert set(template_variables()["license"]) == set(LICENSE_PHRASES)


@pytest.mark.parametrize("license_id", sorted(LICENSE_PHRASES))
def test_the_licence_is_written_with_year_and_author(
    license_id: str, tmp_path: Path, cookiecutter_config: Path
) -> None:
    author = 'Zo\u00eb "Q" O\'Brien {{ not jinja }}'
    project = bake(
        tmp_path, {"license": license_id, "author": author}, config_file=cookiecutter_config
    ).project_dir
    text = (project / "LICENSE").read_text(encoding="utf-8")
    year = str(datetime.datetime.now(datetime.timezone.utc).year)
    assert LICENSE_PHRASES[license_id] in text
    first = text.split("\n\n", 2)[:2]
    assert any(year in part and author in part for part in first), text[:300]
    if license_id == "LGPL-3.0-or-later":  # the LGPL supplements the GPL: both texts ship
        assert "GNU GENERAL PUBLIC LICENSE" in (project / "COPYING").read_text(encoding="utf-8")
    else:
        assert not (project / "COPYING").exists()


def test_the_package_modules_import_each_other_relatively(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    answers = {"package_name": "pkg_for_imports"}
    project = bake(tmp_path, answers, config_file=cookiecutter_config).project_dir
    absolute = []
    for path in (project / "pkg_for_imports").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            absolute += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "pkg_for_imports"]
    assert absolute == [], "the scaffold guide promises relative imports"


def test_the_template_dir_holds_no_stray_licence_in_the_project(tmp_path: Path) -> None:
    # Licence texts live outside the project directory (templates/licenses), so they are
    # included by name and never copied whole into a bake.
    assert (TEMPLATE_DIR / "templates" / "licenses").is_dir()
    project_files = {
        p.name for p in (TEMPLATE_DIR / "{{cookiecutter.distribution_name}}").iterdir()
    }
    assert "licenses" not in project_files


def test_plain_cookiecutter_refuses_cleanly(tmp_path: Path, cookiecutter_config: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [COOKIECUTTER, "--no-input", str(TEMPLATE_DIR), "package_name=class", "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "COOKIECUTTER_CONFIG": str(cookiecutter_config)},
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "package_name 'class' is a Python keyword" in output
    assert "Traceback" not in output, output
    assert not out.exists() or list(out.iterdir()) == []


def test_mosaic_new_asks_again_as_soon_as_an_answer_is_refused(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    # worker_name, then a refused package_name, then a good one; defaults for the rest.
    answers = "Grid Walker\nclass\ngrid_pkg\n" + "\n" * 20
    done = subprocess.run(
        [MOSAIC, "new", "-o", str(tmp_path / "out")],
        input=answers,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COOKIECUTTER_CONFIG": str(cookiecutter_config)},
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out
    refused = out.index("package_name 'class' is a Python keyword")
    assert "try again" in out[refused:]
    # refused before the next question was asked, and the question asked again
    assert refused < out.index("Distribution name on the package index")
    assert out.count("Python import package") == 2
    assert (tmp_path / "out" / "grid-pkg" / "grid_pkg" / "plugin.py").is_file()


def test_the_ci_installs_the_sdk_from_the_chosen_source(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    import shlex

    import yaml

    source = "mosaic-worker-sdk @ git+https://example.org/me/mosaic-worker-sdk@v1"
    project = bake(tmp_path, {"sdk_requirement": source}, config_file=cookiecutter_config)
    assert project.sdk_warning() is None
    workflow = yaml.safe_load((project.project_dir / ".github/workflows/ci.yml").read_text())
    steps = workflow["jobs"]["test"]["steps"]
    names = [step.get("name") for step in steps]
    install = steps[names.index("Install the MOSAIC SDK")]["run"]
    assert shlex.split(install) == ["python", "-m", "pip", "install", source]
    assert names.index("Install the MOSAIC SDK") < names.index(
        "Install the worker and its test dependencies"
    )
    assert steps[1]["with"]["python-version"] == "${{ matrix.python-version }}"


def sdk_section_commands(project: Path) -> list[str]:
    """The commands of the first fenced block of the baked README's SDK section."""
    readme = (project / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Where the SDK comes from", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("pip")]


def test_the_readme_leads_with_an_sdk_install_that_works(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    """Baked with the index requirement (an SDK from a checkout or a wheel), the README's first
    command was ``pip install 'mosaic-worker-sdk>=0.1'``, the one its previous sentence said
    fails; it now gives the sources that work and says what to change in CI."""
    index = bake(
        tmp_path / "index",
        {"sdk_requirement": "mosaic-worker-sdk>=0.1"},
        config_file=cookiecutter_config,
    )
    commands = sdk_section_commands(index.project_dir)
    assert "pip install 'mosaic-worker-sdk>=0.1'" not in commands, commands
    assert commands[0] == "pip install -e /path/to/mosaic-worker-sdk"
    assert 'pip install "mosaic-worker-sdk @ git+URL"' in commands
    readme = (index.project_dir / "README.md").read_text(encoding="utf-8")
    assert "runs\n`pip install 'mosaic-worker-sdk>=0.1'`" in readme  # named as CI's line

    source = "mosaic-worker-sdk @ git+https://example.org/me/mosaic-worker-sdk@v1"
    url = bake(tmp_path / "url", {"sdk_requirement": source}, config_file=cookiecutter_config)
    assert sdk_section_commands(url.project_dir) == [f"pip install '{source}'"]


def test_an_index_requirement_gets_a_warning(tmp_path: Path, cookiecutter_config: Path) -> None:
    done = subprocess.run(
        [
            MOSAIC,
            "new",
            "--no-input",
            "-o",
            str(tmp_path),
            "sdk_requirement=mosaic-worker-sdk>=0.1",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "COOKIECUTTER_CONFIG": str(cookiecutter_config)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "mosaic-worker-sdk is not on the package index yet" in done.stderr


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("numpy>=1", "names 'numpy', not mosaic-worker-sdk"),
        ("not a requirement", "is not a pip requirement"),
    ],
)
def test_a_bad_sdk_requirement_is_refused(
    value: str, message: str, tmp_path: Path, cookiecutter_config: Path
) -> None:
    done = subprocess.run(
        [MOSAIC, "new", "--no-input", "-o", str(tmp_path), f"sdk_requirement={value}"],
        capture_output=True,
        text=True,
        env={**os.environ, "COOKIECUTTER_CONFIG": str(cookiecutter_config)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and message in done.stderr
    assert list(tmp_path.iterdir()) == [cookiecutter_config]


def test_the_default_source_is_how_the_sdk_was_installed() -> None:
    from mosaic_sdk.scaffold.sdk_source import requirement_from_direct_url

    vcs = {
        "url": "https://github.com/me/mosaic-worker-sdk",
        "vcs_info": {"vcs": "git", "commit_id": "abc123", "requested_revision": "main"},
    }
    assert requirement_from_direct_url(json.dumps(vcs)) == (
        "mosaic-worker-sdk @ git+https://github.com/me/mosaic-worker-sdk@abc123"
    )
    archive = {"url": "https://host/sdk-0.1.0.tar.gz", "archive_info": {}}
    assert requirement_from_direct_url(json.dumps(archive)) == (
        "mosaic-worker-sdk @ https://host/sdk-0.1.0.tar.gz"
    )
    local = {"url": "file:///src/sdk", "dir_info": {"editable": True}}
    assert requirement_from_direct_url(json.dumps(local)) is None
    assert requirement_from_direct_url("not json") is None


@pytest.mark.parametrize(("how", "reason"), [("stop", "stop command"), ("sigterm", "SIGTERM")])
def test_a_baked_worker_says_why_it_was_cancelled(
    how: str, reason: str, tmp_path: Path, cookiecutter_config: Path
) -> None:
    """A baked worker stopped by the control protocol's ``stop`` reported run_cancelled with
    reason "SIGTERM/SIGINT received"; it now reports ``ctx.stop_reason``, as worker_main does."""
    import signal

    from mosaic_sdk.control.session import Session

    baked = bake(tmp_path, {"include_fastlane": False}, config_file=cookiecutter_config)
    config = tmp_path / "config.json"
    slow = {"run_id": "stop-reason", "episodes": 50, "step_delay_ms": 10.0, "seed": 1}
    config.write_text(json.dumps(slow), encoding="utf-8")
    argv = [sys.executable, "-m", "mosaic_worker_my_agent", "--config", str(config)]
    env = {**os.environ, "MOSAIC_RUN_DIR": str(tmp_path)}
    session = Session.launch(argv, env=env, cwd=str(baked.project_dir), timeout=60)
    try:
        session.wait_for(lambda line: line.get("type") == "step", timeout=60)
        if how == "stop":
            assert session.stop().stopping
        else:
            assert session.process is not None
            session.process.send_signal(signal.SIGTERM)
        assert session.wait_exit(30) == 143
        (ended,) = [x for x in session.lines if x.get("event") == "run_cancelled"]
        assert ended["payload"]["reason"] == reason
    finally:
        session.kill()


def test_a_compiled_template_bakes_a_project_without_bytecode(
    tmp_path: Path, cookiecutter_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip compiles the template's .py files when it installs the SDK (not editable), and
    cookiecutter copied those __pycache__ directories, compiled from the unrendered template,
    into every baked project."""
    import compileall
    import shutil

    import mosaic_sdk.scaffold as scaffold

    installed = tmp_path / "site-packages-template"
    shutil.copytree(TEMPLATE_DIR, installed, ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(installed, quiet=2)  # what pip does at install; Jinja files fail
    assert list(installed.rglob("*.pyc")), "the copy must hold bytecode, as an installed SDK"
    monkeypatch.setattr(scaffold, "TEMPLATE_DIR", installed)
    project = bake(tmp_path / "out", {}, config_file=cookiecutter_config).project_dir
    assert (project / "mosaic_worker_my_agent" / "cli.py").is_file()
    leftovers = [
        str(p.relative_to(project))
        for p in project.rglob("*")
        if "__pycache__" in str(p) or p.suffix == ".pyc"
    ]
    assert leftovers == []
