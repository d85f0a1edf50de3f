"""docs/reference/worker-api.md is what scripts/api_reference.py makes of the code: a signature
that changes, a name that goes, a docstring that changes, makes the page stale and this fails.
(tests/test_docs_snippets.py also checks each signature's parameters against the code.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "api_reference.py"
PAGE = "worker-api.md"


def test_the_page_is_generated_from_the_current_code() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_a_changed_signature_makes_the_page_stale(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "reference" / PAGE).read_text(encoding="utf-8")
    assert "TelemetryEmitter.episode(episode_index: int, total_reward: float, steps: int" in text
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import api_reference
    finally:
        sys.path.remove(str(SCRIPT.parent))
    stale = text.replace("total_reward: float, steps: int", "total_reward: float, steps: float")
    assert api_reference.updated(stale) == text  # regenerating restores the code's signature


def test_every_surface_name_is_on_the_page() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import api_reference
    finally:
        sys.path.remove(str(SCRIPT.parent))
    text = (ROOT / "docs" / "reference" / PAGE).read_text(encoding="utf-8")
    for _module, _heading, names in api_reference.SURFACE:
        for name in names:
            assert f"### `{name}`" in text
