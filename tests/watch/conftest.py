"""Fixtures of mosaic watch's tests: the app over a store in tmp_path, and its test client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="mosaic watch needs the watch extra (scripts/test has it)")

from starlette.testclient import TestClient  # noqa: E402

from mosaic_sdk.watch.app import create_app  # noqa: E402

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


@pytest.fixture
def client(store: Path) -> Iterator[TestClient]:
    """A client of the app bound to loopback (the default)."""
    with TestClient(create_app(store, token=TOKEN), base_url="http://127.0.0.1:8766") as c:
        yield c


#: Starlette's test client sends Host: testserver on WebSockets whatever its base_url.
LOOPBACK_HOST = {"host": "127.0.0.1:8766"}
