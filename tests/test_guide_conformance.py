"""`mosaic conformance` on workers written to the platform's guide, at their default level
(``platform``): the guide's package fails only for the guide's own defects, each with its fix;
the same package with the runtime and the command line of docs/guides/upstream-workers.md is
conformant.

Needs the conformance levels (``check_worker(level=...)``); skipped where they are absent."""

from __future__ import annotations

import inspect
import re
import shutil
from pathlib import Path

import pytest
from guide_install import (  # noqa: F401 - fixtures
    GUIDE_PACKAGE,
    guide_site,
    installed,
    on_path,
    pip_install,
)

from mosaic_sdk.conformance import check_worker
from mosaic_sdk.plugins.gym_gui_stand_in import uninstall_gym_gui_stand_in

if "level" not in inspect.signature(check_worker).parameters:
    pytest.skip("conformance levels are not in this tree", allow_module_level=True)

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "upstream-workers.md"


@pytest.mark.usefixtures("installed")
def test_the_guide_package_fails_only_for_the_guides_own_defects() -> None:
    results = check_worker("myworker", on_fail=None)
    assert {r.level for r in results} == {"platform"}  # its style's level
    failed = {r.name: r for r in results if not r.ok}
    assert set(failed) == {
        "telemetry.valid_jsonl",
        "stop.run_cancelled",
        "cli.dispatcher_launch",
    }, failed
    assert "event_type" in failed["telemetry.valid_jsonl"].reason
    assert "--worker-id" in failed["cli.dispatcher_launch"].reason  # argparse refuses it
    assert '"type": "step"' in failed["telemetry.valid_jsonl"].hint
    assert "run_cancelled" in failed["stop.run_cancelled"].hint


def test_the_guide_package_with_the_fixed_runtime_is_conformant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uninstall_gym_gui_stand_in()
    source = tmp_path / "src"
    shutil.copytree(GUIDE_PACKAGE, source)
    text = PAGE.read_text(encoding="utf-8")
    [runtime] = re.findall(r"<!-- snippet: fixed-runtime -->\n```python\n(.*?)```", text, re.S)
    (source / "my_worker" / "runtime.py").write_text(runtime)
    [cli] = re.findall(r"<!-- snippet: fixed-cli -->\n```python\n(.*?)```", text, re.S)
    (source / "my_worker" / "cli.py").write_text(cli)
    site = tmp_path / "site"
    pip_install(source, site)
    on_path(site, monkeypatch)
    results = check_worker("myworker", on_fail=None)
    assert [(r.name, r.reason) for r in results if not r.ok] == []
    assert {r.name for r in results if r.verdict == "passed"} >= {
        "telemetry.valid_jsonl",
        "stop.run_cancelled",
        "telemetry.streams_live",
    }
