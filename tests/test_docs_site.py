"""The docs site builds in strict mode (a broken link, anchor or missing page fails it), offline,
with an API page generated from the docstrings for every public module."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "mkdocs.yml"
PUBLIC_MODULES = (
    "contract",
    "telemetry",
    "fastlane",
    "shm",
    "runner",
    "plugins",
    "hookspecs",
    "conformance",
    "analytics",
    "worker_cli",
    "scaffold",
    "plots",
    "control",
    "instrument",
    "script",
)
EXTERNAL_RESOURCE = re.compile(r"<(?:script|link|img)\b[^>]*(?:src|href)=\"(https?:)?//", re.I)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mkdocs", reason="needs the docs extra: pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(CONFIG, out)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_site_builds_strict_with_every_page(site: Path) -> None:
    for page in (ROOT / "docs").rglob("*.md"):
        relative = page.relative_to(ROOT / "docs").with_suffix("")
        built = site / "index.html" if relative.name == "index" else site / relative / "index.html"
        assert built.is_file(), f"{page.name} was not built"


def test_the_site_loads_nothing_from_the_network(site: Path) -> None:
    for html in site.rglob("*.html"):
        found = EXTERNAL_RESOURCE.search(html.read_text(encoding="utf-8"))
        assert found is None, f"{html.relative_to(site)} loads {found and found.group(0)}"


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_module_has_an_api_page_in_the_nav(module: str, site: Path) -> None:
    page = ROOT / "docs" / "api" / f"{module}.md"
    assert page.is_file(), f"docs/api/{module}.md is missing"
    assert f"api/{module}.md" in CONFIG.read_text(encoding="utf-8"), "not in mkdocs.yml's nav"
    assert f"::: mosaic_sdk.{module}" in page.read_text(encoding="utf-8")
    package = importlib.import_module(f"mosaic_sdk.{module}")
    names = getattr(package, "__all__", None) or [
        n
        for n in vars(package)
        if n.startswith("mosaic_")  # hookspecs: the hooks
    ]
    built = (site / "api" / module / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([\w.]+)"', built))
    # griffe reads the source, so a lazily imported name needs a directive of its own
    missing = [n for n in names if not any(i == n or i.endswith(f".{n}") for i in ids)]
    assert not missing, f"docs/api/{module}.md does not document {missing}"


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    with (docs / "getting-started.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the missing page](guides/no-such-page.md).\n")
    config = CONFIG.read_text(encoding="utf-8").replace("docs_dir: docs", f"docs_dir: {docs}")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stdout + done.stderr


def test_the_readme_shows_the_build_this_test_runs() -> None:
    from docs_snippets.blocks import blocks

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    [shown] = [b for b in blocks("README.md") if b.reason == "tests/test_docs_site.py"]
    assert 'pip install -e ".[docs]"' in shown.code and "mkdocs build --strict" in shown.code
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(r.startswith("mkdocs") for r in extras["optional-dependencies"]["docs"])
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    installed = script.split('pip_install -e ".[', 1)[1].split("]", 1)[0].split(",")
    assert {"test", "docs"} <= set(installed)
