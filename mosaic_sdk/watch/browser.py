"""A headless Chromium (Playwright, the ``test`` extra) to drive the watch pages with, the
same way for the browser tests and ``benchmarks/watch``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Chromium's flags for a machine with a closed network and no GPU (no background fetches).
CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str:
    """The Chromium on PATH, else Debian's ``/usr/bin/chromium`` (which may not exist)."""
    return shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def headless_chromium(executable: str | None = None) -> Iterator[Any]:
    """A Playwright ``Browser``: headless Chromium (``executable``, else
    :func:`chromium_path`) with :data:`CHROMIUM_FLAGS`; closed when the block ends."""
    # optional dependency (the test extra): only for a browser check
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable or chromium_path(), headless=True, args=list(CHROMIUM_FLAGS)
        )
        try:
            yield browser
        finally:
            browser.close()
