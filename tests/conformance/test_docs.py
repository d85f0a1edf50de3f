"""The reference page lists every check, and both doc pages exist (a check without docs fails)."""

from __future__ import annotations

from pathlib import Path

from mosaic_sdk.conformance import all_checks

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_reference_lists_every_check_with_its_hint() -> None:
    text = (DOCS / "reference" / "conformance.md").read_text(encoding="utf-8")
    for check in all_checks():
        assert f"`{check.name}`" in text, f"{check.name} is missing from the reference"
        assert check.hint in text, f"the hint of {check.name} in the reference is stale"


def test_guide_shows_every_front_door() -> None:
    text = (DOCS / "guides" / "conformance.md").read_text(encoding="utf-8")
    for door in (
        "mosaic conformance",
        "--pyargs mosaic_sdk.conformance",
        "parametrize_with_checks",
        "check_worker",
        "mosaic_worker_conformance_config",
        "--expect-fail",
    ):
        assert door in text
