"""schema/fastlane_layout.json and schema/fastlane.md agree with mosaic_sdk/fastlane/layout.py."""

from __future__ import annotations

import json
from pathlib import Path

from mosaic_sdk.fastlane import layout

SCHEMA = Path(__file__).resolve().parents[2] / "schema"


def test_json_schema_is_the_layout_in_code():
    on_disk = json.loads((SCHEMA / "fastlane_layout.json").read_text())
    assert on_disk == layout.describe()


def test_markdown_lists_every_field_at_its_offset():
    text = (SCHEMA / "fastlane.md").read_text()
    for region in layout.describe()["regions"].values():
        assert f"struct `{region['struct']}`" in text
        for f in region["fields"]:
            assert f"| {f['offset']} | {f['type']} | {f['name']} |" in text, f["name"]


def test_header_is_the_deployed_version_1_header():
    assert layout.HEADER.format == "<4sIIIIIIIIIQQddd" and layout.HEADER.size == 80
    assert layout.VERSION == 1 and layout.MAGIC == b"FLAN"
    assert layout.SLOT_HEADER.format == "<QII"
