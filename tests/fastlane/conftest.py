"""Fixtures for the FastLane tests: unique run ids whose segments are always removed."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.shm.segment import shm_unlink


@pytest.fixture
def run_id() -> Iterator[str]:
    """A fresh run id; its segment is unlinked after the test whatever happened."""
    rid = f"test-{os.getpid()}-{uuid.uuid4().hex[:10]}"
    try:
        yield rid
    finally:
        shm_unlink(segment_name(rid))


@pytest.fixture
def make_run_id() -> Iterator:
    """A factory of fresh run ids, all unlinked after the test."""
    made: list[str] = []

    def make() -> str:
        rid = f"test-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        made.append(rid)
        return rid

    try:
        yield make
    finally:
        for rid in made:
            shm_unlink(segment_name(rid))
